/**
 * @module feromonios/sdk — the public surface colonies import. Test helpers live in
 * `sdk/testing`, never here.
 */
export { EventBus, type OpcoesPublicar } from './event-bus';
export type { PublicarEventoDto, EventoConsultado, PosicaoKafka } from './contract';
export { defaultEventBusOptions, type EventBusOptions, type EventBusInput } from './options';
export {
  ERROR_CODES,
  FeromoniosError,
  ConfigError,
  PublishValidationError,
  SchemaValidationError,
  CatalogError,
  RegistryError,
  BrokerError,
  BrokerRejectedError,
  WireFormatError,
  DatabaseError,
  ConfirmationTimeoutError,
  isRetriable,
  type ErrorCode,
  type PublishStep,
} from './errors';
export { SchemaCatalog, type TipoCatalogado, type VersaoCatalogada } from './catalog';
export { ConfluentSchemaRegistry, type SchemaRegistry } from './registry';
export { syncSchemas, checkSchemas, type SchemaSyncEntry } from './schema-sync';
export { TopicNames, ensureTopics, defaultTopicSettings, type TopicSettings } from './topics';
export { encodeValue, decodeValue, buildHeaders, parseHeaders, HEADER } from './wire-format';
export { MAX_PAYLOAD_BYTES } from './validation';
export { jsonLogger, silentLogger, type Logger } from './logger';
export {
  DLQ_HEADERS,
  HandlerTimeoutError,
  MAX_MANIPULADORES_POR_TIPO,
  defaultOpcoesInscricao,
  type ManipuladorEvento,
  type OpcoesInscricao,
  type ContextoEntrega,
} from './subscriber';
export { criarTabelaInbox, INBOX_TABLE, type InboxOptions } from './inbox';
export { criarTabelaOutbox, OUTBOX_TABLE, OUTBOX_CHANNEL, type TransacaoColonia } from './outbox';
export { OutboxRelay, defaultOpcoesRelayOutbox, type OpcoesRelayOutbox } from './outbox-relay';
export { REPROCESS_HEADERS, DLQ_OUTCOME_HEADER, type ReprocessOptions } from './reprocessing';
export {
  EventLogReader,
  LIMITE_MAXIMO,
  type ConsultarEventosDto,
  type ResultadoPaginado,
  type EventoDoLog,
  type DLQEstatisticas,
  type DLQEntrada,
} from './event-log-reader';
export { EventDecoder } from './event-decoder';
export {
  ThrottledError,
  defaultOpcoesReprocessamento,
  type OpcoesReprocessamento,
  type ResultadoReprocessamento,
  type RegistroReprocessamento,
  type FiltrosReprocessamentos,
} from './dlq-reprocessing';
