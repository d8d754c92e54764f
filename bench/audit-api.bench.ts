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
import { sqlContagem, sqlDaPagina } from '../sdk/service';
import { progress, type BenchContext } from './context';

export interface AuditRow {
  filter: string;
  /** Whether the ≤ 50 ms target applies (not to `deslocamento`, O(offset) by nature: the keyset row is its answer). */
  target: boolean;
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
 * Seeds `n` log rows like a month of the platform (4 types, 6 origins, 5 events per flow, 30 days,
 * a `demanda_id` in every payload). The secondary indexes (all but the two the foreign key and the
 * sequence need) are dropped during the load and built again afterwards (what `pg_restore` does): the same indexes, in minutes instead of an hour at 10M.
 */
export async function seedAuditLog(pool: pg.Pool, n: number, label: string): Promise<void> {
  const { rows: defs } = await pool.query<{ name: string; def: string }>(
    `SELECT indexname AS name, indexdef AS def FROM pg_indexes
      WHERE schemaname = 'core' AND tablename = 'event_log' AND indexname NOT IN ('event_log_pkey', 'event_log_event_id_key')`,
  );
  for (const d of defs) await pool.query(`DROP INDEX core.${d.name}`);
  const chunk = 500_000;
  for (let done = 0; done < n; done += chunk) {
    await pool.query(
      `INSERT INTO core.event_log (event_id, tipo, origem, correlacao_id, timestamp, payload)
       SELECT gen_random_uuid(),
              (ARRAY['demanda.recebida','demanda.normalizada','demanda.categorizada','parametros.atualizados'])[1 + g % 4],
              (ARRAY['D-1a','D-1b','D-3','D-4','D-5','L-1'])[1 + g % 6],
              md5(((g + $1) / 5)::text)::uuid,
              timestamptz '2026-11-01T00:00:00Z' + ((g + $1)::float8 * 2.592 * 1000000.0 / $3::float8) * interval '1 second',
              jsonb_build_object('demanda_id', md5(('d' || ((g + $1) / 5))::text)::uuid::text, 'canal', 'app', 'n', g)
         FROM generate_series(1, $2) g`,
      [done, Math.min(chunk, n - done), n],
    );
    progress(`${label}: ${Math.min(n, done + chunk).toLocaleString('en-US')}/${n.toLocaleString('en-US')} rows`);
  }
  for (const d of defs) {
    progress(`${label}: building ${d.name}…`);
    // a partitioned log's index reads `ON ONLY core.event_log` (the parent alone): build it on every month
    await pool.query(d.def.replace(' ON ONLY ', ' ON '));
  }
  await pool.query('VACUUM ANALYZE core.event_log');
}

/**
 * `GET /api/events` with each filter (and the trace and by-id routes) on a log of `n` rows
 * (1M by default, 200k in --quick, 10M with --10m), under load from a separate process; plus
 * the plan PostgreSQL picks for each filter's page query and bounded count.
 */
export async function benchAuditApi(
  ctx: BenchContext,
  n = ctx.quick ? 200_000 : 1_000_000,
  db?: { pool: pg.Pool },
): Promise<{ rows: number; results: AuditRow[] }> {
  if (!db) {
    db = await ctx.database('audit');
    progress(`audit API: seeding ${n.toLocaleString('en-US')} rows…`);
    await seedAuditLog(db.pool, n, 'audit API');
  }
  const sample = await db.pool.query<{ event_id: string; correlacao_id: string; s: string; demanda_id: string }>(
    `SELECT event_id::text, correlacao_id::text, sequence_number::text AS s, payload->>'demanda_id' AS demanda_id
       FROM core.event_log TABLESAMPLE SYSTEM (${Math.min(100, 2e6 / n)}) LIMIT 200`,
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
  const filters: Array<{ name: string; urls: string[]; where: string; countWhere?: string; target?: boolean }> = [
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
      name: 'payload demanda_id',
      urls: pick((r) => `/api/events?payload_campo=demanda_id&payload_valor=${r.demanda_id}`),
      where: `WHERE payload @> '${JSON.stringify({ demanda_id: rows[0]?.demanda_id })}'`,
    },
    {
      name: 'deep page (apos_sequence, keyset)',
      urls: pick((r) => `/api/events?tipo=demanda.recebida&limite=100&apos_sequence=${r.s}`),
      where: `WHERE tipo = 'demanda.recebida' AND sequence_number > ${rows[0]?.s}`,
      countWhere: "WHERE tipo = 'demanda.recebida'",
    },
    {
      name: 'deep page (deslocamento 100k)',
      urls: ['/api/events?tipo=demanda.recebida&limite=100&deslocamento=100000'],
      where: "WHERE tipo = 'demanda.recebida'",
      target: false,
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
    const offset = f.name.includes('deslocamento') ? 100_000 : 0;
    // the reader's own page query (sdk/log/event-log-reader.ts)
    const pageSql = sqlDaPagina(f.where, '101', String(offset), f.where.includes('timestamp') || offset > 0);
    // the SDK's bounded count (sdk/log/event-log-reader.ts); above the bound it adds an EXPLAIN
    const countSql = sqlContagem(f.countWhere ?? f.where);
    const byId = f.name === ':eventId';
    const plan = await explain(db.pool, pageSql);
    const countPlan = byId ? '—' : await explain(db.pool, countSql);
    const pageSqlMs = await executionMs(db.pool, pageSql);
    const countSqlMs = byId ? 0 : await executionMs(db.pool, countSql);
    progress(`audit API: ${f.name} for ${seconds} s (${CLIENTS} concurrent clients in a separate process)…`);
    const r = await load({ urls: f.urls.map((u) => base + u), token, seconds, concurrency: CLIENTS });
    results.push({ filter: f.name, target: f.target ?? true, ...r, plan, countPlan, pageSqlMs, countSqlMs });
  }
  server.closeAllConnections();
  server.close();
  return { rows: n, results };
}

async function explain(pool: pg.Pool, sql: string): Promise<string> {
  const { rows } = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ${sql}`);
  // the nodes that touch the table: what index (if any) serves the query; one line per kind of
  // node over the months (event_log_<mês>), leaving out scans of months holding no matching row
  const nodes = rows
    .map((r) => r['QUERY PLAN'].trim().replace(/^->\s*/, ''))
    .filter(
      (l) => /Scan|Sort|Limit|Aggregate|Join|Nested Loop/.test(l) && !/^(Filter|Index Cond|Recheck|Sort Key)/.test(l),
    )
    .filter((l) => !(/Scan .*on event_log_(\d{4}_\d{2}|padrao)/.test(l) && /actual rows=0 /.test(l)))
    .filter((l) => !/never executed/.test(l))
    .map((l) =>
      l
        .replace(/\s+\(actual .*$/, '')
        .replace(/event_log_(\d{4}_\d{2}|padrao)/g, 'event_log_<mês>')
        .replace(/ event_log_\d+$/, ''),
    );
  return [...new Set(nodes)].join(' → ');
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
