import { randomUUID } from 'node:crypto';
import type { EventBus } from '..';
import { SAMPLE_PAYLOADS } from '../testing';
import { createTestBus } from '../../test/harness/bus';
import { serviceEnv } from '../../test/harness';
import { runKafkaTool } from '../../infra/kafka';

/** Separators no record holds, so the console consumer's output splits back into records. */
const LINE = '<<fero-record-end>>\n';
const KEY = '<<fero-key>>';
const HEADERS = '<<fero-header>>';

/**
 * What the patched kafkajs encoder and the one-pass produce request write (ADR 0022 and its
 * addenda), read back by another implementation of the protocol — the Java client, Kafka's own —
 * through a real broker, which validates every batch (its CRC-32C included): the unit tests prove
 * the bytes equal kafkajs's own; this one that those bytes are the records the SDK meant.
 */
describe('records written by the patched kafkajs encoder, read by the Java client', () => {
  let bus: EventBus;
  beforeAll(async () => {
    bus = await createTestBus();
  });

  it('holds every event with its headers and its value, at sizes on both sides of the buffer pool', async () => {
    // texts from one byte to past Node's 4 KiB pool threshold, so encoders start empty, grow
    // within the pool and outside it; one publicarLote and concurrent publicar calls
    const sizes = [1, 63, 500, 3000, 4090, 4200, 9999];
    const dto = (n: number) => ({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      correlacao_id: randomUUID(),
      payload: {
        ...SAMPLE_PAYLOADS['demanda.recebida'],
        demanda_id: randomUUID(),
        texto_bruto: `buraco ${'x'.repeat(n)}`.slice(0, n),
      },
    });
    const batch = sizes.map(dto);
    const single = sizes.map(dto);
    const sent = [...(await bus.publicarLote(batch)), ...(await Promise.all(single.map((d) => bus.publicar(d))))];
    const payloads = [...batch, ...single].map((d) => JSON.stringify(d.payload));

    const topic = bus.topics.evento('demanda.recebida');
    const read = await runKafkaTool('org.apache.kafka.tools.consumer.ConsoleConsumer', [
      ...['--bootstrap-server', serviceEnv().brokers.join(','), '--topic', topic, '--from-beginning'],
      ...['--max-messages', String(sent.length), '--timeout-ms', '30000'],
      ...['--property', 'print.key=true', '--property', 'print.headers=true'],
      ...['--property', `key.separator=${KEY}`, '--property', `headers.separator=${HEADERS}`],
      ...['--property', `line.separator=${LINE}`],
    ]);
    expect(read.stderr).toContain(`Processed a total of ${sent.length} messages`);
    const records = read.stdout
      .split(LINE)
      .filter((r) => r.length > 0)
      .map((r) => {
        // the formatter writes headers, key and value, each followed by the key separator but the
        // value (the value's 5-byte wire prefix is binary: only the JSON after it is compared)
        const [headers = '', key, value = ''] = r.split(KEY);
        return {
          headers: Object.fromEntries(
            headers.split(HEADERS).map((h) => [h.slice(0, h.indexOf(':')), h.slice(h.indexOf(':') + 1)]),
          ),
          key,
          json: value.slice(5),
        };
      });
    expect(records).toHaveLength(sent.length);
    for (const [i, e] of sent.entries()) {
      const r = records.find((x) => x.headers.ce_id === e.event_id);
      expect(r).toMatchObject({
        headers: {
          ce_id: e.event_id,
          ce_type: 'demanda.recebida',
          ce_source: 'D-1a',
          ce_specversion: '1.0',
          ce_correlacaoid: [...batch, ...single][i]?.correlacao_id,
        },
        json: payloads[i],
      });
      expect(r?.key?.length).toBeGreaterThan(0);
    }
  }, 120_000);
});
