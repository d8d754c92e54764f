import type pg from 'pg';
import type { EventoConsultado } from '../sdk';
import { withTransaction } from '../sdk/service';

/** One event ready for `core.event_log` (payload already redacted): the contract's columns. */
export type LogRow = Pick<
  EventoConsultado,
  'event_id' | 'tipo' | 'versao_schema' | 'timestamp' | 'origem' | 'correlacao_id' | 'causation_id' | 'payload'
>;

export interface WriteResult {
  inserted: Array<{ event_id: string; sequence_number: string }>;
  /** event_ids already in the log (or repeated in the batch): dropped, no sequence consumed. */
  duplicates: string[];
}

/**
 * Key of the transaction-scoped advisory lock every bridge instance takes before assigning
 * sequence numbers. Writers are serialised, so rows commit in sequence order and a reader
 * polling `sequence_number > cursor` can never see N+1 before N (the skip bug
 * Marten and Emmett shipped). docs/adr/0004-global-sequence.md explains the choice.
 */
export const EVENT_LOG_LOCK_KEY = 0x6665726f6c6f67n; // 'ferolog'

/**
 * Appends a batch to `core.event_log` in one transaction, in the given order. Known
 * `event_id`s are filtered out under the lock before the INSERT, so a redelivery never burns a
 * `sequence_number` (`ON CONFLICT DO NOTHING` would: it evaluates `nextval` first).
 */
export async function appendToEventLog(
  pool: pg.Pool,
  rows: LogRow[],
  /** Fault injection only: up to this many milliseconds of random delay before COMMIT. */
  commitJitterMs = 0,
): Promise<WriteResult> {
  const seen = new Set<string>();
  const unique: LogRow[] = [];
  const duplicates: string[] = [];
  for (const r of rows) {
    if (seen.has(r.event_id)) duplicates.push(r.event_id);
    else {
      seen.add(r.event_id);
      unique.push(r);
    }
  }
  if (unique.length === 0) return { inserted: [], duplicates };
  return withTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock($1)', [EVENT_LOG_LOCK_KEY.toString()]);
    const existing = await client.query<{ event_id: string }>(
      'SELECT event_id FROM core.event_log WHERE event_id = ANY($1::uuid[])',
      [unique.map((r) => r.event_id)],
    );
    const known = new Set(existing.rows.map((r) => r.event_id));
    const fresh = unique.filter((r) => !known.has(r.event_id));
    duplicates.push(...unique.filter((r) => known.has(r.event_id)).map((r) => r.event_id));
    let inserted: WriteResult['inserted'] = [];
    if (fresh.length > 0) {
      // unnest keeps the batch in one statement whatever its size (no 65,535-parameter limit);
      // ORDER BY ord makes sequence numbers follow Kafka offset order.
      const res = await client.query<{ event_id: string; sequence_number: string }>(
        `INSERT INTO core.event_log (event_id, tipo, versao_schema, timestamp, origem, correlacao_id, causation_id, payload)
         SELECT e, t, v, ts, o, c, ca, p
           FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::uuid[], $7::uuid[], $8::jsonb[])
                WITH ORDINALITY AS x(e, t, v, ts, o, c, ca, p, ord)
          ORDER BY ord
         RETURNING event_id, sequence_number::text`,
        [
          fresh.map((r) => r.event_id),
          fresh.map((r) => r.tipo),
          fresh.map((r) => r.versao_schema),
          fresh.map((r) => r.timestamp),
          fresh.map((r) => r.origem),
          fresh.map((r) => r.correlacao_id),
          fresh.map((r) => r.causation_id),
          fresh.map((r) => JSON.stringify(r.payload)),
        ],
      );
      inserted = res.rows;
    }
    if (commitJitterMs > 0) await client.query('SELECT pg_sleep($1)', [(Math.random() * commitJitterMs) / 1000]);
    return { inserted, duplicates };
  });
}
