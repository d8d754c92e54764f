import type { ManipuladorEvento, OpcoesInscricao } from './consuming/subscriber';
import type {
  ConsultarEventosDto,
  DLQEntrada,
  DLQEstatisticas,
  EventoDoLog,
  ResultadoPaginado,
} from './log/event-log-reader';
/**
 * The colony-facing event contract of seed N-0a (sections 3.1 and 3.2), unchanged in names.
 */

/** What a colony gives to `publicar()` (seed 3.1). */
export interface PublicarEventoDto {
  /** Required. Event type, validated against the schema catalog (e.g. `demanda.recebida`). */
  tipo: string;
  /** Required. Non-null object, validated against the type's JSON Schema. */
  payload: Record<string, unknown>;
  /** Required. Publishing colony code (e.g. `D-1a`), at most 100 characters. */
  origem: string;
  /** Optional UUID; generated (v4) when absent. Publishing it twice is idempotent downstream. */
  event_id?: string;
  /** Optional semver of the payload schema; `'1.0.0'` when absent. */
  versao_schema?: string;
  /** Optional ISO-8601 instant; now when absent. */
  timestamp?: string;
  /** Optional UUID of the end-to-end flow; `event_id` when absent. */
  correlacao_id?: string;
  /** Optional UUID of the event that caused this one (seed 003 section 5). */
  causation_id?: string;
  /**
   * Optional UUID of the tenant the event belongs to (seed 003 section 5: only where it
   * applies). Inside a handler it defaults to the handled event's; `null` says "no tenant".
   * Carried as the CloudEvents extension `ce_tenantid`; a filter of `consultarEventos`.
   */
  tenant_id?: string | null;
  /**
   * Optional Kafka partition key. Default: `correlacao_id`, so one flow stays in order on one
   * partition. Give e.g. a `demanda_id` to order by business entity instead.
   */
  chave_particao?: string;
}

/** Where an event sits in Kafka. */
export interface PosicaoKafka {
  topico: string;
  particao: number;
  /** Offset as a decimal string (Kafka offsets are 64-bit). */
  offset: string;
}

/** An event as colonies receive it (seed 3.2). */
export interface EventoConsultado {
  /**
   * Global order assigned by the bridge when it writes `core.event_log`. `null` where the log
   * has not been consulted: in the value `publicar()` returns (the bridge writes the row moments
   * later; see docs/publishing.md — `{ confirmar: true }` waits for it) and in live deliveries.
   */
  sequence_number: bigint | null;
  event_id: string;
  tipo: string;
  versao_schema: string;
  /** ISO-8601 publication instant. */
  timestamp: string;
  origem: string;
  correlacao_id: string | null;
  /** Optional extension of Phase 2 (seed 003 section 5); `null` when the publisher gave none. */
  causation_id: string | null;
  /** Tenant of the event (seed 003 section 5); `null` when it does not apply. */
  tenant_id: string | null;
  /** Full payload when delivered live; the redacted copy when read from the log. */
  payload: Record<string, unknown>;
  /** ISO-8601 instant the log row was written; `null` until the bridge has written it. */
  criado_em: string | null;
  /** Kafka position, when the event came from (or went to) Kafka. */
  posicao?: PosicaoKafka;
}

/**
 * What colony code depends on: the bus's publishing, subscribing and reading operations.
 * `EventBus` (Kafka, the registry, the log in PostgreSQL) and `InMemoryEventBus`
 * (`@feromonios/sdk/testing`) both implement it; colony code that takes a `Barramento` runs on
 * either, and test/contract/ runs the same behaviours against both.
 */
export interface Barramento {
  publicar(dto: PublicarEventoDto): Promise<EventoConsultado>;
  publicarLote(dtos: PublicarEventoDto[]): Promise<EventoConsultado[]>;
  inscrever(tipo: string, colonia: string, manipulador: ManipuladorEvento, opcoes?: OpcoesInscricao): void;
  inscricoesProntas(colonia?: string): Promise<void>;
  consultarEventos(filtros?: ConsultarEventosDto): Promise<ResultadoPaginado<EventoDoLog>>;
  obterEventoPorId(eventId: string): Promise<EventoDoLog | null>;
  replayDeSequence(deSequence: number | bigint, tipos?: string[]): Promise<EventoDoLog[]>;
  replayStream(deSequence: number | bigint, tipos?: string[]): AsyncGenerator<EventoDoLog>;
  obterMaiorSequence(): Promise<bigint>;
  obterUltimoEventId(): Promise<string | null>;
  obterEstatisticasDLQ(): Promise<DLQEstatisticas>;
  obterPendentesDLQ(colonia: string): Promise<DLQEntrada[]>;
  encerrar(): Promise<void>;
}
