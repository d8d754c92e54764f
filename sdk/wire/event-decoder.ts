import type { KafkaMessage } from 'kafkajs';
import { parseSchemaUrn, type SchemaCatalog, type VersaoCatalogada } from '../catalog/catalog';
import type { EventoConsultado } from '../contract';
import { SchemaValidationError, WireFormatError } from '../errors';
import type { SchemaRegistry } from '../catalog/registry';
import { colonyCodeProblem, isUuid, jsonProblem, textProblem, timestampProblem } from './storable';
import { MAX_PAYLOAD_BYTES, decodeValue, parseHeaders } from './wire-format';

/**
 * Turns a Kafka message in the documented format (docs/wire-format.md) — produced by the SDK
 * or by any other client — into an `EventoConsultado`, checking everything a publisher should
 * have: framing, schema id known to the registry and matching the `ce_type` /
 * `ce_versaoschema` headers, JSON, size, and the payload against the schema. Each failure is a
 * `WireFormatError` (or `SchemaValidationError`) with a reason the bridge quarantines under.
 * Schema ids are cached: a warm decoder keeps working while the registry is unreachable.
 */
/** A record's headers, schema id and parsed value, before its schema id's version is known. */
interface Unframed {
  meta: ReturnType<typeof parseHeaders>;
  schemaId: number;
  payload: unknown;
}

export class EventDecoder {
  private readonly byId = new Map<number, VersaoCatalogada>();

  constructor(
    private readonly registry: SchemaRegistry,
    private readonly catalog: SchemaCatalog,
    private readonly maxPayloadBytes = MAX_PAYLOAD_BYTES,
  ) {}

  /** `validateSchema: false` for redacted log copies sent for reprocessing (fields are missing by design). */
  async decode(
    message: Pick<KafkaMessage, 'value' | 'headers'>,
    posicao?: EventoConsultado['posicao'],
    options: { validateSchema?: boolean } = {},
  ): Promise<EventoConsultado> {
    const framed = this.unframe(message);
    return this.check(framed, await this.versionOf(framed.schemaId), posicao, options);
  }

  /**
   * `decode` without a promise, for a record whose schema id this decoder has resolved before (the
   * usual case: a consumer's or the bridge's every record after the first of its schema):
   * `undefined` when it has not (then `decode`, which asks the registry). Throws what `decode`
   * rejects with, in the same order of checks.
   */
  decodeKnown(
    message: Pick<KafkaMessage, 'value' | 'headers'>,
    posicao?: EventoConsultado['posicao'],
    options: { validateSchema?: boolean } = {},
  ): EventoConsultado | undefined {
    const framed = this.unframe(message);
    const versao = this.byId.get(framed.schemaId);
    return versao ? this.check(framed, versao, posicao, options) : undefined;
  }

  /** The size, the headers and the value's framing and JSON: what comes before the schema id's version. */
  private unframe(message: Pick<KafkaMessage, 'value' | 'headers'>): Unframed {
    if (message.value && message.value.length - 5 > this.maxPayloadBytes) {
      throw new WireFormatError(
        'too-large',
        `payload of ${message.value.length - 5} bytes exceeds ${this.maxPayloadBytes}`,
      );
    }
    const meta = parseHeaders(message.headers);
    const { schemaId, payload } = decodeValue(message.value);
    return { meta, schemaId, payload };
  }

