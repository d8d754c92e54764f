import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type pg from 'pg';
import { createAuditApp } from '../audit-api/app';
import { listenAuditServer } from '../audit-api/server';
import { loadAuditConfig, tokenOptions } from '../audit-api/config';
import { AuditMetrics } from '../audit-api/metrics';
import { signOperatorToken } from '../audit-api/operator-auth';
import { silentLogger } from '../sdk';
import { progress, type BenchContext } from './context';

export interface AuditRow {
  filter: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  plan: string;
  countPlan: string;
  /** Execution time of the page query and of the count query alone (EXPLAIN ANALYZE), in ms. */
  pageSqlMs: number;
  countSqlMs: number;
}

const CLIENTS = 4;

const SECRET = 'bench-only-audit-secret-0123456789abcdef';

/**
 * `GET /api/events` with each filter (and the trace and by-id routes) on a log of 1M rows
 * (200k in --quick), under load from a separate process; plus the plan PostgreSQL picks for
 * each filter's page query and count query.
 */
export async function benchAuditApi(ctx: BenchContext): Promise<{ rows: number; results: AuditRow[] }> {
  const n = ctx.quick ? 200_000 : 1_000_000;
  const db = await ctx.database('audit');
  progress(`audit API: seeding ${n} rows (4 types, 6 origins, 5 events per flow, 30 days)…`);
  for (let done = 0; done < n; done += 250_000) {
    await db.pool.query(
      `INSERT INTO core.event_log (event_id, tipo, origem, correlacao_id, timestamp, payload)
       SELECT gen_random_uuid(),
              (ARRAY['demanda.recebida','demanda.normalizada','demanda.categorizada','parametros.atualizados'])[1 + g % 4],
              (ARRAY['D-1a','D-1b','D-3','D-4','D-5','L-1'])[1 + g % 6],
              md5(((g + $1) / 5)::text)::uuid,
              timestamptz '2026-11-01T00:00:00Z' + ((g + $1)::float8 * 2.592 * 1000000.0 / $3::float8) * interval '1 second',
              jsonb_build_object('demanda_id', gen_random_uuid(), 'canal', 'app', 'n', g)
         FROM generate_series(1, $2) g`,
      [done, Math.min(250_000, n - done), n],
    );
    progress(`audit API: ${Math.min(n, done + 250_000)}/${n} rows`);
  }
  await db.pool.query('VACUUM ANALYZE core.event_log');
  const sample = await db.pool.query<{ event_id: string; correlacao_id: string; s: string }>(
    'SELECT event_id::text, correlacao_id::text, sequence_number::text AS s FROM core.event_log TABLESAMPLE SYSTEM (1) LIMIT 200',
  );
  const bus = await ctx.bus({ pool: db.pool });
  const config = loadAuditConfig({ AUDIT_JWT_SECRET: SECRET, AUDIT_RATE_LIMIT_PER_MINUTE: '10000000' });
  const metrics = new AuditMetrics();
  const app = createAuditApp({ bus, pool: db.pool, config, logger: silentLogger, metrics });
  const server = await listenAuditServer(app, silentLogger, metrics, 0, '127.0.0.1');
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const token = await signOperatorToken(tokenOptions(config), { sub: 'bench', papel: 'operador' });

  const rows = sample.rows;
  const pick = <T>(f: (r: (typeof rows)[number], i: number) => T): T[] => rows.map(f);
  const hour = (i: number): [string, string] => {
    const t = Date.parse('2026-11-01T00:00:00Z') + (i % 700) * 3_600_000;
    return [new Date(t).toISOString(), new Date(t + 3_600_000).toISOString()];
  };
  const filters: Array<{ name: string; urls: string[]; where: string }> = [
    { name: 'no filter (page 1)', urls: ['/api/events?limite=100'], where: '' },
    { name: 'tipo', urls: ['/api/events?tipo=demanda.recebida&limite=100'], where: "WHERE tipo = 'demanda.recebida'" },
    { name: 'origem', urls: ['/api/events?origem=D-3&limite=100'], where: "WHERE origem = 'D-3'" },
    {
      name: 'correlacao_id',
      urls: pick((r) => `/api/events?correlacao_id=${r.correlacao_id}`),
      where: `WHERE correlacao_id = '${rows[0]?.correlacao_id}'`,
    },
    {
      name: 'timestamp (1 h window)',
      urls: pick((_r, i) => `/api/events?timestamp_inicio=${hour(i)[0]}&timestamp_fim=${hour(i)[1]}&limite=100`),
      where: `WHERE timestamp >= '${hour(0)[0]}' AND timestamp <= '${hour(0)[1]}'`,
    },
    {
      name: 'tipo + timestamp',
      urls: pick(
        (_r, i) =>
          `/api/events?tipo=demanda.categorizada&timestamp_inicio=${hour(i)[0]}&timestamp_fim=${hour(i)[1]}&limite=100`,
      ),
      where: `WHERE tipo = 'demanda.categorizada' AND timestamp >= '${hour(0)[0]}' AND timestamp <= '${hour(0)[1]}'`,
    },
    {
      name: 'sequence range (100)',
      urls: pick((r) => `/api/events?sequence_inicio=${r.s}&sequence_fim=${BigInt(r.s) + 99n}&limite=100`),
      where: `WHERE sequence_number >= ${rows[0]?.s} AND sequence_number <= ${BigInt(rows[0]?.s ?? 0) + 99n}`,
    },
    {
      name: 'deep page (deslocamento 100k)',
      urls: ['/api/events?tipo=demanda.recebida&limite=100&deslocamento=100000'],
      where: "WHERE tipo = 'demanda.recebida'",
    },
    {
      name: 'trace/:correlacaoId',
      urls: pick((r) => `/api/events/trace/${r.correlacao_id}`),
      where: `WHERE correlacao_id = '${rows[0]?.correlacao_id}'`,
    },
    {
      name: ':eventId',
      urls: pick((r) => `/api/events/${r.event_id}`),
      where: `WHERE event_id = '${rows[0]?.event_id}'`,
    },
  ];
  const seconds = ctx.quick ? 3 : 10;
  const results: AuditRow[] = [];
  for (const f of filters) {
    const offset = f.name.startsWith('deep page') ? 100_000 : 0;
    const pageSql = `SELECT * FROM core.event_log ${f.where} ORDER BY sequence_number LIMIT 100 OFFSET ${offset}`;
    const countSql = `SELECT count(*) FROM core.event_log ${f.where}`;
    const byId = f.name === ':eventId';
    const plan = await explain(db.pool, pageSql);
    const countPlan = byId ? '—' : await explain(db.pool, countSql);
    const pageSqlMs = await executionMs(db.pool, pageSql);
    const countSqlMs = byId ? 0 : await executionMs(db.pool, countSql);
    progress(`audit API: ${f.name} for ${seconds} s (${CLIENTS} concurrent clients in a separate process)…`);
    const r = await load({ urls: f.urls.map((u) => base + u), token, seconds, concurrency: CLIENTS });
    results.push({ filter: f.name, ...r, plan, countPlan, pageSqlMs, countSqlMs });
  }
  server.closeAllConnections();
  server.close();
  return { rows: n, results };
}

