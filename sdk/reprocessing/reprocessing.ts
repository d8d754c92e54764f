import type { Message } from 'kafkajs';
import type { EventoConsultado } from '../contract';
import { REPROCESS_HEADERS } from '../wire/headers';
import { buildHeaders, encodeValue } from '../wire/wire-format';

/** What a record sent back to a colony says besides the event (docs/consuming.md, "Reprocessing"). */
export interface OpcoesReprocesso {
  manipulador?: string;
  redigido?: boolean;
  pedido?: string;
}

/** The record that sends `evento` back to a colony. */
export function reprocessMessage(evento: EventoConsultado, schemaId: number, o: OpcoesReprocesso = {}): Message {
  const headers: Record<string, string> = buildHeaders(evento);
  if (o.manipulador) headers[REPROCESS_HEADERS.handler] = o.manipulador;
  if (o.redigido) headers[REPROCESS_HEADERS.redacted] = 'true';
  if (o.pedido) headers[REPROCESS_HEADERS.request] = o.pedido;
  return { key: evento.event_id, value: encodeValue(schemaId, JSON.stringify(evento.payload)), headers };
}
