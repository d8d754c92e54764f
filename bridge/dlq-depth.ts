import type pg from 'pg';
import type { Gauge } from 'prom-client';

/**
 * States of `core.dead_letter_queue` whose entries are still open: `pendente` and `retrying` are
 * the seed's pending count (waiting for, or in, a reprocessing round); `failed_permanent` is
 * parked (by the loop guard, the attempt limit or an operator) and waits for a person.
 * `resolved` rows are history, not depth.
 */
export const OPEN_DLQ_STATES = ['pendente', 'retrying', 'failed_permanent'] as const;

/** Open DLQ entries per colony and state, counted by PostgreSQL (served by dead_letter_queue_status_colonia_idx). */
export async function dlqDepths(pool: pg.Pool): Promise<Array<{ colonia: string; estado: string; n: number }>> {
  const { rows } = await pool.query<{ colonia: string; estado: string; n: number }>(
    `SELECT colonia, status AS estado, count(*)::int AS n
       FROM core.dead_letter_queue
      WHERE status = ANY($1::text[])
      GROUP BY colonia, status`,
    [OPEN_DLQ_STATES],
  );
  return rows;
}

/**
 * Sets `gauge` for every colony ever seen with a DLQ entry and every open state: a colony whose
 * entries were all resolved shows 0 (an alert on "DLQ above zero" resolves), instead of a series
 * that vanishes. Labels: colonies × 3 states.
 */
export function publishDlqDepths(
  gauge: Gauge<'colonia' | 'estado'>,
  known: Set<string>,
  depths: Array<{ colonia: string; estado: string; n: number }>,
): void {
  for (const d of depths) known.add(d.colonia);
  const at = new Map(depths.map((d) => [`${d.colonia}\u0000${d.estado}`, d.n]));
  for (const colonia of known)
    for (const estado of OPEN_DLQ_STATES) gauge.set({ colonia, estado }, at.get(`${colonia}\u0000${estado}`) ?? 0);
}
