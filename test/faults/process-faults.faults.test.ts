import { randomUUID } from 'node:crypto';
import { ensurePostgres, stopLocalPostgres } from '../../infra/postgres';
import { startRegistry, stopRegistry } from '../../infra/registry';
import { criarTabelaInbox, type EventBus, type PublicarEventoDto } from '../../sdk';
import { SAMPLE_PAYLOADS } from '../../sdk/testing';
import { createTestDatabase, registerCleanup, serviceEnv, waitFor, type TestDatabase } from '../harness';
import { spawnTs } from '../harness/spawn';
import { operatorToken, TEST_JWT_SECRET } from '../harness/audit';
import { spawnBridge, startLogPollers, startTestBridge } from '../harness/bridge';
import { createTestBus } from '../harness/bus';
import { clusterBus, createEffects, effectCounts, logCoverage, report, size, waitForEffects } from './scenario';

const local =
  serviceEnv().registryUrl.startsWith('http://127.0.0.1:8081/') && serviceEnv().databaseUrl.includes('127.0.0.1:5432');
const describeLocal = local ? describe : describe.skip;

const categorizada = (): PublicarEventoDto => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  correlacao_id: randomUUID(),
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});

const countLog = async (db: TestDatabase): Promise<number> =>
  Number((await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM core.event_log')).rows[0]?.n);

describe('processes that really die', () => {
  it('2. kill -9 a bridge mid-batch and restart it: the log complete, no duplicates, pollers never skipped a row', async () => {
    const total = size(3_000, 20_000);
    const bus = await createTestBus(clusterBus);
    const db = await createTestDatabase();
    await bus.publicar(categorizada());
    const small = { BRIDGE_BATCH_SIZE: '50', BRIDGE_FLUSH_INTERVAL_MS: '20', BRIDGE_FAULT_COMMIT_JITTER_MS: '10' };
    let a = spawnBridge(bus, db, small);
    const b = spawnBridge(bus, db, small);
    const pollers = startLogPollers(db, 2);
    const published: string[] = [];
    for (let i = 0; i < total; i += 100) {
      published.push(...(await bus.publicarLote(Array.from({ length: 100 }, categorizada))).map((e) => e.event_id));
      if (i === Math.floor(total / 300) * 100) {
        await waitFor(async () => (await countLog(db)) > 50);
        a.child.kill('SIGKILL');
        await a.exited;
        a = spawnBridge(bus, db, small);
      }
    }
    await waitFor(async () => (await logCoverage(db, published)).inLog === published.length, {
      timeoutMs: 180_000,
      message: 'every published event in the log',
    });
    const { rows } = await db.pool.query<{ s: string }>(
      'SELECT sequence_number::text AS s FROM core.event_log ORDER BY sequence_number',
    );
    await waitFor(() => pollers.lastSeen().every((s) => s === rows.at(-1)?.s), {
      timeoutMs: 30_000,
      message: () => `every reader at the last row (cursors ${pollers.lastSeen().join(', ')})`,
    });
    const seen = await pollers.stop();
    const final = rows.map((r) => r.s);
    const cov = await logCoverage(db, published);
    const skipped = seen.map((s) => final.filter((x) => !new Set(s).has(x)).length);
    report('2 bridge kill -9 mid-batch, restarted', {
      published: published.length,
      acknowledged: published.length,
      inLog: cov.inLog,
      duplicatesInLog: cov.duplicates,
      lost: cov.missing.length,
      notes: `two bridge instances, one killed -9 and restarted; 2 pollers skipped ${skipped.join(' and ')} rows`,
    });
    expect(cov.missing).toEqual([]);
    expect(cov.duplicates).toBe(0);
    for (const s of seen) expect(s).toEqual(final);
    expect(b.child.exitCode).toBeNull();
  }, 600_000);

  // These stop the machine's PostgreSQL and the project's registry: only with local services.
  describeLocal('with local services', () => {
    it('3. restart PostgreSQL under the bridge and the audit API: both recover unattended, nothing lost', async () => {
      const bus = await createTestBus(clusterBus);
      const db = await createTestDatabase();
      const bridge = spawnBridge(bus, db);
      const port = 19200 + Math.floor(Math.random() * 90);
      const api = spawnTs('audit-api/main.ts', {
        DATABASE_URL: db.url,
        AUDIT_JWT_SECRET: TEST_JWT_SECRET,
        AUDIT_API_PORT: String(port),
        FEROMONIOS_TOPIC_NAMESPACE: bus.topics.namespace,
      });
      const ready = async (): Promise<boolean> =>
        (await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined))?.status === 200;
      await waitFor(ready, { timeoutMs: 60_000, message: 'audit API ready' });
      const published: string[] = [];
      published.push(...(await bus.publicarLote(Array.from({ length: 200 }, categorizada))).map((e) => e.event_id));
      await waitFor(async () => (await countLog(db)) >= 200, { timeoutMs: 60_000 });
      stopLocalPostgres('fast');
      published.push(...(await bus.publicarLote(Array.from({ length: 300 }, categorizada))).map((e) => e.event_id));
      // it says so while the database is down
      await waitFor(async () => !(await ready()), {
        timeoutMs: 30_000,
        message: 'audit API not ready without PostgreSQL',
      });
      await ensurePostgres();
      await waitFor(
        async () => (await logCoverage(db, published).catch(() => ({ inLog: 0 }))).inLog === published.length,
        {
          timeoutMs: 120_000,
          message: 'every event in the log after PostgreSQL returned',
        },
      );
      await waitFor(ready, { timeoutMs: 60_000, message: 'audit API ready again' });
      const res = await fetch(`http://127.0.0.1:${port}/api/events?limite=1`, {
        headers: { authorization: `Bearer ${await operatorToken()}` },
      });
      const body = (await res.json()) as { total: number };
      const cov = await logCoverage(db, published);
      report('3 PostgreSQL restart under the bridge and the audit API', {
        published: published.length,
        acknowledged: published.length,
        inLog: cov.inLog,
        duplicatesInLog: cov.duplicates,
        lost: cov.missing.length,
        notes: `audit API answered ${res.status} with total ${body.total} after the restart`,
      });
      expect(res.status).toBe(200);
      expect(body.total).toBe(published.length);
      expect(cov.duplicates).toBe(0);
      expect(bridge.child.exitCode).toBeNull();
      expect(api.child.exitCode).toBeNull();
    }, 300_000);

    it('4. stop the schema registry: warm publishers and the bridge keep going, and recover when it returns', async () => {
      const bus = await createTestBus(clusterBus);
      const db = await createTestDatabase();
      await startTestBridge(bus, db);
      const published: string[] = [];
      published.push(...(await bus.publicarLote(Array.from({ length: 50 }, categorizada))).map((e) => e.event_id));
      await waitFor(async () => (await countLog(db)) >= 50, { timeoutMs: 60_000 });
      await stopRegistry();
      let registryDown = true;
      registerCleanup(async () => {
        if (registryDown) await startRegistry();
      });
      try {
        for (let i = 0; i < 5; i++)
          published.push(...(await bus.publicarLote(Array.from({ length: 40 }, categorizada))).map((e) => e.event_id));
        await waitFor(async () => (await logCoverage(db, published)).inLog === published.length, {
          timeoutMs: 60_000,
          message: 'events published while the registry was down reach the log (cached schema ids)',
        });
      } finally {
        await startRegistry();
        registryDown = false;
      }
      published.push(...(await bus.publicarLote(Array.from({ length: 50 }, categorizada))).map((e) => e.event_id));
      await waitFor(async () => (await logCoverage(db, published)).inLog === published.length, { timeoutMs: 60_000 });
      const cov = await logCoverage(db, published);
      report('4 schema registry stopped and restarted', {
        published: published.length,
        acknowledged: published.length,
        inLog: cov.inLog,
        duplicatesInLog: cov.duplicates,
        lost: cov.missing.length,
        notes: '200 events published and mirrored while the registry was down',
      });
      expect(cov.missing).toEqual([]);
      expect(cov.duplicates).toBe(0);
    }, 300_000);
  });

  it('5. kill -9 one of two colony instances mid-handler: the other handles its events, each once (inbox)', async () => {
    const total = size(1_500, 10_000);
    const bus: EventBus = await createTestBus(clusterBus);
    const colony = await createTestDatabase();
    await criarTabelaInbox(colony.pool, 'f5');
    await createEffects(colony.pool, 'f5');
    await bus.publicar(categorizada());
    const env = {
      COLONY_DATABASE_URL: colony.url,
      COLONY_SCHEMA: 'f5',
      COLONY: 'F-5',
      FEROMONIOS_TOPIC_NAMESPACE: bus.topics.namespace,
    };
    const a = spawnTs('test/faults/colony-process.ts', env);
    const b = spawnTs('test/faults/colony-process.ts', env);
    await waitFor(() => a.output().includes('ready') && b.output().includes('ready'), { timeoutMs: 60_000 });
    const published: string[] = [];
    for (let i = 0; i < total; i += 100)
      published.push(...(await bus.publicarLote(Array.from({ length: 100 }, categorizada))).map((e) => e.event_id));
    await waitFor(async () => (await effectCounts(colony.pool, 'f5')).ids.size >= total / 4, { timeoutMs: 120_000 });
    a.child.kill('SIGKILL');
    await a.exited;
    const eff = await waitForEffects(colony.pool, 'f5', published, { what: 'the surviving instance handled the rest' });
    report('5 colony instance kill -9 mid-handler', {
      published: published.length,
      acknowledged: published.length,
      inLog: 0,
      duplicatesInLog: 0,
      lost: published.filter((id) => !eff.ids.has(id)).length,
      handledOnce: eff.once,
      handledMoreThanOnce: eff.more,
      notes: 'no bridge in this scenario: the colony side only',
    });
    expect(eff.more).toBe(0);
    expect(b.child.exitCode).toBeNull();
  }, 600_000);
});
