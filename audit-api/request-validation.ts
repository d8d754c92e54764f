import type { ErrorObject, ValidateFunction } from 'ajv';
import {
  FINGERPRINT_RE,
  HANDLER_SELECTOR_RE,
  MAX_EVENTOS_ACAO,
  MAX_IDS_SELECAO,
  MOTIVOS_ESTACIONAMENTO,
  REFERENCIA_RE,
} from '../sdk';
import { createAjv, COLONY_CODE_RE } from '../sdk/wire';
import { Denied } from './problem';

/** A colony code, exactly the SDK's rule (sdk/wire/storable.ts): `origem`, `colonia`. */
const COLONY = { type: 'string', pattern: COLONY_CODE_RE.source } as const;
const UUID = { type: 'string', format: 'uuid' } as const;
/** A date-time PostgreSQL stores as the same instant (sdk/wire/storable.ts `timestampProblem`). */
const TIMESTAMP = { type: 'string', format: 'feromonios-instante' } as const;
/** A non-negative integer without leading zeros; the BIGINT upper bound is checked by the SDK (400). */
const SEQUENCE = { type: 'string', pattern: '^(0|[1-9][0-9]{0,18})$' } as const;
/** 1 … 10000; the page itself holds at most 500 (seed T14). */
const LIMITE = { type: 'string', pattern: '^([1-9][0-9]{0,3}|10000)$' } as const;
const DESLOCAMENTO = { type: 'string', pattern: '^(0|[1-9][0-9]{0,8})$' } as const;

/** Query of `GET /api/events` (seed 5.4): every value a single string; unknown parameters are refused. */
export const consultarEventosQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    tipo: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_.-]+$' },
    origem: COLONY,
    correlacao_id: UUID,
    tenant_id: UUID,
    timestamp_inicio: TIMESTAMP,
    timestamp_fim: TIMESTAMP,
    sequence_inicio: SEQUENCE,
    sequence_fim: SEQUENCE,
    payload_campo: { type: 'string', pattern: '^[a-z_][a-z0-9_]{0,63}$' },
    payload_valor: { type: 'string', minLength: 1, maxLength: 255 },
    apos_sequence: SEQUENCE,
    limite: LIMITE,
    deslocamento: DESLOCAMENTO,
  },
  dependentRequired: { payload_campo: ['payload_valor'], payload_valor: ['payload_campo'] },
} as const;

export const coloniaQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['colonia'],
  properties: { colonia: COLONY },
} as const;

export const emptyQuery = { type: 'object', additionalProperties: false, properties: {} } as const;

export const uuidParam = (name: string) =>
  ({ type: 'object', required: [name], properties: { [name]: UUID } }) as const;

/** Body of `POST /api/events/dlq/reprocessar`: `{ "colonia": "D-5" }`, nothing else. */
export const reprocessarBody = {
  type: 'object',
  additionalProperties: false,
  required: ['colonia'],
  properties: { colonia: COLONY },
} as const;

/** The selection of reprocessing v2 (sdk/reprocessing/dlq-selection.ts), as JSON body fields. */
const SELECTION = {
  colonia: COLONY,
  manipulador: { type: 'string', pattern: HANDLER_SELECTOR_RE.source },
  event_ids: { type: 'array', minItems: 1, maxItems: MAX_IDS_SELECAO, items: UUID },
  fingerprint: { type: 'string', pattern: FINGERPRINT_RE.source },
  falhou_desde: TIMESTAMP,
  falhou_ate: TIMESTAMP,
} as const;
const MAX = { type: 'integer', minimum: 1, maximum: MAX_EVENTOS_ACAO } as const;

/** Body of `POST /api/events/dlq/reprocessamentos`. */
export const reprocessamentoBody = {
  type: 'object',
  additionalProperties: false,
  required: ['colonia'],
  properties: {
    ...SELECTION,
    max: MAX,
    taxa: { type: 'number', minimum: 0.1, maximum: 10000 },
    dry_run: { type: 'boolean' },
  },
} as const;

/** Body of `POST /api/events/dlq/estacionar`: a selection and the reason (a code, and a ticket reference). */
export const estacionarBody = {
  type: 'object',
  additionalProperties: false,
  required: ['colonia', 'motivo'],
  properties: {
    ...SELECTION,
    max: MAX,
    dry_run: { type: 'boolean' },
    motivo: { type: 'string', enum: [...MOTIVOS_ESTACIONAMENTO] },
    referencia: { type: 'string', pattern: REFERENCIA_RE.source },
  },
} as const;

/** Body of `POST /api/events/dlq/reabrir`. */
export const reabrirBody = {
  type: 'object',
  additionalProperties: false,
  required: ['colonia'],
  properties: { ...SELECTION, max: MAX, dry_run: { type: 'boolean' } },
} as const;

