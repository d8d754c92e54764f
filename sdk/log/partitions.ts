import type pg from 'pg';

/**
 * The monthly partitions of `core.event_log` (docs/bridge.md, "Monthly partitions"; ADR 0017) —
 * used by the bridge and by `feromonios log partitions`:
 * creates the current month and `mesesAFrente` months ahead that do not exist yet, through the
 * database's own `core.garantir_particoes_event_log` (so `psql` and the bridge do the same
 * thing, serialised by an advisory lock). Returns the partitions it created.
 */
export async function garantirParticoes(pool: pg.Pool, mesesAFrente: number): Promise<string[]> {
  const { rows } = await pool.query<{ p: string }>('SELECT core.garantir_particoes_event_log($1) AS p', [mesesAFrente]);
  return rows.map((r) => r.p);
}

/**
 * Rows in the DEFAULT partition (at most 10,000 counted): rows no month covered when they were
 * written. Normally 0 — the bridge keeps months ahead; creating the month moves them out.
 */
export async function linhasSemMes(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM (SELECT 1 FROM core.event_log_padrao LIMIT 10000) s',
  );
  return rows[0]?.n ?? 0;
}

/**
 * Creates one month's partition (`YYYY-MM`) if it does not exist, moving the rows the DEFAULT
 * partition caught for it; returns the partition created (none when it existed).
 */
export async function criarParticaoDoMes(pool: pg.Pool, mes: string): Promise<string[]> {
  const { rows } = await pool.query<{ p: string | null }>('SELECT core.criar_particao_event_log($1::date) AS p', [
    `${mes}-01`,
  ]);
  return rows.flatMap((r) => (r.p ? [r.p] : []));
}
