import { createTestDatabase, type TestDatabase } from '../../test/harness';
import { rollback, withTransaction } from './transaction';

describe('withTransaction', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await db.pool.query('CREATE TABLE tx_probe (v int)');
  });
  const values = async (): Promise<number[]> =>
    (await db.pool.query<{ v: number }>('SELECT v FROM tx_probe ORDER BY v')).rows.map((r) => r.v);

  it('commits what the body did and returns its value', async () => {
    await db.pool.query('TRUNCATE tx_probe');
    const out = await withTransaction(db.pool, async (c) => {
      await c.query('INSERT INTO tx_probe VALUES (1)');
      return 'ok';
    });
    expect(out).toBe('ok');
    expect(await values()).toEqual([1]);
  });

  it('rolls back and rethrows when the body throws', async () => {
    await db.pool.query('TRUNCATE tx_probe');
    await expect(
      withTransaction(db.pool, async (c) => {
        await c.query('INSERT INTO tx_probe VALUES (2)');
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await values()).toEqual([]);
  });

  it('rolls back without an error when the body returns rollback(value)', async () => {
    await db.pool.query('TRUNCATE tx_probe');
    const out = await withTransaction(db.pool, async (c) => {
      await c.query('INSERT INTO tx_probe VALUES (3)');
      return rollback(false);
    });
    expect(out).toBe(false);
    expect(await values()).toEqual([]);
  });

  it('discards a connection that broke mid-transaction instead of returning it to the pool', async () => {
    let pid = 0;
    await expect(
      withTransaction(db.pool, async (c) => {
        pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        await db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
        await c.query('SELECT 1');
      }),
    ).rejects.toThrow();
    // every connection the pool hands out now is a live one, never the terminated backend
    const pids = await Promise.all(
      Array.from({ length: 3 }, () => db.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')),
    );
    for (const r of pids) expect(r.rows[0]!.pid).not.toBe(pid);
  });
});
