import type { ErrorObject, ValidateFunction } from 'ajv';
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
    timestamp_inicio: TIMESTAMP,
    timestamp_fim: TIMESTAMP,
    sequence_inicio: SEQUENCE,
    sequence_fim: SEQUENCE,
    limite: LIMITE,
    deslocamento: DESLOCAMENTO,
  },
} as const;

export const pageQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { colonia: COLONY, limite: LIMITE, deslocamento: DESLOCAMENTO },
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
  if (field === 'tipo')
    return `${where}.${field}: must be an event type name of characters [A-Za-z0-9_.-] (255 at most)`;
  if (e.keyword === 'pattern')
    return `${where}.${field}: must be a colony code: 1-100 characters of [A-Za-z0-9_-], starting with a letter or digit, at most 6 digits`;
  return `${where}.${field}: ${e.message ?? 'is invalid'}`;
}