async function explain(pool: pg.Pool, sql: string): Promise<string> {
  const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`);
  // the nodes that touch the table: what index (if any) serves the query
  return rows
    .map((r) => r['QUERY PLAN'].trim().replace(/^->\s*/, ''))
    .filter((l) => /Scan|Sort|Limit|Aggregate/.test(l) && !/^(Filter|Index Cond|Recheck)/.test(l))
    .map((l) => l.replace(/\s+\(cost=.*$/, ''))
    .join(' → ');
}

/** Median execution time PostgreSQL reports for `sql` over 5 runs (warm cache), in ms. */
async function executionMs(pool: pg.Pool, sql: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, FORMAT TEXT) ${sql}`);
    const line = rows.map((r) => r['QUERY PLAN']).find((l) => l.startsWith('Execution Time'));
    times.push(Number(/([\d.]+) ms/.exec(line ?? '')?.[1] ?? NaN));
  }
  return times.sort((a, b) => a - b)[2] as number;
}

function load(o: { urls: string[]; token: string; seconds: number; concurrency: number }): Promise<{
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(__dirname, 'audit-load.ts'), JSON.stringify(o)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`load generator exited ${code}`));
      resolve(JSON.parse(out) as { rps: number; p50: number; p99: number; errors: number });
    });
  });
}
