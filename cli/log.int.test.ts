import { query } from '../migrations/testing';
import { MONTHS, PER_MONTH, populatedLog, tempDir } from '../test/harness/archive';
import { runFeromonios } from '../test/harness/cli';

/**
 * `feromonios log …` (docs/archive.md, docs/cli.md) as an operator runs it: the months, archive
 * of the old ones with progress, a verification that catches a missing file, restore.
 */
describe('feromonios log', () => {
  it('lists months, archives the old ones, verifies, restores', async () => {
    const db = await populatedLog();
    const dir = await tempDir();
    const env = { DATABASE_URL: db.url, FEROMONIOS_ARCHIVE_URL: dir };
    const json = <T>(r: { code: number; stdout: string; stderr: string }): T => {
      expect({ code: r.code, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, stderr: '' });
      return JSON.parse(r.stdout) as T;
    };

    const months = json<Array<{ mes: string; onde: string }>>(await runFeromonios(['--json', 'log', 'months'], env));
    expect(months.filter((m) => MONTHS.includes(m.mes)).map((m) => m.onde)).toEqual([
      'postgres',
      'postgres',
      'postgres',
    ]);

    // a month nobody created: its rows wait in DEFAULT until `log partitions --month` moves them
    await query(
      db.url,
      `INSERT INTO core.event_log (event_id, tipo, origem, payload, criado_em) VALUES (gen_random_uuid(), 't', 'D-3', '{}', '2026-05-10T00:00:00Z')`,
    );
    const created = json<{ criadas: string[] }>(
      await runFeromonios(['--json', 'log', 'partitions', '--month', '2026-05'], env),
    );
    expect(created).toEqual({ criadas: ['event_log_2026_05'] });
    expect(await query(db.url, 'SELECT count(*)::int AS n FROM core.event_log_2026_05')).toEqual([{ n: 1 }]);
    expect(json(await runFeromonios(['--json', 'log', 'partitions', '--month', '2026-05'], env))).toEqual({
      criadas: [],
    });

    // every month at least 3 months old, with progress on stderr
    const archive = await runFeromonios(['log', 'archive', '--older-than', '3', '--rows-per-file', '50'], env);
    expect(archive.code).toBe(0);
    expect(archive.stderr).toMatch(/2026-07 arquivo event_log\/2026\/07\/part-00001\.parquet \(50 rows\)/);
    expect(archive.stderr).toMatch(/2026-09 particao-removida/);
    expect(archive.stdout).toMatch(/2026-05\s+arquivado\s+1\s+1/);
    expect(archive.stdout).toMatch(/2026-08\s+arquivado\s+90\s+2/);
    const after = json<Array<{ mes: string; onde: string; linhas: number }>>(
      await runFeromonios(['--json', 'log', 'months'], env),
    );
    expect(after.find((m) => m.mes === '2026-05')).toMatchObject({ onde: 'arquivo', linhas: 1 });
    expect(after.filter((m) => MONTHS.includes(m.mes))).toEqual(
      MONTHS.map((mes) => expect.objectContaining({ mes, onde: 'arquivo', linhas: PER_MONTH }) as unknown),
    );

    expect((await runFeromonios(['log', 'verify', '--month', '2026-08'], env)).code).toBe(0);
    // a file gone from the destination: verify exits 7 and names it
    const fs = await import('node:fs/promises');
    await fs.rm(`${dir}/event_log/2026/08/part-00002.parquet`);
    const bad = await runFeromonios(['log', 'verify', '--month', '2026-08'], env);
    expect(bad.code).toBe(7);
    expect(bad.stdout).toMatch(/part-00002\.parquet/);

    const restored = json<{ resultado: string; linhas: number }>(
      await runFeromonios(['--json', 'log', 'restore', '--month', '2026-07'], env),
    );
    expect(restored).toEqual({ mes: '2026-07', resultado: 'restaurado', linhas: PER_MONTH });
    expect(await query(db.url, 'SELECT count(*)::int AS n FROM core.event_log_2026_07')).toEqual([{ n: PER_MONTH }]);

    // usage errors: exit 2, nothing done
    expect((await runFeromonios(['log', 'archive', '--month', '2026-07', '--older-than', '2'], env)).code).toBe(2);
    expect((await runFeromonios(['log', 'archive', '--month', 'julho'], env)).code).toBe(2);
    for (const n of ['0', 'abc', '1e9'])
      expect((await runFeromonios(['log', 'archive', '--month', '2026-07', '--rows-per-file', n], env)).code).toBe(2);
    expect((await runFeromonios(['log', 'restore', '--month', '2019-01'], env)).code).toBe(4);
  });
});
