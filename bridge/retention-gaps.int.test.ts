import { ConfigResourceTypes } from 'kafkajs';
import type { Registry } from 'prom-client';
import { jsonLogger } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { createTestDatabase, groupLag, metricValue, testKafka, waitFor, type TestDatabase } from '../test/harness';
import { startTestAuditApi } from '../test/harness/audit';
import { logRows, startTestBridge } from '../test/harness/bridge';
import { createTestBus } from '../test/harness/bus';

/**
 * Retention gaps are detected, never silent (issue #21): a consumer whose committed offset fell
 * below a partition's log start (records deleted by retention before it read them) reports the
 * gap — topic, partition, offset range — in a metric and a log line, and for the bridge in
 * `core.lacunas_retencao`, which the audit API lists; then it moves on. The broker enforces
 * retention every 2 s here (infra/kafka.ts); the topic gets a retention of six seconds.
 */
const tipo = 'demanda.categorizada';
const ev = () => ({ tipo, origem: 'D-3', chave_particao: 'one-partition', payload: { ...SAMPLE_PAYLOADS[tipo] } });

/** The records a gap counter counted, over every series (0 when none was exported). */
const counter = async (registry: Registry, name: string): Promise<number> => (await metricValue(registry, name)) ?? 0;

/** `retention.ms` and `segment.ms` of `topic`. */
async function setRetention(topic: string, retentionMs: number, segmentMs: number): Promise<void> {
  const { admin } = testKafka();
  const a = await admin();
  await a.alterConfigs({
    validateOnly: false,
    resources: [
      {
        type: ConfigResourceTypes.TOPIC,
        name: topic,
        configEntries: [
          { name: 'retention.ms', value: String(retentionMs) },
          { name: 'segment.ms', value: String(segmentMs) },
        ],
      },
    ],
  });
}

/**
 * Retention deletes every record of `topic` published so far: a retention of 6 s, then, once
 * they are older, `keepFrom` appends (rolling the segment) and returns its offset; when the log
 * starts there, the retention goes back to an hour — so what comes next (the survivor included,
 * at most a few seconds old) stays until it is read.
 */
async function expireUpTo(topic: string, partition: number, keepFrom: () => Promise<number>): Promise<void> {
  await setRetention(topic, 6_000, 500);
  await new Promise((r) => setTimeout(r, 6_500));
  const keep = await keepFrom();
  const { admin } = testKafka();
  const a = await admin();
  await waitFor(
    async () => Number((await a.fetchTopicOffsets(topic)).find((p) => p.partition === partition)?.low) >= keep,
    { timeoutMs: 30_000, intervalMs: 200, message: `retention deleted ${topic}/${partition} below ${keep}` },
  );
  await setRetention(topic, 3_600_000, 604_800_000);
}

