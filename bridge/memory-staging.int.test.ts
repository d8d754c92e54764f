import { randomUUID } from 'node:crypto';
import type { Admin } from 'kafkajs';
import type { EventBus, PublicarEventoDto } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { SchemaCatalog } from '../sdk/wire';
import { createTestDatabase, randomNamespace, testKafka, waitFor, type TestDatabase } from '../test/harness';
import { logRows, startTestBridge } from '../test/harness/bridge';
import { createTestBus } from '../test/harness/bus';
import type { BridgeMetrics } from './metrics';

/**
 * ADR 0029 with the real services: the sequencer's leader holds what it stages in memory, and
 * commits the events lane's offsets only once those events are in `core.event_log` — so a bridge
 * stopped, or a lock lost, with events held loses none of them. An effect whose cause is not
 * published yet is the tool: the sequencer holds it (docs/ordering.md) for as long as the test
 * needs.
 */
const dto = (tipo: string, over: Partial<PublicarEventoDto> = {}): PublicarEventoDto => ({
  tipo,
  origem: SchemaCatalog.load().tipo(tipo)!.publicadores[0]!,
  payload: { ...SAMPLE_PAYLOADS[tipo] },
  ...over,
});

const gauge = async (m: BridgeMetrics['heldInMemory'] | BridgeMetrics['memoryDrops']) =>
  (await m.get()).values.reduce((n, v) => n + v.value, 0);

