import { randomUUID } from 'node:crypto';
import { createTestDatabase, serviceEnv, waitFor, type TestDatabase } from '../test/harness';
import { createTestBus } from '../test/harness/bus';
import { startTestBridge } from '../test/harness/bridge';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { ensurePostgres, stopLocalPostgres } from '../infra/postgres';
import { startKafka, stopKafka } from '../infra/kafka';
import { isRetriable, type EventBus } from '../sdk';

// These tests stop the machine's PostgreSQL and the project's Kafka: only with local services.
const local =
  serviceEnv().registryUrl.startsWith('http://127.0.0.1:8081/') && serviceEnv().databaseUrl.includes('127.0.0.1:5432');
const describeLocal = local ? describe : describe.skip;

const lote = (n: number) =>
  Array.from({ length: n }, () => ({
    tipo: 'demanda.categorizada',
    origem: 'D-3',
    payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
  }));

async function logState(db: TestDatabase): Promise<{ n: number; distinct: number }> {
  const { rows } = await db.pool.query<{ n: string; d: string }>(
    'SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM core.event_log',
  );
  return { n: Number(rows[0]?.n), distinct: Number(rows[0]?.d) };
}

describeLocal('the bridge through real outages', () => {
  let bus: EventBus;
  let db: TestDatabase;
  let metrics: Awaited<ReturnType<typeof startTestBridge>>['metrics'];
  let bridge: Awaited<ReturnType<typeof startTestBridge>>['bridge'];

  beforeAll(async () => {
    bus = await createTestBus();
    db = await createTestDatabase();
    await bus.publicarLote(lote(50));
    ({ metrics, bridge } = await startTestBridge(bus, db));
    await waitFor(async () => (await logState(db)).n === 50);
  });

  it('pauses while PostgreSQL is down, retries with backoff, and resumes: nothing lost, nothing duplicated', async () => {
    stopLocalPostgres('fast');
    try {
      const published = await bus.publicarLote(lote(100)); // Kafka still takes them
      expect(published).toHaveLength(100);
      await waitFor(
        async () =>
          /dependency="database"} [1-9]/.test(
            await metrics.registry.getSingleMetricAsString('feromonios_bridge_retries_total'),
          ),
        {
          timeoutMs: 30_000,
          message: 'bridge retrying the database',
        },
      );
      expect(bridge.ready()).toBe(false);
    } finally {
      await ensurePostgres();
    }
    await waitFor(async () => (await logState(db).catch(() => ({ n: 0 }))).n === 150, {
      timeoutMs: 60_000,
      message: '150 rows after PostgreSQL returned',
    });
    expect(await logState(db)).toEqual({ n: 150, distinct: 150 });
    await waitFor(() => bridge.ready(), { message: 'ready again' });
  }, 120_000);

  it('reconnects after the broker is stopped and started again', async () => {
    await stopKafka('single');
    await new Promise((r) => setTimeout(r, 2_000)); // the scenario: the broker stays down 2 s
    await startKafka('single');
    // Right after a restart the partition leaders are still being elected: the SDK says so
    // with a retriable error, and a publisher retries the same events (same event_ids).
    const events = lote(30).map((e) => ({ ...e, event_id: randomUUID() }));
    await waitFor(
      () =>
        bus.publicarLote(events).then(
          () => true,
          (err: unknown) => {
            if (!isRetriable(err)) throw err;
            return false;
          },
        ),
      { timeoutMs: 60_000, message: 'publishing after the broker returned' },
    );
    await waitFor(async () => (await logState(db)).n === 180, {
      timeoutMs: 90_000,
      message: '180 rows after the broker returned',
    });
    expect(await logState(db)).toEqual({ n: 180, distinct: 180 });
  }, 150_000);
});
