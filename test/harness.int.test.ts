import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { createTestDatabase } from './harness';

/** The nested run reuses this run's services and must not drop this run's databases. */
function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, FEROMONIOS_TEST_TEMPLATE_DB: 'unused', FEROMONIOS_TEST_STARTED: '' };
  delete env.FEROMONIOS_TEST_RUN_ID;
  return env;
}

describe('the test harness', () => {
  it('fails a test file that leaks a connected client, naming it', () => {
    const root = path.resolve(__dirname, '..');
    const res = spawnSync(
      process.execPath,
      [
        require.resolve('jest/bin/jest'),
        '--selectProjects',
        'int',
        '--testMatch',
        '**/test/fixtures/leaky.fixture.ts',
        '--ci',
      ],
      { cwd: root, encoding: 'utf8', env: childEnv() },
    );
    expect(res.status).not.toBe(0);
    expect(res.stderr).toContain('test file leaked 1 connected client(s): forgotten consumer');
  });

  it('gives each caller its own database cloned from the migrated template', async () => {
    const [a, b] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    expect(a.name).not.toBe(b.name);
    await a.pool.query(
      `INSERT INTO core.event_log (event_id, tipo, origem, payload) VALUES (gen_random_uuid(), 't', 'o', '{}')`,
    );
    const count = async (db: typeof a): Promise<number> =>
      Number((await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM core.event_log')).rows[0]?.n);
    expect(await count(a)).toBe(1);
    expect(await count(b)).toBe(0);
  });
});
