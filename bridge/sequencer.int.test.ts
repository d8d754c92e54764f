import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { silentLogger } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import {
  createTestDatabase,
  randomNamespace,
  registerCleanup,
  serviceEnv,
  waitFor,
  type TestDatabase,
} from '../test/harness';
import { stageEvents } from './event-log-writer';
import { BridgeMetrics } from './metrics';
import { Sequencer, type OpcoesSequencer } from './sequencer';

const staged = (ns: string, offset: number) => {
  const event_id = randomUUID();
  return {
    event_id,
    tipo: 'demanda.normalizada',
    versao_schema: '1.0.0',
    timestamp: new Date().toISOString(),
    origem: 'D-1b',
    correlacao_id: event_id,
    causation_id: null,
    tenant_id: null,
    payload: { ...SAMPLE_PAYLOADS['demanda.normalizada'] },
    kafka_topic: `${ns}.evento.demanda.normalizada`,
    kafka_partition: 0,
    kafka_offset: String(offset),
    publicado_em: new Date().toISOString(),
    ordem_sessao: null,
    ordem_contador: null,
  };
};

/** A started sequencer of namespace `ns` over `pool` (stopped at cleanup), with `o` over the defaults. */
function startSequencer(
  pool: TestDatabase['pool'],
  ns: string,
  o: Pick<OpcoesSequencer, 'admin' | 'vacuumEveryRows' | 'batchSize' | 'pollMs'>,
): { sequencer: Sequencer; metrics: BridgeMetrics } {
  const metrics = new BridgeMetrics();
  const sequencer = new Sequencer({
    pool,
    groupId: `${ns}-bridge`,
    pattern: new RegExp(`^${ns}\\.evento\\.`),
    topicPrefix: `${ns}.evento.`,
    causalHoldMs: 30_000,
    maxIdleMs: 30_000,
    orderGapMs: 2_000,
    roundLimit: 1000,
    onRefused: () => Promise.resolve(),
    logger: silentLogger,
    metrics,
    ...o,
  });
  registerCleanup(() => sequencer.stop());
  sequencer.start();
  return { sequencer, metrics };
}

describe('the sequencer loop', () => {
  it('a round that keeps failing is retried with backoff, counted, reported failing, and recovers by itself', async () => {
    const db = await createTestDatabase();
    const ns = randomNamespace();
    const event = staged(ns, 0);
    const { event_id } = event;
    await stageEvents(db.pool, [event]);
    // Kafka "unavailable" to the sequencer at first: no admin client yet
    const kafkaAdmin: { current?: Admin } = {};
    const { sequencer, metrics } = startSequencer(db.pool, ns, {
      admin: () => kafkaAdmin.current,
      vacuumEveryRows: 0,
      batchSize: 100,
      pollMs: 50,
    });
    await waitFor(() => sequencer.failing, { timeoutMs: 20_000, message: 'the sequencer reports itself failing' });
    expect((await metrics.sequencerFailures.get()).values[0]?.value).toBeGreaterThanOrEqual(3);
    expect(sequencer.leader).toBe(false); // it let go of the lock to take it anew

    const kafka = new Kafka({ clientId: 'sequencer-test', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
    const connected = kafka.admin();
    await connected.connect();
    registerCleanup(() => connected.disconnect());
    kafkaAdmin.current = connected;
    await waitFor(
      async () => (await db.pool.query('SELECT 1 FROM core.event_log WHERE event_id = $1', [event_id])).rowCount === 1,
      { timeoutMs: 20_000, message: 'the staged event written once Kafka answers' },
    );
    expect(sequencer.failing).toBe(false);
    expect(sequencer.leader).toBe(true);
  });
});

describe('staging upkeep', () => {
  it('staging stays the size of what is in flight: the sequencer VACUUMs it every vacuumEveryRows rows moved out', async () => {
    // the servers here run with autovacuum off (as some production ones do): without the
    // sequencer's own VACUUM every event moved out of staging would leave a dead row behind,
    // and each round's scan of staging would grow with the log (the soak's rising latency)
    const db = await createTestDatabase();
    const ns = randomNamespace();
    const kafka = new Kafka({ clientId: 'sequencer-test', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    registerCleanup(() => admin.disconnect());
    const { metrics } = startSequencer(db.pool, ns, {
      admin: () => admin,
      vacuumEveryRows: 400,
      batchSize: 500,
      pollMs: 20,
    });
    const size = async () =>
      Number(
        (await db.pool.query<{ n: string }>("SELECT pg_relation_size('core.event_staging')::text AS n")).rows[0]?.n,
      );
    const logged = async () =>
      Number((await db.pool.query<{ n: string }>('SELECT count(*)::text AS n FROM core.event_log')).rows[0]?.n);
    const sizes: number[] = [];
    // 12 waves of 400 events, each moved out before the next is staged: 4,800 events through
    for (let wave = 0; wave < 12; wave++) {
      await stageEvents(
        db.pool,
        Array.from({ length: 400 }, (_, i) => staged(ns, wave * 400 + i)),
      );
      await waitFor(async () => (await logged()) === (wave + 1) * 400, {
        timeoutMs: 20_000,
        message: `wave ${wave} in the log`,
      });
      sizes.push(await size());
    }
    const vacuums = (await metrics.stagingVacuums.get()).values.find((v) => v.metricName?.endsWith('_count'));
    expect(vacuums?.value).toBeGreaterThanOrEqual(10);
    // dead rows' space is reused: the table no longer grows with the events that went through it
    expect(sizes.at(-1)).toBeLessThanOrEqual(Math.max(...sizes.slice(0, 4)));
    expect((await db.pool.query('SELECT 1 FROM core.event_staging')).rowCount).toBe(0);
  });
});