describe('staging in memory (ADR 0029)', () => {
  let db: TestDatabase;
  let bus: EventBus;
  let admin: Admin;
  const group = () => `${bus.topics.namespace}-bridge`;

  beforeEach(async () => {
    db = await createTestDatabase();
    bus = await createTestBus({ namespace: randomNamespace(), pool: db.pool });
    admin = await testKafka().admin();
  });

  /** Per partition of `topic`: the events lane's committed offset and the high watermark. */
  const positions = async (topic: string) => {
    const [c] = await admin.fetchOffsets({ groupId: group(), topics: [topic] });
    const high = await admin.fetchTopicOffsets(topic);
    return high.map((h) => ({
      partition: h.partition,
      high: Number(h.high),
      committed: Number(c?.partitions.find((p) => p.partition === h.partition)?.offset ?? -1),
    }));
  };

  /** Publishes an effect whose cause is not published yet; resolves once the leader holds it. */
  const heldEffect = async (metrics: BridgeMetrics) => {
    const cause = randomUUID();
    const effect = await bus.publicar(dto('demanda.normalizada', { causation_id: cause, correlacao_id: cause }));
    await waitFor(async () => (await gauge(metrics.heldInMemory)) >= 1, { message: 'the effect held in memory' });
    return { cause, effect: effect.event_id };
  };

  const publishCause = (cause: string) =>
    bus.publicar(dto('demanda.recebida', { event_id: cause, correlacao_id: cause }));

  /** Every id in the log once; the sequence number of each. */
  const logged = async (ids: string[]) =>
    waitFor(
      async () => {
        const rows = await logRows(db);
        const seq = new Map(rows.map((r) => [r.event_id, Number(r.sequence_number)]));
        return ids.every((id) => seq.has(id)) && { seq, rows };
      },
      { timeoutMs: 60_000, message: `${ids.length} events in the log` },
    );

  it('a held event is in neither staging table nor committed offset until it is in the log; then its offset is committed', async () => {
    const { metrics } = await startTestBridge(bus, db, { causalHoldMs: 120_000, memoryStagingRows: 100_000 });
    const { cause, effect } = await heldEffect(metrics);
    const topic = bus.topics.evento('demanda.normalizada');
    const staged = await db.pool.query('SELECT 1 FROM core.event_staging WHERE event_id = $1', [effect]);
    expect(staged.rowCount).toBe(0);
    // its partition's offset is not committed past it: a crash now would have Kafka redeliver it
    expect((await positions(topic)).some((p) => p.high > 0 && p.committed < p.high)).toBe(true);
    await publishCause(cause);
    const { seq, rows } = await logged([cause, effect]);
    expect(seq.get(cause)).toBeLessThan(seq.get(effect) as number);
    expect(rows.filter((r) => r.event_id === effect)).toHaveLength(1);
    await waitFor(async () => (await positions(topic)).every((p) => p.committed === p.high || p.high === 0), {
      message: 'the offsets committed once the events are logged',
    });
    expect(await gauge(metrics.heldInMemory)).toBe(0);
  });

  it('a bridge stopped with events held loses none: the next one stages them again from Kafka', async () => {
    const first = await startTestBridge(bus, db, { causalHoldMs: 120_000, memoryStagingRows: 100_000 });
    const { cause, effect } = await heldEffect(first.metrics);
    await first.stop();
    await startTestBridge(bus, db, { causalHoldMs: 120_000, memoryStagingRows: 100_000 });
    await publishCause(cause);
    const { seq, rows } = await logged([cause, effect]);
    expect(seq.get(cause)).toBeLessThan(seq.get(effect) as number);
    expect(rows.filter((r) => r.event_id === effect)).toHaveLength(1);
  });

  it('the lock lost with events held: they are dropped, the events lane starts again from its committed offsets, and nothing is lost', async () => {
    const { metrics } = await startTestBridge(bus, db, { causalHoldMs: 120_000, memoryStagingRows: 100_000 });
    const { cause, effect } = await heldEffect(metrics);
    // the sequencer's session (it last ran LISTEN) is killed: its lock goes with it
    const killed = await db.pool.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`,
    );
    expect(killed.rowCount).toBe(1);
    await waitFor(async () => (await gauge(metrics.memoryDrops)) === 1, { message: 'the memory dropped' });
    // the new consumer stages the effect again — in memory, or in the table if it fetched before
    // the sequencer took its lock again — and the sequencer holds it for its cause once more
    await waitFor(async () => (await gauge(metrics.causalHeld)) >= 1, {
      timeoutMs: 30_000,
      message: 'the effect staged and held again',
    });
    await publishCause(cause);
    const { seq, rows } = await logged([cause, effect]);
    expect(seq.get(cause)).toBeLessThan(seq.get(effect) as number);
    expect(rows.filter((r) => r.event_id === effect)).toHaveLength(1);
  });

  it('a chunk that does not fit in memory is staged in the table, and the log keeps publish order across both', async () => {
    // room for one chunk of 50: the next ones go to the table while it is held
    await startTestBridge(bus, db, { memoryStagingRows: 60 });
    const sent = [];
    for (let i = 0; i < 4; i++)
      sent.push(...(await bus.publicarLote(Array.from({ length: 50 }, () => dto('demanda.recebida')))));
    sent.push(await bus.publicar(dto('demanda.recebida')));
    const { rows } = await logged(sent.map((e) => e.event_id));
    // one producer session: the log follows its publish order
    expect(rows.map((r) => r.event_id)).toEqual(sent.map((e) => e.event_id));
    expect((await db.pool.query('SELECT 1 FROM core.event_staging')).rowCount).toBe(0);
  });

  it('two instances, one holding in memory and one staging in the table: every event once, in publish order', async () => {
    await startTestBridge(bus, db, { memoryStagingRows: 100_000 });
    await startTestBridge(bus, db, { memoryStagingRows: 100_000 });
    const sent = [];
    for (let i = 0; i < 10; i++)
      sent.push(
        ...(await bus.publicarLote(
          Array.from({ length: 30 }, (_, k) => dto(k % 2 ? 'demanda.recebida' : 'parametros.atualizados')),
        )),
      );
    const { rows } = await logged(sent.map((e) => e.event_id));
    expect(rows.map((r) => r.event_id)).toEqual(sent.map((e) => e.event_id));
  });
});
