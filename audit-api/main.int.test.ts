import { createTestDatabase, serviceEnv, waitFor } from '../test/harness';
import { spawnTs } from '../test/harness/spawn';
import { operatorToken, TEST_JWT_SECRET } from '../test/harness/audit';

const run = (env: Record<string, string>) => spawnTs('audit-api/main.ts', { LOG_LEVEL: 'info', ...env });

describe('audit-api/main.ts as a process', () => {
  it('refuses to start without a JWT secret, naming the variable (exit 2)', async () => {
    const p = run({ DATABASE_URL: serviceEnv().databaseUrl, AUDIT_JWT_SECRET: '' });
    expect(await p.exited).toBe(2);
    expect(p.output()).toContain('AUDIT_JWT_SECRET');
  });

  it('migrates, serves the routes and structured logs, and stops cleanly on SIGTERM', async () => {
    const db = await createTestDatabase();
    const port = 19300 + Math.floor(Math.random() * 150);
    const p = run({ DATABASE_URL: db.url, AUDIT_JWT_SECRET: TEST_JWT_SECRET, AUDIT_API_PORT: String(port) });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/ready`).catch(() => undefined))?.status === 200, {
      timeoutMs: 30_000,
    });
    const res = await fetch(`http://127.0.0.1:${port}/api/events?limite=1`, {
      headers: { authorization: `Bearer ${await operatorToken()}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ total: 0, limite: 1 });
    await waitFor(() => p.output().includes('"msg":"http"'));
    const line = p
      .output()
      .split('\n')
      .find((l) => l.includes('"msg":"http"'))!;
    expect(JSON.parse(line)).toMatchObject({
      component: 'audit-api',
      route: '/api/events',
      status: 200,
      sub: 'operador-42',
    });
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  }, 60_000);
});
