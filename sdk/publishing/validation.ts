import {
  isUuid,
  colonyCodeProblem,
  isStorableTimestamp,
  jsonProblem,
  textProblem,
  timestampProblem,
} from '../wire/storable';
import { MAX_PAYLOAD_BYTES } from '../wire/wire-format';

export { MAX_PAYLOAD_BYTES };

/**
 * How far ahead of the publisher's clock an event's `timestamp` may be (clock skew between
 * machines). Any past time is accepted — backfills keep the time the fact happened: the Kafka
 * record's own timestamp is the publish time, so an old event never falls under retention at
 * once (docs/publishing.md, "Timestamps").
 */
export const MAX_TIMESTAMP_AHEAD_MS = 5 * 60_000;

const describeDuration = (ms: number): string =>
  ms >= 86_400_000
    ? `${(ms / 86_400_000).toFixed(1)} days`
    : ms >= 3_600_000
      ? `${(ms / 3_600_000).toFixed(1)} h`
      : ms >= 60_000
        ? `${Math.round(ms / 60_000)} min`
        : `${Math.round(ms / 1000)} s`;
import { contextoCausal } from '../runtime/causal-context';
import { randomUUID } from 'node:crypto';
import type { SchemaCatalog, VersaoCatalogada } from '../catalog/catalog';
import type { EventoConsultado, PublicarEventoDto } from '../contract';
import { PublishValidationError, SchemaValidationError } from '../errors';

/** An event that passed every check, ready to be encoded. */
export interface EventoValidado {
  event_id: string;
  tipo: string;
  versao_schema: string;
  timestamp: string;
  origem: string;
  correlacao_id: string;
  causation_id: string | null;
  tenant_id: string | null;
  chave_particao: string | undefined;
  payload: Record<string, unknown>;
  /** The payload serialised once, reused for the wire value. */
  payloadJson: string;
  versao: VersaoCatalogada;
}

/**
 * An ISO-8601 date-time with a zone that PostgreSQL stores as the same instant: a real calendar
 * date, an offset within ±15:59, years 0001-9999 (`timestampProblem` in storable.ts says why not).
 */
export const isIsoTimestamp = isStorableTimestamp;

const fail = (
  code: ConstructorParameters<typeof PublishValidationError>[0],
  step: ConstructorParameters<typeof PublishValidationError>[1],
  msg: string,
  index?: number,
): never => {
  throw new PublishValidationError(code, step, msg, index);
};

/**
 * Seed 3.3, in this exact order (docs/publishing.md, "What `publicar` checks, in order"):
 * 1. payload is a non-null object; 2. normalise (event_id, versao_schema '1.0.0', timestamp,
 * correlacao_id = event_id — inside a handler, correlacao_id, causation_id and tenant_id default to the
 * handled event's, sdk/runtime/causal-context.ts); 3. UUID / ISO-8601 formats; 4. type exists, is not deprecated,
 * `origem` is one of the type's publishers in the catalog, the version has a schema; 5. Ajv draft
 * 2020-12 against that schema; 6. size ≤ 1 MB.
 * Each failure is a typed error naming its step; `index` names the event of a batch.
 */
