/**
 * Kafka header names of the wire contract besides the CloudEvents ones (`HEADER` in
 * wire-format.ts): what a dead-lettered record carries, what a record sent back for
 * reprocessing carries, and the outcome marker. The colony SDK writes them; the bridge and the
 * audit API read them (docs/wire-format.md, docs/consuming.md).
 */

/** Headers a dead-lettered message carries, besides the original ones (docs/consuming.md). */
export const DLQ_HEADERS = {
  topic: 'feromonios_dlq_topico',
  partition: 'feromonios_dlq_particao',
  offset: 'feromonios_dlq_offset',
  timestamp: 'feromonios_dlq_timestamp',
  group: 'feromonios_dlq_grupo',
  colonia: 'feromonios_dlq_colonia',
  handler: 'feromonios_dlq_manipulador',
  errorMessage: 'feromonios_dlq_erro_mensagem',
  errorStack: 'feromonios_dlq_erro_pilha',
  errorCode: 'feromonios_dlq_erro_codigo',
  attempts: 'feromonios_dlq_tentativas',
  failedAt: 'feromonios_dlq_falhou_em',
  /** `true` when the record is a reference: the copy did not fit, the original stays at topic/partition/offset. */
  reference: 'feromonios_dlq_referencia',
  /** Size of the original value, in bytes (on references). */
  size: 'feromonios_dlq_tamanho',
} as const;

/**
 * Reprocessing (docs/consuming.md, "Reprocessing"). An event sent back to a colony travels on
 * `<ns>.reprocessar.<colonia>` in the normal wire format, with these extra headers; its outcome
 * goes to the colony's DLQ topic: a new failure record, or a `resolved` record.
 */
export const REPROCESS_HEADERS = {
  /** Only this handler runs again (the one that failed); absent = every handler of the type. */
  handler: 'feromonios_reprocesso_manipulador',
  /** `true` when the payload is the redacted copy from core.event_log (schema not checked). */
  redacted: 'feromonios_reprocesso_redigido',
  /** Id of the audited reprocessing request, echoed in the outcome. */
  request: 'feromonios_reprocesso_pedido',
} as const;

/** Header of a DLQ-topic record that reports an outcome instead of a failure. */
export const DLQ_OUTCOME_HEADER = 'feromonios_dlq_resultado';

/**
 * Publish order of one SDK producer session: `<session uuid>:<counter>:<settled>`, the counter
 * starting at 1 and growing by one per event the session plans; `settled` (at most the counter)
 * says that every counter of the session below it was settled — acknowledged by Kafka, or given
 * up — when this record was sent, so a gap below it will never fill. The bridge's sequencer
 * keeps one session's events in counter order across topics (docs/ordering.md). Optional:
 * records of other producers, or with a value that does not parse, are ordered by their record
 * timestamp; `<session uuid>:<counter>` (no settled part, SDKs before 2026-12-04) is read with
 * the settled part unknown.
 */
export const ORDER_HEADER = 'feromonios_ordem';

/** Largest counter accepted in `feromonios_ordem` (fits a JavaScript number and a BIGINT). */
const MAX_ORDER_COUNTER = Number.MAX_SAFE_INTEGER;
const ORDER_RE =
  /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):([1-9][0-9]{0,15})(?::([1-9][0-9]{0,15}))?$/;

/** A parsed `feromonios_ordem`: `firme` is `null` when the value has no settled part. */
export interface PublishOrder {
  sessao: string;
  contador: number;
  firme: number | null;
}

/**
 * `feromonios_ordem`'s session, counter and settled mark, or `null` when absent or malformed —
 * a counter past `Number.MAX_SAFE_INTEGER`, a settled mark above the counter (never throws).
 */
export function parseOrder(value: string | undefined): PublishOrder | null {
  if (value === undefined || value.length > 80) return null;
  const m = ORDER_RE.exec(value);
  if (!m) return null;
  const contador = Number(m[2]);
  const firme = m[3] === undefined ? null : Number(m[3]);
  if (contador > MAX_ORDER_COUNTER || (firme !== null && firme > contador)) return null;
  return { sessao: m[1] as string, contador, firme };
}
