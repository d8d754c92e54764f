import type { ErrorObject, ValidateFunction } from 'ajv';
import { createAjv } from '../sdk/ajv';
import { HttpProblem } from './problem';

const NAME = { type: 'string', minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_.-]+$' } as const;
const UUID = { type: 'string', format: 'uuid' } as const;
const TIMESTAMP = { type: 'string', format: 'date-time' } as const;
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
    origem: NAME,
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
  properties: { colonia: NAME, limite: LIMITE, deslocamento: DESLOCAMENTO },
} as const;

export const coloniaQuery = {
  type: 'object',
  additionalProperties: false,
  required: ['colonia'],
  properties: { colonia: NAME },
} as const;

export const emptyQuery = { type: 'object', additionalProperties: false, properties: {} } as const;

export const uuidParam = (name: string) =>
  ({ type: 'object', required: [name], properties: { [name]: UUID } }) as const;

/** Body of `POST /api/events/dlq/reprocessar`: `{ "colonia": "D-5" }`, nothing else. */
export const reprocessarBody = {
  type: 'object',
  additionalProperties: false,
  required: ['colonia'],
  properties: { colonia: NAME },
} as const;

const ajv = createAjv();

/** A compiled validator that throws a 400 problem listing every violation. */
export function validator<T>(schema: object, where: 'query' | 'body' | 'path'): (value: unknown) => T {
  const validate: ValidateFunction = ajv.compile(schema);
  return (value) => {
    if (validate(value)) return value as T;
    const errors = (validate.errors ?? []).map((e) => describe(e, where));
    throw new HttpProblem(400, 'requisicao-invalida', 'Invalid request', errors.join('; '), { errors });
  };
}

function describe(e: ErrorObject, where: string): string {
  const field = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (e.keyword === 'additionalProperties')
    return `${where}: unknown parameter '${(e.params as { additionalProperty: string }).additionalProperty}'`;
  if (e.keyword === 'required')
    return `${where}: '${(e.params as { missingProperty: string }).missingProperty}' is required`;
  if (e.keyword === 'type' && e.params.type === 'string')
    return `${where}.${field}: must be given once, as a single value`;
  if (e.keyword === 'type' && e.params.type === 'object') return `${where}: must be a JSON object`;
  if (e.keyword === 'format')
    return `${where}.${field}: must be ${e.params.format === 'uuid' ? 'a UUID' : 'an ISO-8601 date-time with a time zone'}`;
  if (e.keyword === 'pattern' && /limite$/.test(field))
    return `${where}.${field}: must be an integer from 1 to 10000 (a page holds at most 500)`;
  if (e.keyword === 'pattern' && /deslocamento$/.test(field))
    return `${where}.${field}: must be a non-negative integer below 10^9`;
  if (e.keyword === 'pattern' && /^sequence_/.test(field))
    return `${where}.${field}: must be an integer from 0 to 9223372036854775807`;
  if (e.keyword === 'pattern' || e.keyword === 'maxLength' || e.keyword === 'minLength')
    return `${where}.${field}: must be a name of characters [A-Za-z0-9_.-] (${field === 'tipo' ? 255 : 100} at most)`;
  return `${where}.${field}: ${e.message ?? 'is invalid'}`;
}