/** Query of `GET /api/events/dlq/entradas`: the selection's single-valued fields, a state, a page. */
export const entradasQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['colonia'],
  properties: {
    colonia: COLONY,
    manipulador: SELECTION.manipulador,
    fingerprint: SELECTION.fingerprint,
    falhou_desde: TIMESTAMP,
    falhou_ate: TIMESTAMP,
    status: { type: 'string', enum: ['pendente', 'retrying', 'resolved', 'failed_permanent'] },
    limite: LIMITE,
    deslocamento: DESLOCAMENTO,
  },
} as const;

/** Query of `GET /api/events/dlq/reprocessamentos`. */
export const trailQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    colonia: COLONY,
    acao: { type: 'string', enum: ['reprocessar', 'estacionar', 'reabrir'] },
    event_id: UUID,
    limite: LIMITE,
    deslocamento: DESLOCAMENTO,
  },
} as const;

/** Query of `GET /api/events/replay`: from a sequence (exclusive), optionally some types (comma-separated). */
export const replayQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['apos_sequence'],
  properties: {
    apos_sequence: SEQUENCE,
    tipos: { type: 'string', minLength: 1, maxLength: 2000, pattern: '^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$' },
  },
} as const;

const ajv = createAjv();

/** A compiled validator that throws a 400 problem listing every violation. */
export function validator<T>(schema: object, where: 'query' | 'body' | 'path'): (value: unknown) => T {
  const validate: ValidateFunction = ajv.compile(schema);
  return (value) => {
    if (validate(value)) return value as T;
    const errors = (validate.errors ?? []).map((e) => describe(e, where));
    throw new Denied(
      400,
      'requisicao-invalida',
      'Invalid request',
      errors.join('; '),
      'invalid-request',
      undefined,
      {},
      {
        errors,
      },
    );
  };
}

function describe(e: ErrorObject, where: string): string {
  const field = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (e.keyword === 'additionalProperties') {
    // the name is caller input: repeated only when it is a plain word (never a value that may be personal)
    const name = (e.params as { additionalProperty: string }).additionalProperty;
    return /^[A-Za-z_]{1,40}$/.test(name) ? `${where}: unknown parameter '${name}'` : `${where}: an unknown parameter`;
  }
  if (e.keyword === 'dependentRequired')
    return `${where}: '${(e.params as { missingProperty: string }).missingProperty}' is required with '${(e.params as { property: string }).property}'`;
  if (e.keyword === 'required')
    return `${where}: '${(e.params as { missingProperty: string }).missingProperty}' is required`;
  if (e.keyword === 'type' && e.params.type === 'string')
    return `${where}.${field}: must be given once, as a single value`;
  if (e.keyword === 'type' && e.params.type === 'object') return `${where}: must be a JSON object`;
  if (e.keyword === 'format')
    return `${where}.${field}: must be ${
      e.params.format === 'uuid'
        ? 'a UUID'
        : 'an ISO-8601 date-time with a time zone: a real calendar date, years 0001-9999, an offset within ±15:59'
    }`;
  if (e.keyword === 'pattern' && /limite$/.test(field))
    return `${where}.${field}: must be an integer from 1 to 10000 (a page holds at most 500)`;
  if (e.keyword === 'pattern' && /deslocamento$/.test(field))
    return `${where}.${field}: must be a non-negative integer below 10^9`;
  if (e.keyword === 'pattern' && /^sequence_/.test(field))
    return `${where}.${field}: must be an integer from 0 to 9223372036854775807`;
  if (field === 'manipulador')
    return `${where}.${field}: must be a handler name: 1-255 letters, digits or _$#.,:- (at most 6 digits)`;
  if (field === 'fingerprint') return `${where}.${field}: must be 12 lowercase hex digits (an erro_fingerprint)`;
  if (field === 'referencia') return `${where}.${field}: must be a ticket reference like OPS-77 (KEY-number)`;
  if (field === 'payload_campo') return `${where}.${field}: must be a payload key of [a-z0-9_]`;
  if (field === 'tipos') return `${where}.${field}: must be event type names separated by commas`;
  if (e.keyword === 'enum')
    return `${where}.${field}: must be one of ${((e.params as { allowedValues: string[] }).allowedValues ?? []).join(', ')}`;
  if (
    e.keyword === 'type' ||
    e.keyword === 'minimum' ||
    e.keyword === 'maximum' ||
    e.keyword === 'minItems' ||
    e.keyword === 'maxItems' ||
    e.keyword === 'maxLength'
  )
    return `${where}.${field}: ${e.message ?? 'is invalid'}`;
  if (field === 'tipo')
    return `${where}.${field}: must be an event type name of characters [A-Za-z0-9_.-] (255 at most)`;
  if (e.keyword === 'pattern')
    return `${where}.${field}: must be a colony code: 1-100 characters of [A-Za-z0-9_-], starting with a letter or digit, at most 6 digits`;
  return `${where}.${field}: ${e.message ?? 'is invalid'}`;
}