describe('retention gaps', () => {
  let db: TestDatabase;
  let bus: Awaited<ReturnType<typeof createTestBus>>;
  beforeAll(async () => {
    db = await createTestDatabase();
    bus = await createTestBus({
      pool: db.pool,
      topics: { partitions: 1, replicationFactor: -1, retentionMs: 3_600_000 },
    });
  });

  it('the bridge records the gap (row, metric, log), the audit API lists it, and the log goes on after it', async () => {
    const topic = bus.topics.evento(tipo);
    const first = await startTestBridge(bus, db);
    const before = await bus.publicarLote(Array.from({ length: 5 }, ev));
    await waitFor(async () => (await logRows(db)).length === 5, { message: '5 events mirrored' });
    await first.stop();
    // the bridge is down while 20 events are published and retention deletes them
    const lost = await bus.publicarLote(Array.from({ length: 20 }, ev));
    let survivor = '';
    await expireUpTo(topic, 0, async () => {
      const s = await bus.publicar(ev());
      survivor = s.event_id;
      return Number(s.posicao?.offset);
    });
    const logs: string[] = [];
    const second = await startTestBridge(bus, db, { logger: jsonLogger('bridge', 'info', (l) => logs.push(l)) });
    await waitFor(async () => (await logRows(db)).some((r) => r.event_id === survivor), {
      message: 'the bridge moved on past the gap: the next event is in the log',
    });
    const rows = await waitFor(
      async () => {
        const r = await db.pool.query<{
          grupo: string;
          topico: string;
          particao: number;
          desde: string;
          ate: string;
          registros: string;
        }>('SELECT grupo, topico, particao, desde::text, ate::text, registros::text FROM core.lacunas_retencao');
        return r.rows.length > 0 ? r.rows : undefined;
      },
      { message: 'the gap recorded in core.lacunas_retencao' },
    );
    expect(rows).toEqual([
      {
        grupo: `${bus.topics.namespace}-bridge`,
        topico: topic,
        particao: 0,
        desde: String(Number(before.at(-1)!.posicao!.offset) + 1),
        ate: String(Number(lost.at(-1)!.posicao!.offset) + 1),
        registros: '20',
      },
    ]);
    expect(await counter(second.metrics.registry, 'feromonios_bridge_retention_gap_records_total')).toBe(20);
    expect(logs.some((l) => l.includes('retention gap') && l.includes(topic))).toBe(true);
    const logged = (await logRows(db)).map((r) => r.event_id);
    expect(lost.some((e) => logged.includes(e.event_id))).toBe(false); // gone, and said so
    const api = await startTestAuditApi(bus, db);
    const listed = (await (await api.call('/api/events/lacunas')).json()) as {
      lacunas: Array<Record<string, unknown>>;
    };
    expect(listed.lacunas).toMatchObject([{ topico: topic, particao: 0, registros: 20, desde: rows[0]!.desde }]);
    // a restart finds no new gap and records none twice
    await second.stop();
    const third = await startTestBridge(bus, db);
    const after = await bus.publicar(ev());
    await waitFor(async () => (await logRows(db)).some((r) => r.event_id === after.event_id));
    expect((await db.pool.query('SELECT 1 FROM core.lacunas_retencao')).rowCount).toBe(1);
    expect(await counter(third.metrics.registry, 'feromonios_bridge_retention_gap_records_total')).toBe(0);
  }, 120_000);

  it("a colony behind its topic's retention counts and logs the records it skipped, then handles what comes next", async () => {
    const topic = bus.topics.evento(tipo);
    const colonia = 'R-1';
    const handled: string[] = [];
    const colony = await createTestBus({ namespace: bus.topics.namespace });
    colony.inscrever(tipo, colonia, (e) => void handled.push(e.event_id));
    await colony.inscricoesProntas(colonia);
    const seen = await bus.publicarLote(Array.from({ length: 3 }, ev));
    await waitFor(async () => (await groupLag(bus.topics.grupo(colonia), topic)) === 0, {
      message: 'the colony committed',
    });
    expect(seen.every((e) => handled.includes(e.event_id))).toBe(true);
    await colony.encerrar(); // the colony is down while retention deletes what it did not read
    const committed = Number(seen.at(-1)!.posicao!.offset) + 1;
    await bus.publicarLote(Array.from({ length: 10 }, ev));
    let survivor = '';
    let keep = 0;
    await expireUpTo(topic, 0, async () => {
      const s = await bus.publicar(ev());
      survivor = s.event_id;
      keep = Number(s.posicao?.offset);
      return keep;
    });
    const logs: string[] = [];
    const back = await createTestBus({
      namespace: bus.topics.namespace,
      logger: jsonLogger('colony', 'info', (l) => logs.push(l)),
    });
    const after: string[] = [];
    back.inscrever(tipo, colonia, (e) => void after.push(e.event_id));
    await back.inscricoesProntas(colonia);
    const next = await bus.publicar(ev());
    // it resumes at the log start: the survivor (still there) and what comes next, in order
    await waitFor(() => after.includes(next.event_id), { message: 'the colony handles what comes after the gap' });
    expect(after).toEqual([survivor, next.event_id]);
    const deleted = keep - committed;
    await waitFor(
      async () => (await counter(back.metrics.registry, 'feromonios_consumer_retention_gap_records_total')) === deleted,
      { message: `the colony counted the ${deleted} records deleted before it read them` },
    );
    const line = logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'retention gap: records deleted before they were read');
    expect(line).toMatchObject({
      grupo: bus.topics.grupo(colonia),
      topico: topic,
      particao: 0,
      desde: String(committed),
      ate: String(keep),
      registros: deleted,
    });
  }, 120_000);
});
