import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type pg from 'pg';
import { stateDir } from '../../infra/paths';
import type { EventBus, OpcoesEventBusEntrada } from '../../sdk';
import { SAMPLE_PAYLOADS } from '../../sdk/testing';
import { type TestDatabase, waitFor } from '../harness';

/** `FEROMONIOS_FAULTS=full` runs the sizes of docs/reliability.md; the default is the CI subset. */
export const FULL = process.env.FEROMONIOS_FAULTS === 'full';
export const size = (ci: number, full: number): number => (FULL ? full : ci);

/** Topics as production has them on the 3-node cluster. */
export const clusterBus: Partial<OpcoesEventBusEntrada> = {
  topics: { partitions: 3, replicationFactor: 3, minInsyncReplicas: 2, retentionMs: 3_600_000 },
  publishTimeoutMs: 30_000,
};

export interface ScenarioOutcome {
  published: number;
  acknowledged: number;
  inLog: number;
  duplicatesInLog: number;
  lost: number;
  handledOnce?: number;
  handledMoreThanOnce?: number;
  notes?: string;
}

/** Prints the scenario's line and appends it to `.infra/faults-results.jsonl` (docs/reliability.md). */
export function report(name: string, o: ScenarioOutcome): void {
  const handled =
    o.handledOnce === undefined ? '' : `, handled once ${o.handledOnce} / more than once ${o.handledMoreThanOnce ?? 0}`;
  process.stdout.write(
    `[faults] ${name}: published ${o.published}, acknowledged ${o.acknowledged}, in the log ${o.inLog}, duplicates in the log ${o.duplicatesInLog}, lost ${o.lost}${handled}${o.notes ? ` (${o.notes})` : ''}\n`,
  );
  fs.mkdirSync(stateDir(), { recursive: true });
  fs.appendFileSync(
    stateDir('faults-results.jsonl'),
    JSON.stringify({ at: new Date().toISOString(), mode: FULL ? 'full' : 'ci', scenario: name, ...o }) + '\n',
  );
}

/** How many of `ids` are in the log, and how many rows the log holds for them beyond one each. */
export async function logCoverage(
  db: TestDatabase,
  ids: string[],
): Promise<{ inLog: number; duplicates: number; missing: string[] }> {
  const { rows } = await db.pool.query<{ id: string; n: string }>(
    `SELECT p.id::text AS id, count(e.event_id) AS n
       FROM unnest($1::uuid[]) AS p(id) LEFT JOIN core.event_log e ON e.event_id = p.id GROUP BY p.id`,
    [ids],
  );
  return {
    inLog: rows.filter((r) => Number(r.n) > 0).length,
    duplicates: rows.reduce((d, r) => d + Math.max(0, Number(r.n) - 1), 0),
    missing: rows.filter((r) => Number(r.n) === 0).map((r) => r.id),
  };
}

/** A colony-side effects table: the handler writes one row per run inside its inbox transaction. */
export async function createEffects(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(
    `CREATE TABLE IF NOT EXISTS ${schema}.efeitos (event_id uuid NOT NULL, em timestamptz DEFAULT now())`,
  );
}

export async function effectCounts(
  pool: pg.Pool,
  schema: string,
): Promise<{ once: number; more: number; ids: Set<string> }> {
  const { rows } = await pool.query<{ id: string; n: string }>(
    `SELECT event_id::text AS id, count(*) AS n FROM ${schema}.efeitos GROUP BY event_id`,
  );
  return {
    once: rows.filter((r) => Number(r.n) === 1).length,
    more: rows.filter((r) => Number(r.n) > 1).length,
    ids: new Set(rows.map((r) => r.id)),
  };
}

/**
 * Waits until the colony's effects hold every one of `ids`, then returns the counts. Waiting on a
 * count instead (`ids.size >= ids.length`) is wrong: the colony also handles events whose publish
 * was refused at its deadline but written by the broker, so the count can reach the number of
 * acknowledged events while some of them are still on their way. On timeout the message says how
 * many are missing.
 */
export async function waitForEffects(
  pool: pg.Pool,
  schema: string,
  ids: string[],
  { timeoutMs = 180_000, what = 'the colony handled every acknowledged event' } = {},
): Promise<{ once: number; more: number; ids: Set<string> }> {
  let missing = ids.length;
  await waitFor(
    async () => {
      const eff = await effectCounts(pool, schema);
      missing = ids.filter((id) => !eff.ids.has(id)).length;
      return missing === 0;
    },
    { timeoutMs, intervalMs: 250, message: () => `${what} (${missing} of ${ids.length} still missing)` },
  );
  return effectCounts(pool, schema);
}

/** The event the fault scenarios publish: a fresh flow each time. */
export const categorizada = () => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  correlacao_id: randomUUID(),
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});

/** An inbox colony whose handler writes one `<schema>.efeitos` row per run, in its inbox transaction. */
export function subscribeWithEffects(bus: EventBus, pool: pg.Pool, schema: string, colonia: string): void {
  bus.inscrever(
    'demanda.categorizada',
    colonia,
    async (e, ctx) =>
      void (await ctx.transacao?.query(`INSERT INTO ${schema}.efeitos (event_id) VALUES ($1)`, [e.event_id])),
    { inbox: { pool, schema } },
  );
}
