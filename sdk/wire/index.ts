/**
 * @module @feromonios/sdk/wire — the wire contract both sides of Kafka share: record encoding
 * and headers, topic names, the event decoder, redaction, what PostgreSQL may store, and the
 * schema catalog and registry. The colony SDK, the bridge, the audit API and platform tools
 * import it; colonies do not need it (docs/wire-format.md).
 */
export {
  ACCEPTED_CONTENT_TYPES,
  CONTENT_TYPE,
  HEADER,
  MAGIC_BYTE,
  MAX_PAYLOAD_BYTES,
  SPEC_VERSION,
  buildHeaders,
  decodeValue,
  encodeValue,
  headerString,
  parseHeaders,
} from './wire-format';
export { DLQ_HEADERS, DLQ_OUTCOME_HEADER, ORDER_HEADER, REPROCESS_HEADERS, parseOrder } from './headers';
/** The errors the decoder throws, for code that loads the wire contract alone (the bridge's decode thread). */
export { FeromoniosError, SchemaValidationError, WireFormatError } from '../errors';
export {
  MAX_MESSAGE_BYTES,
  TopicNames,
  defaultTopicSettings,
  ensureTopics,
  partitionCounts,
  withAdmin,
  type TopicSettings,
} from './topics';
export { EventDecoder } from './event-decoder';
export {
  keyedHash,
  policyProblems,
  redactPayload,
  uncoveredFields,
  type OpcoesRedacao,
  type RedactionPolicy,
  type RedactionRule,
} from './redaction';
export { REDACTED, UNVERIFIABLE, scrubText } from './error-text';
export {
  COLONY_CODE_RE,
  OPERATOR_ID_RE,
  colonyCodeProblem,
  isStorableTimestamp,
  isStorableUtcMillis,
  isUuid,
  jsonProblem,
  operatorIdProblem,
  readTimestamp,
  storableText,
  textProblem,
  timestampProblem,
} from './storable';
export {
  DEFAULT_SCHEMAS_DIR,
  SchemaCatalog,
  compareSemver,
  parseSchemaUrn,
  schemaUrn,
  type TipoCatalogado,
  type VersaoCatalogada,
} from '../catalog/catalog';
export { createAjv } from '../catalog/ajv';
export { COLONY_SCHEMA_RE } from '../catalog/colony-schema';
export { ConfluentSchemaRegistry, type OpcoesRegistroConfluent, type SchemaRegistry } from '../catalog/registry';
export { checkSchemas, syncSchemas, type SchemaSyncEntry } from '../catalog/schema-sync';
export { diffSchemas, type SchemaChange } from '../catalog/schema-diff';
export { reprocessMessage, type OpcoesReprocesso } from '../reprocessing/reprocessing';
