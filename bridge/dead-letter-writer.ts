import type pg from 'pg';

/** One failure (or outcome) read from a colony's DLQ topic. */
export interface DeadLetterRecord {
  event_id: string;
  colonia: string;
  handler_nome: string | null;
  /** Already scrubbed of personal data. */
  mensagem_erro: string;
  pilha_erro: string | null;
  falhou_em: string;
}

/**
 * A reprocessing succeeded: the row becomes `resolved` with `resolvido_em`. Rows already final
 * are left alone; an outcome for an unknown row is ignored (nothing failed there).
 */
export async function recordResolved(pool: pg.Pool, eventId: string, colonia: string, at: string): Promise<boolean> {
  const res = await pool.query(
    `UPDATE core.dead_letter_queue SET status = 'resolved', resolvido_em = now(), ultima_tentativa = $3::timestamptz
      WHERE event_id = $1 AND colonia = $2 AND status IN ('pendente', 'retrying')`,
    [eventId, colonia, at],
  );
  return (res.rowCount ?? 0) > 0;
}

export type DeadLetterResult =
  { status: 'written'; estado: string; tentativas: number } | { status: 'event-not-in-log' };

/**
 * Keeps `core.dead_letter_queue` true for one failure: one row per `(event_id, colonia)`.
 * A first failure inserts `pendente` with `tentativas = 1`; each later failure increments
 * `tentativas` and reopens the row to `pendente` (clearing `resolvido_em`), or marks it
 * `failed_permanent` with `resolvido_em` and the reason in `motivo` once `maxTentativas` is
 * reached (the failure-count half of the loop guard; the reprocessor guards rounds).
 * The row needs the event's `sequence_number` (and its FK, on `core.event_ids`: an archived
 * month's events keep theirs): when the bridge has not written the event yet, nothing is written and `event-not-in-log` is returned so the caller can wait.
 */
export async function recordFailure(
  pool: pg.Pool,
  r: DeadLetterRecord,
  maxTentativas: number,
): Promise<DeadLetterResult> {
  const res = await pool.query<{ status: string; tentativas: number }>(
    `INSERT INTO core.dead_letter_queue AS d
            (event_id, sequence_number, colonia, handler_nome, mensagem_erro, pilha_erro, tentativas, ultima_tentativa, status, resolvido_em, motivo)
     SELECT el.event_id, el.sequence_number, $2, $3, $4, $5, 1, $6::timestamptz,
            CASE WHEN 1 >= $7 THEN 'failed_permanent' ELSE 'pendente' END,
            CASE WHEN 1 >= $7 THEN now() END,
            CASE WHEN 1 >= $7 THEN format('loop guard: failed %s time(s) (DLQ_MAX_TENTATIVAS)', $7::int) END
       FROM core.event_ids el WHERE el.event_id = $1
     ON CONFLICT (event_id, colonia) DO UPDATE SET
            tentativas       = d.tentativas + 1,
            ultima_tentativa = EXCLUDED.ultima_tentativa,
            handler_nome     = EXCLUDED.handler_nome,
            mensagem_erro    = EXCLUDED.mensagem_erro,
            pilha_erro       = EXCLUDED.pilha_erro,
            status           = CASE WHEN d.tentativas + 1 >= $7 THEN 'failed_permanent' ELSE 'pendente' END,
            resolvido_em     = CASE WHEN d.tentativas + 1 >= $7 THEN now() END,
            motivo           = CASE WHEN d.tentativas + 1 >= $7
                                    THEN format('loop guard: failed %s time(s) (DLQ_MAX_TENTATIVAS)', d.tentativas + 1) END
     RETURNING status, tentativas`,
    [r.event_id, r.colonia, r.handler_nome, r.mensagem_erro, r.pilha_erro, r.falhou_em, maxTentativas],
  );
  const row = res.rows[0];
  return row ? { status: 'written', estado: row.status, tentativas: row.tentativas } : { status: 'event-not-in-log' };
}
