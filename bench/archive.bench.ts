import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { arquivarMes, DiretorioLocal } from '../sdk/service';
import { progress, type BenchContext } from './context';
import { retainedMemory, timedMs } from './stats';

export interface ArchiveRow {
  events: number;
  archived: number;
  files: number;
  /** `replayStream(0)` with every row in PostgreSQL. */
  pgMs: number;
  /** The same replay after half the rows (two past months) went to Parquet. */
  halfMs: number;
  halfMb: number;
  pgMb: number;
  archiveMs: number;
  bytes: number;
  ratio: number;
}

/**
 * Replay over a log with half its rows archived (issue #20): `replayStream(0)` over n rows spread
 * over the two previous months and the current one, all in PostgreSQL, then again after the two
 * past months were archived to Parquet in a local directory — same rows, same order, timed side
 * by side in one run; plus the archive's own time and size.
 */
export async function benchArchive(ctx: BenchContext): Promise<ArchiveRow> {
  const n = ctx.quick ? 100_000 : 1_000_000;
  const half = n / 2;
  const db = await ctx.database('archive');
  const months = await db.pool.query<{ m: string }>(
    `SELECT to_char(date_trunc('month', now() AT TIME ZONE 'UTC') - make_interval(months => k), 'YYYY-MM') AS m
       FROM generate_series(2, 1, -1) k`,
  );
  for (const { m } of months.rows) await db.pool.query('SELECT core.criar_particao_event_log($1::date)', [`${m}-01`]);
  progress(
    `archive: seeding ${n.toLocaleString('en-US')} rows over ${months.rows.map((r) => r.m).join(', ')} and this month…`,
  );
  // first half: the two past months; second half: this month so far
  await db.pool.query(
    `WITH b AS (SELECT (date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS mes)
     INSERT INTO core.event_log (event_id, tipo, origem, correlacao_id, timestamp, payload, criado_em)
     SELECT gen_random_uuid(), 'demanda.recebida', 'D-1a', gen_random_uuid(), t, 
            jsonb_build_object('demanda_id', gen_random_uuid(), 'texto_bruto', 'hmac-sha256:' || md5(g::text) || md5((g + 1)::text),
                               'localizacao_bruta', jsonb_build_object('lat', -23.55, 'lng', -46.63), 'canal', 'app'), t
       FROM b, generate_series(1, $1) g,
            LATERAL (SELECT CASE WHEN g <= $2
                              THEN b.mes - interval '2 months' + (g::float8 / $2) * (b.mes - (b.mes - interval '2 months')) - interval '1 second'
                              ELSE b.mes + ((g - $2)::float8 / $2) * (now() - b.mes) END AS t) x`,
    [n, half],
  );
  await db.pool.query('VACUUM ANALYZE core.event_log');
  const count = async (): Promise<number> => {
    const bus = await ctx.bus({ pool: db.pool });
    let c = 0;
    for await (const e of bus.replayStream(0)) if (e) c++;
    return c;
  };
  const withProbe = async (probe: () => void): Promise<number> => {
    const bus = await ctx.bus({ pool: db.pool });
    let c = 0;
    for await (const e of bus.replayStream(0)) if (e && ++c % 10_000 === 0) probe();
    return c;
  };
  progress('archive: replayStream(0), every row in PostgreSQL…');
  const pg = await timedMs(count);
  const pgMem = await retainedMemory(withProbe);

  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'feromonios-bench-archive-'));
  try {
    const destino = new DiretorioLocal(dir);
    let archived = 0;
    let files = 0;
    const archive = await timedMs(async () => {
      for (const { m } of months.rows) {
        const r = await arquivarMes(
          {
            pool: db.pool,
            destino,
            progresso: (p) =>
              p.etapa === 'arquivo' && progress(`archive: ${p.mes} ${p.linhas.toLocaleString('en-US')} rows written`),
          },
          m,
        );
        archived += r.linhas;
        files += r.arquivos;
      }
      return archived;
    });
    const bytes = (await fs.readdir(dir, { recursive: true }))
      .filter((f) => String(f).endsWith('.parquet'))
      .reduce(async (acc, f) => (await acc) + (await fs.stat(path.join(dir, String(f)))).size, Promise.resolve(0));
    progress(`archive: replayStream(0) with ${archived.toLocaleString('en-US')} rows archived…`);
    const halfRun = await timedMs(count);
    const halfMem = await retainedMemory(withProbe);
    if (pg.result !== n || halfRun.result !== n)
      throw new Error(`archive replay counts differ: ${pg.result} before, ${halfRun.result} after, ${n} seeded`);
    return {
      events: n,
      archived,
      files,
      pgMs: pg.ms,
      halfMs: halfRun.ms,
      pgMb: pgMem.peakMb,
      halfMb: halfMem.peakMb,
      archiveMs: archive.ms,
      bytes: await bytes,
      ratio: halfRun.ms / pg.ms,
    };
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}
