/**
 * @module @feromonios/sdk — what a colony imports: the bus (`publicar`, `inscrever`, reads of
 * the log, DLQ reprocessing), its options, the DTOs of the contract, every error it can throw,
 * the inbox and the outbox. Test helpers are in `@feromonios/sdk/testing`; the wire contract
 * the platform shares is `@feromonios/sdk/wire`; service plumbing is `@feromonios/sdk/service`.
 */
export { EventBus, type EstadoFalhaInscricao, type OpcoesPublicar } from './event-bus';
export type { Barramento, PublicarEventoDto, EventoConsultado, PosicaoKafka } from './contract';
export {
  defaultOpcoesEventBus,
  defaultEventBusOptions,
  type OpcoesEventBus,
  type OpcoesEventBusEntrada,
  type EventBusOptions,
  type EventBusInput,
} from './options';
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
  BrokerSecurityError,
  brokerSecurityFailure,
  WireFormatError,
  ConfirmationTimeoutError,
  HandlerTimeoutError,
  ThrottledError,
  isRetriable,
  type CausaSeguranca,
  type ErrorCode,
  type PublishStep,
} from './errors';
export { MAX_PAYLOAD_BYTES } from './wire/wire-format';
export { jsonLogger, silentLogger, type Logger, type LogFields, type LogLevel } from './runtime/logger';
export {
  busSecurityFromEnv,
  kafkaSecurity,
  securityEnv,
  securityFromEnv,
  type SaslCliente,
  type SecurityEnv,
  type SegurancaKafka,
  type SegurancaRegistry,
  type TlsCliente,
} from './runtime/connection-security';
export { kafkaConnection, kafkaSocketFactory } from './runtime/kafka-sockets';
export {
  MAX_MANIPULADORES_POR_TIPO,
  defaultOpcoesInscricao,
  type ManipuladorEvento,
  type OpcoesInscricao,
  type ContextoEntrega,
} from './consuming/subscriber';
export { criarTabelaInbox, type OpcoesInbox, type InboxOptions } from './consuming/inbox';
export { criarTabelaOutbox, type TransacaoColonia } from './outbox/outbox';
export { OutboxRelay, defaultOpcoesRelayOutbox, type OpcoesRelayOutbox } from './outbox/outbox-relay';
export {
  LIMITE_MAXIMO,
  LIMITE_TOTAL_EXATO,
  ESTIMATIVA_VALIDA_MS,
  type EventLogReader,
  type ConsultarEventosDto,
  type ResultadoPaginado,
  type EventoDoLog,
  type DLQEstatisticas,
  type DLQEntrada,
} from './log/event-log-reader';
export {
  defaultOpcoesReprocessamento,
  type OpcoesReprocessamento,
  type OpcoesAcaoDLQ,
  type ResultadoReprocessamento,
  type ReprocessamentoIniciado,
  type SimulacaoReprocessamento,
  type ResultadoAcaoDLQ,
  type RegistroReprocessamento,
  type FiltrosReprocessamentos,
} from './reprocessing/dlq-reprocessing';
export {
  DLQ_STATUS,
  type EntradaDLQ,
  type FiltrosEntradasDLQ,
  type ResumoDLQ,
  type StatusDLQ,
} from './reprocessing/dlq-entries';
export {
  FINGERPRINT_RE,
  HANDLER_SELECTOR_RE,
  MAX_EVENTOS_ACAO,
  MAX_IDS_SELECAO,
  MOTIVOS_ESTACIONAMENTO,
  REFERENCIA_RE,
  selecaoInteira,
  type MotivoEstacionamento,
  type SelecaoDLQ,
} from './reprocessing/dlq-selection';
// types that appear in the bus's public signatures (bus.catalog, bus.topics, bus.registry)
export type { SchemaCatalog, TipoCatalogado, VersaoCatalogada } from './catalog/catalog';
export type { SchemaRegistry } from './catalog/registry';
export type { SchemaSyncEntry } from './catalog/schema-sync';
export type { TopicNames, TopicSettings } from './wire/topics';
export type { SdkMetrics } from './runtime/metrics';
