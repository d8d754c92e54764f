import type { Message } from 'kafkajs';
import type { EventoConsultado } from './contract';
import { buildHeaders, encodeValue } from './wire-format';

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

export interface ReprocessOptions {
  manipulador?: string;
  redigido?: boolean;
  pedido?: string;
}

/** The record that sends `evento` back to a colony. */
export function reprocessMessage(evento: EventoConsultado, schemaId: number, o: ReprocessOptions = {}): Message {
  const headers: Record<string, string> = buildHeaders(evento);
  if (o.manipulador) headers[REPROCESS_HEADERS.handler] = o.manipulador;
  if (o.redigido) headers[REPROCESS_HEADERS.redacted] = 'true';
  if (o.pedido) headers[REPROCESS_HEADERS.request] = o.pedido;
  return { key: evento.event_id, value: encodeValue(schemaId, JSON.stringify(evento.payload)), headers };
}