  /** Everything after the schema id's version is known: the headers against it, the payload against its schema. */
  private check(
    { meta, schemaId, payload }: Unframed,
    versao: VersaoCatalogada,
    posicao: EventoConsultado['posicao'] | undefined,
    { validateSchema = true }: { validateSchema?: boolean },
  ): EventoConsultado {
    if (versao.tipo !== meta.tipo || versao.versao !== meta.versao_schema) {
      throw new WireFormatError(
        'unknown-schema-id',
        `schema id ${schemaId} is ${versao.tipo} version ${versao.versao}, but the headers name another type or version`,
      );
    }
    if (
      !isUuid(meta.event_id) ||
      !isUuid(meta.correlacao_id) ||
      (meta.causation_id !== null && !isUuid(meta.causation_id)) ||
      (meta.tenant_id !== null && !isUuid(meta.tenant_id))
    ) {
      throw new WireFormatError(
        'invalid-header',
        'ce_id, ce_correlacaoid, ce_causationid and ce_tenantid must be UUIDs',
      );
    }
    // The shared rule of what PostgreSQL accepts (storable.ts): a record that passes here can
    // always be written, so it can never block its partition in the bridge.
    const timeProblem = timestampProblem(meta.timestamp);
    const sourceProblem = colonyCodeProblem(meta.origem);
    const typeProblem = textProblem(meta.tipo, 255);
    const versionProblem = textProblem(meta.versao_schema, 20);
    if (timeProblem || sourceProblem || typeProblem || versionProblem)
      throw new WireFormatError(
        'invalid-header',
        [
          ['ce_time', timeProblem],
          ['ce_source', sourceProblem],
          ['ce_type', typeProblem],
          ['ce_versaoschema', versionProblem],
        ]
          .filter(([, p]) => p !== undefined)
          .map(([h, p]) => `${h} ${p}`)
          .join('; '),
      );
    if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
      throw new WireFormatError('schema-invalid', 'payload is not a JSON object');
    }
    // A deprecated type is refused on publish (seed 3.3); a non-SDK producer does not get around it.
    // Reprocessing (`validateSchema: false`) sends back events already in the log: they pass.
    if (validateSchema && this.catalog.tipo(versao.tipo)?.status === 'deprecated')
      throw new WireFormatError('deprecated-type', `type ${versao.tipo} is deprecated: it is no longer accepted`);
    // The catalog's publishers bind `origem` to the colonies allowed to write the type (the
    // broker's ACLs keep other principals off the topic; this keeps a permitted writer from
    // signing as another colony). Reprocessed events were checked when they were first accepted.
    const publicadores = this.catalog.tipo(versao.tipo)?.publicadores ?? [];
    if (validateSchema && !publicadores.includes(meta.origem))
      throw new WireFormatError(
        'origem-not-allowed',
        `ce_source ${JSON.stringify(meta.origem)} may not publish ${versao.tipo}: the catalog allows ${publicadores.join(', ')}`,
      );
    const payloadProblem = jsonProblem(payload);
    if (payloadProblem) throw new WireFormatError('schema-invalid', `payload ${payloadProblem}`);
    if (validateSchema && !versao.validate(payload)) {
      const errors = (versao.validate.errors ?? []).map((e) => ({
        instancePath: e.instancePath,
        keyword: e.keyword,
        message: e.message,
      }));
      throw new SchemaValidationError(
        `payload invalid for ${versao.tipo} version ${versao.versao}: ${errors.map((e) => `${e.instancePath || '/'} ${e.message ?? e.keyword}`).join('; ')}`,
        versao.tipo,
        versao.versao,
        schemaId,
        'sink',
        errors,
      );
    }
    const evento: EventoConsultado = {
      sequence_number: null,
      event_id: meta.event_id,
      tipo: meta.tipo,
      versao_schema: meta.versao_schema,
      timestamp: meta.timestamp,
      origem: meta.origem,
      correlacao_id: meta.correlacao_id,
      causation_id: meta.causation_id,
      tenant_id: meta.tenant_id,
      payload: payload as Record<string, unknown>,
      criado_em: null,
    };
    if (posicao) evento.posicao = posicao;
    return evento;
  }

  /** The catalog version a registry schema id stands for (by its `$id` urn). */
  async versionOf(schemaId: number): Promise<VersaoCatalogada> {
    const cached = this.byId.get(schemaId);
    if (cached) return cached;
    let text: string;
    try {
      text = await this.registry.schemaById(schemaId);
    } catch (err) {
      if ((err as { status?: number }).status === 404)
        throw new WireFormatError('unknown-schema-id', `schema id ${schemaId} is not in the registry`);
      throw err; // registry unavailable: retriable, not the record's fault
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new WireFormatError('unknown-schema-id', `schema id ${schemaId} is not a JSON schema`);
    }
    const urn = parseSchemaUrn((parsed as { $id?: unknown }).$id);
    const versao = urn && this.catalog.versao(urn.tipo, urn.versao);
    if (!versao)
      throw new WireFormatError('unknown-schema-id', `schema id ${schemaId} is not a version of the catalog`);
    this.byId.set(schemaId, versao);
    return versao;
  }
}