export function validarEvento(
  dto: PublicarEventoDto,
  catalog: SchemaCatalog,
  index?: number,
  now: () => Date = () => new Date(),
): EventoValidado {
  const d = (dto ?? {}) as Partial<PublicarEventoDto>;
  // 1. payload shape
  const payload: unknown = d.payload;
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    fail(
      'PAYLOAD_NOT_OBJECT',
      'payload',
      `Payload deve ser um objeto não nulo (got ${payload === null ? 'null' : Array.isArray(payload) ? 'array' : typeof payload})`,
      index,
    );
  }
  // 2. normalise
  const event_id = d.event_id ?? randomUUID();
  const versao_schema = d.versao_schema ?? '1.0.0';
  const timestamp = d.timestamp ?? now().toISOString();
  // inside a handler, what is published continues the flow of the event being handled
  // (sdk/runtime/causal-context.ts) unless the caller said otherwise (null included)
  const causa = contextoCausal();
  const correlacao_id = d.correlacao_id ?? causa?.correlacao_id ?? event_id;
  // 3. formats
  if (!isUuid(event_id))
    fail('INVALID_EVENT_ID', 'event_id', `event_id must be a UUID, got ${JSON.stringify(event_id)}`, index);
  if (!isUuid(correlacao_id))
    fail(
      'INVALID_CORRELACAO_ID',
      'correlacao_id',
      `correlacao_id must be a UUID, got ${JSON.stringify(correlacao_id)}`,
      index,
    );
  if (d.causation_id !== undefined && d.causation_id !== null && !isUuid(d.causation_id)) {
    fail(
      'INVALID_CAUSATION_ID',
      'causation_id',
      `causation_id must be a UUID, got ${JSON.stringify(d.causation_id)}`,
      index,
    );
  }
  const tenant_id = d.tenant_id === undefined ? (causa?.tenant_id ?? null) : d.tenant_id;
  if (tenant_id !== null && !isUuid(tenant_id))
    fail('INVALID_TENANT_ID', 'tenant_id', `tenant_id must be a UUID or null, got ${JSON.stringify(tenant_id)}`, index);
  if (!isIsoTimestamp(timestamp))
    fail(
      'INVALID_TIMESTAMP',
      'timestamp',
      `timestamp ${timestampProblem(timestamp) ?? 'is invalid'}, got ${JSON.stringify(timestamp)}`,
      index,
    );
  const ahead = Date.parse(timestamp) - Date.now();
  if (ahead > MAX_TIMESTAMP_AHEAD_MS)
    fail(
      'INVALID_TIMESTAMP',
      'timestamp',
      `timestamp ${timestamp} is ${describeDuration(ahead)} ahead of this clock; at most ${describeDuration(MAX_TIMESTAMP_AHEAD_MS)} ahead is accepted (clock skew): give the time the fact happened, or omit it for now`,
      index,
    );
  const origemProblem = colonyCodeProblem(d.origem);
  if (origemProblem) fail('INVALID_FIELD', 'field', `origem ${origemProblem}`, index);
  const versaoProblem = textProblem(versao_schema, 20);
  if (versaoProblem) fail('INVALID_FIELD', 'field', `versao_schema ${versaoProblem}`, index);
  if (d.chave_particao !== undefined && (typeof d.chave_particao !== 'string' || d.chave_particao.length === 0)) {
    fail('INVALID_FIELD', 'field', `chave_particao must be a non-empty string`, index);
  }
  // every string of the payload must be storable (JSONB refuses NUL and unpaired surrogates)
  const payloadProblem = jsonProblem(payload);
  if (payloadProblem) fail('INVALID_FIELD', 'payload', `payload ${payloadProblem}`, index);
  // 4. type and version
  if (typeof d.tipo !== 'string')
    return fail(
      'UNKNOWN_TYPE',
      'registry',
      `Tipo de evento não registrado no Registry: ${JSON.stringify(d.tipo)} — tipo must be a string naming a catalog type (${catalog
        .tipos()
        .filter((t) => t.status === 'active')
        .map((t) => t.tipo)
        .join(', ')})`,
      index,
    );
  const tipo = catalog.tipo(d.tipo);
  if (!tipo)
    return fail(
      'UNKNOWN_TYPE',
      'registry',
      `Tipo de evento não registrado no Registry: '${d.tipo}' — tipo must be one of the catalog's types (${catalog
        .tipos()
        .filter((t) => t.status === 'active')
        .map((t) => t.tipo)
        .join(', ')}), or add it under schemas/`,
      index,
    );
  if (tipo.status === 'deprecated')
    fail(
      'DEPRECATED_TYPE',
      'registry',
      `tipo '${d.tipo}' is deprecated and can no longer be published: ${tipo.descricao}`,
      index,
    );
  // 4b. the publisher: `origem` must be a colony the catalog allows to publish this type
  // (type.json "publicadores"); the bridge quarantines the same event from any other producer
  if (!tipo.publicadores.includes(d.origem as string))
    fail(
      'ORIGEM_NOT_ALLOWED',
      'origem',
      `origem '${d.origem as string}' may not publish ${d.tipo}: the catalog allows ${tipo.publicadores.join(', ')} (schemas/${d.tipo}/type.json "publicadores")`,
      index,
    );
  const versao = catalog.versao(d.tipo, versao_schema);
  if (!versao) {
    return fail(
      'UNKNOWN_VERSION',
      'registry',
      `versao_schema '${versao_schema}' of ${d.tipo} has no schema: use one of ${tipo.versoes.map((v) => v.versao).join(', ')} (omit it for 1.0.0)`,
      index,
    );
  }
  // 5. payload against the schema
  if (!versao.validate(payload)) {
    const errors = (versao.validate.errors ?? []).map((e) => ({
      instancePath: e.instancePath,
      keyword: e.keyword,
      message: e.message,
    }));
    const summary = errors.map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`).join('; ');
    const err = new SchemaValidationError(
      `Payload inválido para ${d.tipo}@${versao_schema}: ${summary}`,
      d.tipo,
      versao_schema,
      undefined,
      'publish',
      errors,
    );
    throw Object.assign(err, { index });
  }
  // 6. size
  const payloadJson = JSON.stringify(payload);
  const size = Buffer.byteLength(payloadJson, 'utf8');
  if (size > MAX_PAYLOAD_BYTES)
    fail('PAYLOAD_TOO_LARGE', 'size', `payload has ${size} bytes of JSON; the limit is ${MAX_PAYLOAD_BYTES}`, index);

  return {
    event_id,
    tipo: d.tipo,
    versao_schema,
    timestamp,
    origem: d.origem as string,
    correlacao_id,
    causation_id: d.causation_id === undefined ? (causa?.event_id ?? null) : d.causation_id,
    // canonical (lowercase) as PostgreSQL returns it, so filters compare equal everywhere
    tenant_id: tenant_id === null ? null : tenant_id.toLowerCase(),
    chave_particao: d.chave_particao,
    payload: payload as Record<string, unknown>,
    payloadJson,
    versao,
  };
}

/** The `EventoConsultado` of a validated event not yet in the log (no sequence, no position). */
export function eventoValidado(v: EventoValidado): EventoConsultado {
  return {
    sequence_number: null,
    event_id: v.event_id,
    tipo: v.tipo,
    versao_schema: v.versao_schema,
    timestamp: v.timestamp,
    origem: v.origem,
    correlacao_id: v.correlacao_id,
    causation_id: v.causation_id,
    tenant_id: v.tenant_id,
    payload: v.payload,
    criado_em: null,
  };
}
