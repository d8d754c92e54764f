import { auditDatabasePool } from './config';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { createTestDatabase, registerCleanup, waitFor } from '../test/harness';
import { startTestAuditApi } from '../test/harness/audit';
import { logRows, startTestBridge } from '../test/harness/bridge';
import { createTestBus } from '../test/harness/bus';

/**
 * The audit API's PostgreSQL pool exhausted (issue #21): slow queries hold every connection;
 * requests are answered 503 with Retry-After within the acquire timeout instead of hanging, a
 * query past the statement timeout is cancelled into a 503 too, the bridge — its own pool —
 * keeps mirroring meanwhile, and the API answers again once the connections are free.
 */
it('answers 503 with Retry-After when its pool is exhausted or a statement times out; the bridge keeps mirroring', async () => {
  const db = await createTestDatabase();
  const bus = await createTestBus({ pool: db.pool });
  await startTestBridge(bus, db);
  const pool = auditDatabasePool({
    DATABASE_URL: db.url,
    AUDIT_DB_POOL_SIZE: 2,
    AUDIT_DB_ACQUIRE_TIMEOUT_MS: 300,
    AUDIT_DB_STATEMENT_TIMEOUT_MS: 2_000,
  });
  pool.on('error', () => undefined);
  registerCleanup(() => pool.end());
  // the API reads through a bus on its own pool, as audit-api/main.ts wires it
  const apiBus = await createTestBus({ pool, namespace: bus.topics.namespace, registry: bus.registry });
  const api = await startTestAuditApi(apiBus, { ...db, pool });
  expect((await api.call('/api/events')).status).toBe(200);

  // two slow queries take both connections for 3 s
  const slow = [pool.query('SELECT pg_sleep(1.8)'), pool.query('SELECT pg_sleep(1.8)')];
  const t0 = Date.now();
  const busy = await api.call('/api/events');
  const waited = Date.now() - t0;
  expect(busy.status).toBe(503);
  expect(busy.headers.get('retry-after')).toBe('1');
  expect(await busy.json()).toMatchObject({ status: 503, causa: 'pool' });
  expect(waited).toBeLessThan(1_500); // the acquire timeout, not the slow queries
  // meanwhile the bridge writes the log through its own pool
  const during = await bus.publicar({
    tipo: 'demanda.categorizada',
    origem: 'D-3',
    payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
  });
  await waitFor(async () => (await logRows(db)).some((r) => r.event_id === during.event_id), {
    timeoutMs: 10_000,
    message: 'the bridge mirrored an event while the API pool was exhausted',
  });
  await Promise.all(slow);
  await waitFor(async () => (await api.call(`/api/events/${during.event_id}`)).status === 200, {
    message: 'the API answers again once connections are free',
  });

  // a statement past AUDIT_DB_STATEMENT_TIMEOUT_MS: cancelled by PostgreSQL, a 503, the connection reused
  const lock = await db.pool.connect();
  try {
    await lock.query('BEGIN');
    await lock.query('LOCK TABLE core.lacunas_retencao IN ACCESS EXCLUSIVE MODE');
    const blocked = await api.call('/api/events/lacunas');
    expect(blocked.status).toBe(503);
    expect(blocked.headers.get('retry-after')).toBe('5');
    expect(await blocked.json()).toMatchObject({ causa: 'statement-timeout' });
  } finally {
    await lock.query('ROLLBACK');
    lock.release();
  }
  expect((await api.call('/api/events/lacunas')).status).toBe(200);
  expect(api.logs.some((l) => l.includes('"database unavailable"') && l.includes('"cause":"pool"'))).toBe(true);
}, 60_000);
