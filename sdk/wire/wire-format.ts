import type { IHeaders } from 'kafkajs';
import type { EventoConsultado } from '../contract';
import { WireFormatError } from '../errors';
import { ORDER_HEADER } from './headers';

/**
 * The message format (docs/wire-format.md):
 * - value: Confluent wire format — byte 0x00, the schema id as a 4-byte big-endian integer,
 *   then the payload as UTF-8 JSON;
 * - headers: CloudEvents Kafka protocol binding, binary mode (`ce_specversion`, `ce_id`,
 *   `ce_type`, `ce_source`, `ce_time`, `content-type`) with the extensions `ce_versaoschema`,
 *   `ce_correlacaoid`, `ce_causationid`, `ce_tenantid`, `ce_partitionkey`, plus W3C `traceparent`;
 * - key: `correlacao_id`, or the publisher's partition key.
 */
export const MAGIC_BYTE = 0;

/** Largest payload accepted, in bytes of JSON (seed 6.2: 1 MB). */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;

/**
 * The `content-type` the SDK writes: the value is not plain JSON but a Confluent wire-format
 * frame around it, so a generic CloudEvents consumer must not parse it as `application/json`
 * (docs/adr/0007-wire-contract.md). Strip the first 5 bytes to get the JSON.
 */
export const CONTENT_TYPE = 'application/vnd.feromonios.confluent-json';
/**
 * Content types the bridge and subscribers accept: the current one, and `application/json`
 * written by SDK 0.1 and by producers following the first version of docs/wire-format.md.
 */
export const ACCEPTED_CONTENT_TYPES: readonly string[] = [CONTENT_TYPE, 'application/json'];
export const SPEC_VERSION = '1.0';
export const HEADER = {
  specversion: 'ce_specversion',
  id: 'ce_id',
  type: 'ce_type',
  source: 'ce_source',
  time: 'ce_time',
  contentType: 'content-type',
  versaoSchema: 'ce_versaoschema',
  correlacaoId: 'ce_correlacaoid',
  causationId: 'ce_causationid',
  tenantId: 'ce_tenantid',
  partitionKey: 'ce_partitionkey',
  traceparent: 'traceparent',
} as const;

export function encodeValue(schemaId: number, payloadJson: string | Buffer): Buffer {
  const json = typeof payloadJson === 'string' ? Buffer.from(payloadJson, 'utf8') : payloadJson;
  const out = Buffer.allocUnsafe(5 + json.length);
  out.writeUInt8(MAGIC_BYTE, 0);
  out.writeUInt32BE(schemaId, 1);
  json.copy(out, 5);
  return out;
}

/** Splits a wire-format value; throws `WireFormatError` (`not-wire-format`, `invalid-json`). */
export function decodeValue(value: Buffer | null): { schemaId: number; payload: unknown; size: number } {
  if (!value || value.length < 6 || value.readUInt8(0) !== MAGIC_BYTE) {
    throw new WireFormatError(
      'not-wire-format',
      'value is not in the Confluent wire format (0x00 + 4-byte schema id + JSON)',
    );
  }
  const schemaId = value.readUInt32BE(1);
  let payload: unknown;
  try {
    payload = JSON.parse(value.subarray(5).toString()); // UTF-8
  } catch (err) {
    // JSON.parse quotes the text around the error: only its position is kept (it may be personal data)
    const at = /position (\d+)/.exec((err as Error).message)?.[1];
    throw new WireFormatError(
      'invalid-json',
      `value after the schema id is not JSON${at === undefined ? '' : ` (error at byte ${at})`}`,
    );
  }
  return { schemaId, payload, size: value.length - 5 };
}

type Metadata = Pick<
  EventoConsultado,
  'event_id' | 'tipo' | 'versao_schema' | 'timestamp' | 'origem' | 'correlacao_id' | 'causation_id' | 'tenant_id'
>;

export function buildHeaders(
  meta: Omit<Metadata, 'tenant_id'> & { tenant_id?: string | null },
  extra: { traceparent?: string; partitionKey?: string; ordem?: string } = {},
): Record<string, string> {
  const h: Record<string, string> = {
    [HEADER.specversion]: SPEC_VERSION,
    [HEADER.id]: meta.event_id,
    [HEADER.type]: meta.tipo,
    [HEADER.source]: meta.origem,
    [HEADER.time]: meta.timestamp,
    [HEADER.contentType]: CONTENT_TYPE,
    [HEADER.versaoSchema]: meta.versao_schema,
  };
  if (meta.correlacao_id) h[HEADER.correlacaoId] = meta.correlacao_id;
  if (meta.causation_id) h[HEADER.causationId] = meta.causation_id;
  if (meta.tenant_id) h[HEADER.tenantId] = meta.tenant_id;
  if (extra.partitionKey) h[HEADER.partitionKey] = extra.partitionKey;
  if (extra.traceparent) h[HEADER.traceparent] = extra.traceparent;
  if (extra.ordem) h[ORDER_HEADER] = extra.ordem;
  return h;
}

/** Reads a header as a string (kafkajs gives Buffers, possibly arrays). */
export function headerString(headers: IHeaders | undefined, name: string): string | undefined {
  const v = headers?.[name];
  const first = Array.isArray(v) ? v[0] : v;
  if (first === undefined || first === null) return undefined;
  // toString() with no argument is Node's UTF-8 fast path (an encoding argument goes through a dispatcher)
  return Buffer.isBuffer(first) ? first.toString() : String(first);
}

/**
 * Event metadata from CloudEvents headers. `versao_schema` defaults to 1.0.0 and
 * `correlacao_id` to the event id, as on publish. Throws `missing-header` naming the header.
 */
export function parseHeaders(headers: IHeaders | undefined): Metadata & { traceparent?: string } {
  // the CloudEvents binding's required attributes, as docs/wire-format.md lists them
  const spec = requiredHeader(headers, HEADER.specversion);
  if (spec !== SPEC_VERSION)
    throw new WireFormatError('invalid-header', `ce_specversion must be ${SPEC_VERSION}, got another version`);
  const contentTypeHeader = requiredHeader(headers, HEADER.contentType);
  // the SDK's own value as it writes it (every record but a foreign producer's): nothing to normalise
  const contentType =
    contentTypeHeader === CONTENT_TYPE ? CONTENT_TYPE : (contentTypeHeader.split(';')[0]?.trim().toLowerCase() ?? '');
  if (!ACCEPTED_CONTENT_TYPES.includes(contentType))
    throw new WireFormatError('invalid-header', `content-type must be ${ACCEPTED_CONTENT_TYPES.join(' or ')}`);
  const event_id = requiredHeader(headers, HEADER.id);
  const traceparent = headerString(headers, HEADER.traceparent);
  const meta: Metadata & { traceparent?: string } = {
    event_id,
    tipo: requiredHeader(headers, HEADER.type),
    origem: requiredHeader(headers, HEADER.source),
    timestamp: requiredHeader(headers, HEADER.time),
    versao_schema: headerString(headers, HEADER.versaoSchema) ?? '1.0.0',
    correlacao_id: headerString(headers, HEADER.correlacaoId) ?? event_id,
    causation_id: headerString(headers, HEADER.causationId) ?? null,
    tenant_id: headerString(headers, HEADER.tenantId) ?? null,
  };
  if (traceparent) meta.traceparent = traceparent;
  return meta;
}

/** A header every record must have, as a non-empty string; `missing-header` names it otherwise. */
function requiredHeader(headers: IHeaders | undefined, name: string): string {
  const v = headerString(headers, name);
  if (!v) throw new WireFormatError('missing-header', `required header '${name}' is missing`);
  return v;
}
