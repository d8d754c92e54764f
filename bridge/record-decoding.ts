/**
 * A Kafka record turned into the row the bridge stages: decoded, checked and redacted, or the
 * reason it is poison. The same code runs on the bridge's own thread and on its decode thread
 * (bridge/decode-thread.ts), so the two give the same rows and the same reasons.
 */

import type { KafkaMessage } from 'kafkajs';
import type { EventoConsultado, SchemaCatalog } from '../sdk';
import {
  HEADER,
  ORDER_HEADER,
  headerString,
  parseOrder,
  redactPayload,
  SchemaValidationError,
  WireFormatError,
  type EventDecoder,
  type OpcoesRedacao,
} from '../sdk/wire';
import { publishMsOf, type StagedRow } from './log-lines';

/** What of a Kafka record the decoding reads. */
export type RecordIn = Pick<KafkaMessage, 'value' | 'headers' | 'offset' | 'timestamp'>;

/** A record's poison: the quarantine reason and its detail. */
export interface PoisonReason {
  reason: string;
  detail: string;
}

/**
 * Every header the decoding reads (the CloudEvents binding's and `feromonios_ordem`). A record
 * sent to the decode thread carries these alone, each as the first value `headerString` reads:
 * the thread sees what the bridge's own thread would.
 */
export const DECODED_HEADERS: readonly string[] = [...Object.values(HEADER), ORDER_HEADER];

/**
 * The row a decoded event is staged as: its payload redacted by its type's policy (none: an
 * empty policy, nothing kept) and written as JSON text, where it was published and its producer
 * session's order.
 */
export function stagedRowOf(
  ev: EventoConsultado,
  message: RecordIn,
  topic: string,
  partition: number,
  publishedMs: number,
  catalog: SchemaCatalog,
  redaction: OpcoesRedacao,
): StagedRow {
  const policy = catalog.tipo(ev.tipo)?.redacao ?? { campos: {} };
  const order = parseOrder(headerString(message.headers, ORDER_HEADER));
  return {
    event_id: ev.event_id,
    tipo: ev.tipo,
    versao_schema: ev.versao_schema,
    timestamp: ev.timestamp,
    origem: ev.origem,
    correlacao_id: ev.correlacao_id,
    causation_id: ev.causation_id,
    tenant_id: ev.tenant_id,
    payload: JSON.stringify(redactPayload(ev.payload, policy, redaction)),
    kafka_topic: topic,
    kafka_partition: partition,
    kafka_offset: message.offset,
    publicado_em: new Date(publishedMs).toISOString(),
    ordem_sessao: order?.sessao ?? null,
    ordem_contador: order?.contador ?? null,
    ordem_firme: order?.firme ?? null,
  };
}

/**
 * The quarantine reason of a decoding error that is the record's fault (its framing, headers or
 * payload); `undefined` for any other error, which the caller classifies (a registry outage is
 * retried, anything else on an event topic is `rejected`).
 */
export function poisonOf(err: unknown): PoisonReason | undefined {
  if (err instanceof WireFormatError) return { reason: err.reason, detail: err.message };
  if (err instanceof SchemaValidationError) return { reason: 'schema-invalid', detail: err.message };
  return undefined;
}

/** Where a chunk's records come from and what decodes them. */
export interface DecodeContext {
  topic: string;
  partition: number;
  /** When the chunk was received (the publish time of a record with no usable timestamp). */
  receivedAt: number;
  catalog: SchemaCatalog;
  redaction: OpcoesRedacao;
}

/** A record decoded: its staged row and publish time, or its poison. */
export type RecordDecoded = { kind: 'ok'; row: StagedRow; publishedMs: number } | ({ kind: 'poison' } & PoisonReason);

/**
 * Decodes one record into its staged row, or its poison reason (`poisonOf`). Without a promise
 * when the decoder knows the record's schema id (every record after its schema's first); else
 * the decoder asks its registry. Throws (or rejects with) any error that is not the record's
 * fault, for the caller to classify.
 */
export function decodeRecord(
  decoder: EventDecoder,
  message: RecordIn,
  ctx: DecodeContext,
): RecordDecoded | Promise<RecordDecoded> {
  const posicao = { topico: ctx.topic, particao: ctx.partition, offset: message.offset };
  let ev: EventoConsultado | undefined;
  try {
    ev = decoder.decodeKnown(message, posicao);
  } catch (err) {
    return poisonOrThrow(err);
  }
  if (ev) return decodedOk(ev, message, ctx);
  return decoder.decode(message, posicao).then(
    (e) => decodedOk(e, message, ctx),
    (err: unknown) => poisonOrThrow(err),
  );
}

function decodedOk(ev: EventoConsultado, message: RecordIn, ctx: DecodeContext): RecordDecoded {
  const publishedMs = publishMsOf(message.timestamp, ctx.receivedAt);
  const row = stagedRowOf(ev, message, ctx.topic, ctx.partition, publishedMs, ctx.catalog, ctx.redaction);
  return { kind: 'ok', row, publishedMs };
}

function poisonOrThrow(err: unknown): RecordDecoded {
  const p = poisonOf(err);
  if (!p) throw err;
  return { kind: 'poison', ...p };
}
