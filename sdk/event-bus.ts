import { kafkaLogs } from './runtime/kafka-logs';
import { kafkaConnection } from './runtime/kafka-sockets';
import { Kafka, logLevel as kafkaLogLevel } from 'kafkajs';
import { SchemaCatalog } from './catalog/catalog';
import type { Barramento, EventoConsultado, PublicarEventoDto } from './contract';
import { ConfirmationTimeoutError, FeromoniosError } from './errors';
import { isUuid } from './wire/storable';
import { LogConfirmations } from './publishing/log-confirmations';
import { escreverNoOutbox, type TransacaoColonia } from './outbox/outbox';
import { OutboxRelay, type OpcoesRelayOutbox } from './outbox/outbox-relay';
import { eventoValidado, validarEvento } from './publishing/validation';
import { jsonLogger, type Logger } from './runtime/logger';
import { SdkMetrics } from './runtime/metrics';
import { resolveOptions, type OpcoesEventBusEntrada, type OpcoesEventBus } from './options';
import { Publisher } from './publishing/publisher';
import { ConfluentSchemaRegistry, type SchemaRegistry } from './catalog/registry';
import { reprocessMessage, type OpcoesReprocesso } from './reprocessing/reprocessing';
import { SchemaIdResolver } from './catalog/schema-ids';
import { syncSchemas, type SchemaSyncEntry } from './catalog/schema-sync';
import pg from 'pg';
import { EventDecoder } from './wire/event-decoder';
import {
  EventLogReader,
  type ConsultarEventosDto,
  type DLQEntrada,
  type DLQEstatisticas,
  type EventoDoLog,
  type ResultadoPaginado,
} from './log/event-log-reader';
import {
  DlqReprocessor,
  type FiltrosReprocessamentos,
  type OpcoesAcaoDLQ,
  type OpcoesReprocessamento,
  type RegistroReprocessamento,
  type ReprocessamentoIniciado,
  type ResultadoAcaoDLQ,
  type ResultadoReprocessamento,
  type SimulacaoReprocessamento,
} from './reprocessing/dlq-reprocessing';
import { DlqEntries, type EntradaDLQ, type FiltrosEntradasDLQ, type ResumoDLQ } from './reprocessing/dlq-entries';
import type { MotivoEstacionamento, SelecaoDLQ } from './reprocessing/dlq-selection';
import {
  ColonySubscriber,
  type FalhaInscricao,
  type ManipuladorEvento,
  type OpcoesInscricao,
} from './consuming/subscriber';

/** Why a colony's subscription is not consuming: its last failure, typed (docs/consuming.md). */
export type EstadoFalhaInscricao = Omit<FalhaInscricao, 'causaMetrica'>;
import { TopicNames } from './wire/topics';

/** Options of one `publicar` call. */
export interface OpcoesPublicar {
  /** Resolve only once the bridge wrote the event to `core.event_log`, with its `sequence_number`. */
  confirmar?: boolean;
  /** How long to wait for the log, in milliseconds (default: the bus's `timeoutConfirmacaoMs`). */
  timeoutConfirmacaoMs?: number;
}

/**
 * The event bus colonies use: the seed's `EventBusService` contract over Kafka.
 *
 *   const bus = new EventBus({ brokers: ['127.0.0.1:9092'], registryUrl, clientId: 'D-1a' });
 *   const evento = await bus.publicar({ tipo: 'demanda.recebida', origem: 'D-1a', payload });
 *   await bus.encerrar();
 */
export class EventBus implements Barramento {
  readonly options: OpcoesEventBus;
  readonly catalog: SchemaCatalog;
  readonly topics: TopicNames;
  readonly registry: SchemaRegistry;
  readonly metrics: SdkMetrics;
  readonly logger: Logger;
  private readonly kafka: Kafka;
  private readonly publisher: Publisher;
  private readonly decoder: EventDecoder;
  private readonly schemaIds: SchemaIdResolver;
  private readonly colonias = new Map<string, ColonySubscriber>();
  private closed = false;
  private reader: EventLogReader | undefined;
  private reprocessor: DlqReprocessor | undefined;
  private dlqEntries: DlqEntries | undefined;
  private confirmations: LogConfirmations | undefined;
  private readonly relays: OutboxRelay[] = [];
  private ownPool: pg.Pool | undefined;

  constructor(input: OpcoesEventBusEntrada) {
    this.options = resolveOptions(input);
    const o = this.options;
    this.logger = o.logger ?? jsonLogger('feromonios-sdk');
    this.catalog = SchemaCatalog.load(o.schemasDir);
    this.topics = new TopicNames(o.namespace);
    this.registry =
      o.registry ??
      new ConfluentSchemaRegistry({
        url: o.registryUrl ?? '',
        auth: o.registryAuth,
        timeoutMs: o.registryTimeoutMs,
        retries: o.registryRetries,
      });
    this.metrics = new SdkMetrics(o.metricsRegistry);
    this.kafka = new Kafka({
      clientId: o.clientId,
      brokers: o.brokers,
      ...kafkaConnection(o.seguranca),
      connectionTimeout: 3000,
      requestTimeout: Math.max(1000, o.publishTimeoutMs),
      retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 5 },
      logLevel: kafkaLogLevel.WARN,
      logCreator: kafkaLogs(this.logger),
    });
    this.decoder = new EventDecoder(this.registry, this.catalog);
    this.schemaIds = new SchemaIdResolver(this.registry, this.topics);
    this.publisher = new Publisher({
      kafka: this.kafka,
      catalog: this.catalog,
      schemaIds: this.schemaIds,
      topics: this.topics,
      topicSettings: o.topics,
      logger: this.logger,
      metrics: this.metrics,
      timeoutMs: o.publishTimeoutMs,
    });
  }

  /**
   * Validates the event in the seed's order (section 3.3) and produces it. Resolves when the
   * broker acknowledged it on every in-sync replica (`acks=all`). The returned
   * `EventoConsultado` carries the full payload and its Kafka `posicao`; `sequence_number` and
   * `criado_em` are `null` because the bridge assigns them when it writes `core.event_log`
   * moments later (docs/publishing.md) — unless `opcoes.confirmar` is set: then it resolves once
   * the event is in the log, with the real `sequence_number` (needs `databaseUrl` or `pool`).
   * Throws a typed error naming the failed step.
   */
  async publicar(dto: PublicarEventoDto, opcoes: OpcoesPublicar = {}): Promise<EventoConsultado> {
    this.assertOpen();
    if (!opcoes.confirmar) return this.publisher.publicar(dto);
    return this.publicarConfirmado(dto, opcoes.timeoutConfirmacaoMs ?? this.options.timeoutConfirmacaoMs);
  }

  /**
   * Confirmed publishing (seed 3.4 and 8.2: the MVP returned the inserted row). An event_id
   * already in the log returns that logged record — redacted payload, `redigido: true` — and
   * nothing is produced (seed T9). Otherwise the event is produced, then awaited in
   * `core.event_log`: the result carries the full payload, the Kafka position, and the log's
   * `sequence_number` and `criado_em`. Past the timeout: `ConfirmationTimeoutError` (retriable;
   * the event was acknowledged and publishing it again with its event_id is safe).
   */
  private async publicarConfirmado(dto: PublicarEventoDto, timeoutMs: number): Promise<EventoConsultado> {
    const t0 = process.hrtime.bigint();
    const v = validarEvento(dto, this.catalog); // fail fast, in the seed's order, before any read
    const confirmations = (this.confirmations ??= new LogConfirmations(this.database(), () =>
      this.leitor().obterMaiorSequence(),
    ));
    await confirmations.preparar(); // the tail starts before our event can land
    if (dto.event_id !== undefined) {
      const existing = await this.leitor().obterEventoPorId(v.event_id);
      if (existing) {
        this.observeConfirmation(v.tipo, 'duplicate', t0);
        return existing;
      }
    }
    const [evento] = (await this.publisher.publicarValidados([v])) as [EventoConsultado];
    const row = await confirmations.aguardar(evento.event_id, timeoutMs);
    if (!row) {
      this.observeConfirmation(v.tipo, 'timeout', t0);
      throw new ConfirmationTimeoutError(evento, timeoutMs);
    }
    this.observeConfirmation(v.tipo, 'ok', t0);
    // the row as the log holds it (the MVP returned the inserted row), with the full payload
    return { ...evento, sequence_number: row.sequence_number, timestamp: row.timestamp, criado_em: row.criado_em };
  }

  private observeConfirmation(tipo: string, result: string, t0: bigint): void {
    this.metrics.confirmation.observe({ tipo, result }, Number(process.hrtime.bigint() - t0) / 1e9);
  }

  /**
   * Transactional outbox (seed 003 §6): validates `dto` exactly as `publicar` does, then writes
   * it to the colony's outbox table inside `trx` — a `pg` client after `BEGIN`, or a knex
   * transaction — so the event exists if and only if the business transaction commits. The
   * relay (`iniciarRelayOutbox`) publishes it after the commit. The outbox's schema is the
   * `outbox.schema` option (or `opcoes.schema`). Returns the event (no Kafka position yet).
   */
  async publicarNaTransacao(
    trx: TransacaoColonia,
    dto: PublicarEventoDto,
    opcoes: { schema?: string } = {},
  ): Promise<EventoConsultado> {
    this.assertOpen();
    const schema = opcoes.schema ?? this.options.outbox?.schema;
    if (!schema)
      throw new FeromoniosError(
        'CONFIG_INVALID',
        'publicarNaTransacao needs the `outbox.schema` option (or opcoes.schema)',
      );
    const v = validarEvento(dto, this.catalog);
    await escreverNoOutbox(trx, schema, v);
    return eventoValidado(v); // in the outbox, not in Kafka yet: no position
  }

  /**
   * Starts the outbox relay of this colony (docs/outbox.md): publishes committed outbox rows in
   * order, at-least-once, one active relay per schema across instances. `encerrar()` stops it.
   */
  async iniciarRelayOutbox(opcoes: Partial<OpcoesRelayOutbox> = {}): Promise<OutboxRelay> {
    this.assertOpen();
    const pool = opcoes.pool ?? this.options.outbox?.pool;
    const schema = opcoes.schema ?? this.options.outbox?.schema;
    if (!pool || !schema)
      throw new FeromoniosError(
        'CONFIG_INVALID',
        'the outbox relay needs `outbox.pool` and `outbox.schema` (options or arguments)',
      );
    const relay = new OutboxRelay(
      { ...opcoes, pool, schema },
      {
        catalog: this.catalog,
        publicarIsolandoRecusas: (vs) => this.publisher.publicarIsolandoRecusas(vs),
        logger: this.logger,
        metrics: this.metrics,
      },
    );
    await relay.iniciar();
    this.relays.push(relay);
    return relay;
  }

  /**
   * Publishes several events: every one is validated before any is produced (the first
   * failure throws with its `index` and nothing is sent), then all go out in one request per
   * broker. Order is kept within each partition.
   */
  async publicarLote(dtos: PublicarEventoDto[]): Promise<EventoConsultado[]> {
    this.assertOpen();
    return this.publisher.publicarLote(dtos);
  }

  /**
   * Registers a colony's handler for one event type (seed 4.2), synchronously. Each colony is
   * one consumer group; the calls a colony makes at boot join it once, a later call still
   * works. Handlers run independently under protection: span, metrics, bounded retries with
   * backoff, timeout, then the colony's DLQ topic — the partition always moves on.
   * `await bus.inscricoesProntas()` resolves once the groups have joined and fixed their
   * starting offsets: anything published after it is delivered.
   */
  inscrever(tipo: string, colonia: string, manipulador: ManipuladorEvento, opcoes: OpcoesInscricao = {}): void {
    this.assertOpen();
    if (typeof manipulador !== 'function') throw new FeromoniosError('INVALID_FIELD', 'manipulador must be a function');
    if (!this.catalog.tipo(tipo))
      throw new FeromoniosError('UNKNOWN_TYPE', `Tipo de evento não registrado no Registry: '${tipo}'`);
    this.topics.dlq(colonia); // validates the colony code
    let sub = this.colonias.get(colonia);
    if (!sub) {
      sub = new ColonySubscriber({
        kafka: this.kafka,
        colonia,
        topics: this.topics,
        topicSettings: this.options.topics,
        decoder: this.decoder,
        logger: this.logger,
        metrics: this.metrics,
        partitionsConcurrently: this.options.consumo.particoesEmParalelo,
        dedupWindow: this.options.consumo.janelaDeduplicacao,
        fromBeginning: this.options.consumo.desdeOInicio,
        sessionTimeoutMs: this.options.consumo.sessionTimeoutMs,
      });
      this.colonias.set(colonia, sub);
    }
    sub.add(tipo, manipulador, opcoes);
  }

  /**
   * Sends an event back to one colony (seed: `reentregarParaColonia`), through the colony's
   * reprocessing topic `<ns>.reprocessar.<colonia>`: whichever instance of the colony consumes it
   * runs the handlers with the same protection as live delivery (retries, timeout, DLQ), and the
   * outcome goes to the colony's DLQ topic (`resolved`, or a new failure). Resolves when the
   * broker acknowledged the record. `opcoes.manipulador` reruns only that handler;
   * `opcoes.redigido` marks a redacted log copy (its schema is not checked).
   */
  async reentregarParaColonia(
    tipo: string,
    colonia: string,
    evento: EventoConsultado,
    opcoes: OpcoesReprocesso = {},
  ): Promise<void> {
    this.assertOpen();
    const versao = this.catalog.versao(tipo, evento.versao_schema);
    if (!versao)
      throw new FeromoniosError(
        'UNKNOWN_VERSION',
        `versao_schema '${evento.versao_schema}' of ${tipo} has no schema in this catalog`,
      );
    const id = await this.schemaIds.idOf(versao);
    await this.publisher.sendRaw(this.topics.reprocessar(colonia), [reprocessMessage({ ...evento, tipo }, id, opcoes)]);
  }

  /**
   * Resolves when every colony's group (or `colonia`'s) has joined with its subscriptions and
   * resolved where it starts reading: an event published afterwards reaches the handlers.
   */
  async inscricoesProntas(colonia?: string): Promise<void> {
    const subs = colonia ? [this.colonias.get(colonia)] : [...this.colonias.values()];
    await Promise.all(subs.map((s) => (s ? s.pronto() : Promise.resolve())));
  }

  /**
   * Each colony's consumer, for the colony's own `/ready`: `consumindo` is false while its
   * subscription is being (re)tried — the broker unreachable at boot, or after a crash — which
   * the SDK does by itself, with backoff (`feromonios_subscriber_restarts_total`). `falha` says
   * why while it is not consuming: `code` `BROKER_AUTHORIZATION` with `causa` `group` or `topic`
   * when the broker's ACLs refuse this colony's principal (docs/security.md), which waiting does
   * not fix; `BROKER_UNAVAILABLE` when the brokers are only unreachable.
   */
  estadoDasInscricoes(): Array<{ colonia: string; consumindo: boolean; falha?: EstadoFalhaInscricao }> {
    return [...this.colonias.entries()].map(([colonia, sub]) => {
      const falha = sub.ultimaFalha;
      return { colonia, consumindo: sub.consumindo, ...(falha ? { falha } : {}) };
    });
  }

  /** Seed 4.3: paginated query of the log (`limite` capped at 500), redacted payloads. */
  consultarEventos(filtros: ConsultarEventosDto = {}): Promise<ResultadoPaginado<EventoDoLog>> {
    return this.leitor().consultarEventos(filtros);
  }

  /** The logged event, or `null`. */
  obterEventoPorId(eventId: string): Promise<EventoDoLog | null> {
    return this.leitor().obterEventoPorId(eventId);
  }

  /** Seed 4.4: events after `deSequence`, in batches of 1000, at most 100 batches. */
  replayDeSequence(deSequence: number | bigint, tipos?: string[]): Promise<EventoDoLog[]> {
    return this.leitor().replayDeSequence(deSequence, tipos);
  }

  /** The same range as an async iterator that never holds the range in memory (no cap). */
  replayStream(deSequence: number | bigint, tipos?: string[]): AsyncGenerator<EventoDoLog> {
    return this.leitor().replayStream(deSequence, tipos);
  }

  /** Highest `sequence_number` in the log (0 when empty): the seed of a colony's cursor. */
  obterMaiorSequence(): Promise<bigint> {
    return this.leitor().obterMaiorSequence();
  }

  /** Where a logged event was in Kafka (topic, partition, offset); null for rows logged without it. */
  obterPosicaoKafka(eventId: string): Promise<{ topic: string; partition: number; offset: string } | null> {
    return this.leitor().obterPosicaoKafka(eventId);
  }

  obterUltimoEventId(): Promise<string | null> {
    return this.leitor().obterUltimoEventId();
  }

  /** Seed 4.5: pending (`pendente` + `retrying`) DLQ entries per colony. */
  obterEstatisticasDLQ(): Promise<DLQEstatisticas> {
    return this.leitor().obterEstatisticasDLQ();
  }

  obterPendentesDLQ(colonia: string): Promise<DLQEntrada[]> {
    return this.leitor().obterPendentesDLQ(colonia);
  }

  /**
   * Seed 4.5, audited (seed 003 §8): sends the colony's pending DLQ entries back to it through
   * `<ns>.reprocessar.<colonia>` — the original full payload while the colony's DLQ topic still
   * retains it, else the redacted log copy flagged `redigido` — and marks them `retrying`. Every
   * call is recorded in `core.dlq_reprocessamento` (who, when, which events, outcome). The
   * colony's handlers then resolve each entry, or it fails again (docs/consuming.md, "Reprocessing").
   * Throws `ThrottledError` (`RATE_LIMITED`) inside `opcoes.intervaloMinimoMs` of the last call.
   */
  reprocessarPendentesDLQ(colonia: string, opcoes: OpcoesReprocessamento = {}): Promise<ResultadoReprocessamento> {
    return this.reprocessador().reprocessar(colonia, opcoes);
  }

  /**
   * Reprocessing v2 (docs/reprocessing.md): like `reprocessarPendentesDLQ`, for a selection of
   * the colony's entries (handler, event_ids, error fingerprint, failure time range), at most
   * `opcoes.maxEventos`, paced at `opcoes.taxa` events/s, with the loop guard
   * (`opcoes.maxReprocessamentos`). Resolves when every entry is sent.
   */
  reprocessarDLQ(selecao: SelecaoDLQ, opcoes: OpcoesReprocessamento = {}): Promise<ResultadoReprocessamento> {
    return this.reprocessador().reprocessar(selecao, opcoes);
  }

  /** `reprocessarDLQ` that resolves once the selection is claimed and audited; `concluido` settles at the end. */
  iniciarReprocessamentoDLQ(selecao: SelecaoDLQ, opcoes: OpcoesReprocessamento = {}): Promise<ReprocessamentoIniciado> {
    return this.reprocessador().iniciar(selecao, opcoes);
  }

  /** Dry run: what `reprocessarDLQ` would send (and with which payload) and park. Changes nothing; audited. */
  simularReprocessamentoDLQ(
    selecao: SelecaoDLQ,
    opcoes: OpcoesReprocessamento = {},
  ): Promise<SimulacaoReprocessamento> {
    return this.reprocessador().simular(selecao, opcoes);
  }

  /**
   * Parks the selected `pendente` entries as `failed_permanent`, the reason a code of
   * `MOTIVOS_ESTACIONAMENTO` plus an optional ticket reference (never free text). Audited.
   */
  estacionarDLQ(
    selecao: SelecaoDLQ,
    motivo: { motivo: MotivoEstacionamento; referencia?: string },
    opcoes: OpcoesAcaoDLQ = {},
  ): Promise<ResultadoAcaoDLQ> {
    return this.reprocessador().estacionar(selecao, motivo, opcoes);
  }

  /** Reopens the selected `failed_permanent` entries to `pendente`, with a fresh loop-guard budget. Audited. */
  reabrirDLQ(selecao: SelecaoDLQ, opcoes: OpcoesAcaoDLQ = {}): Promise<ResultadoAcaoDLQ> {
    return this.reprocessador().reabrir(selecao, opcoes);
  }

  /** The operator-action trail, newest first (`core.dlq_reprocessamento`). */
  listarReprocessamentosDLQ(filtros: FiltrosReprocessamentos = {}): ReturnType<DlqReprocessor['listar']> {
    return this.reprocessador().listar(filtros);
  }

  /** One action of the trail (a running request shows its progress in `reprocessados`). */
  obterReprocessamentoDLQ(id: string): Promise<RegistroReprocessamento | null> {
    return this.reprocessador().obter(id);
  }

  /** A colony's DLQ entries in any state, filtered like a selection, with fingerprint, guard count and reason. */
  listarEntradasDLQ(filtros: FiltrosEntradasDLQ): ReturnType<DlqEntries['listar']> {
    return this.entradasDLQ().listar(filtros);
  }

  /** Every colony's DLQ entry for one event. */
  obterEntradasDLQ(eventId: string): Promise<EntradaDLQ[]> {
    return this.entradasDLQ().doEvento(eventId);
  }

  /** The DLQ entries of every event of one flow (`correlacao_id`): what the console marks on a trace. */
  async obterEntradasDLQDoFluxo(correlacaoId: string): Promise<EntradaDLQ[]> {
    if (!isUuid(correlacaoId)) throw new FeromoniosError('BAD_REQUEST', 'correlacao_id must be a UUID');
    // the flow's events in archived months, whose entries the log can no longer join
    return this.entradasDLQ().doFluxo(correlacaoId, await this.leitor().idsArquivadosDoFluxo(correlacaoId));
  }

  /** Per colony: entries by state and the most frequent open failures (by fingerprint). */
  obterResumoDLQ(): Promise<ResumoDLQ> {
    return this.entradasDLQ().resumo();
  }

  private entradasDLQ(): DlqEntries {
    this.dlqEntries ??= new DlqEntries(this.database());
    return this.dlqEntries;
  }

  private leitor(): EventLogReader {
    this.reader ??= new EventLogReader(this.database(), this.logger);
    return this.reader;
  }

  private reprocessador(): DlqReprocessor {
    this.reprocessor ??= new DlqReprocessor({
      pool: this.database(),
      kafka: this.kafka,
      topics: this.topics,
      catalog: this.catalog,
      schemaIds: this.schemaIds,
      send: (topic, messages) => this.publisher.sendRaw(topic, messages),
      logger: this.logger,
      metrics: this.metrics,
    });
    return this.reprocessor;
  }

  /** The pool of `core` reads and DLQ reprocessing: the `pool` option, or one of our own. */
  private database(): pg.Pool {
    this.assertOpen();
    const pool =
      this.options.pool ??
      (this.ownPool ??= this.options.databaseUrl
        ? new pg.Pool({ connectionString: this.options.databaseUrl, max: 4 })
        : undefined);
    if (!pool)
      throw new FeromoniosError('CONFIG_INVALID', 'reads of the log need the `databaseUrl` (or `pool`) option');
    return pool;
  }

  /** Registers every catalog version with the registry (what `npm run schemas:sync` does). */
  async sincronizarSchemas(): Promise<SchemaSyncEntry[]> {
    return syncSchemas(this.registry, this.catalog, this.topics);
  }

  /**
   * Stops the bus: consumers stop fetching, in-flight handlers finish (or are aborted at their
   * timeout), offsets are committed, everything disconnects. Further calls throw `BUS_CLOSED`.
   */
  async encerrar(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.confirmations?.encerrar();
    await Promise.all(this.relays.map((r) => r.parar()));
    await Promise.all([...this.colonias.values()].map((s) => s.close()));
    await this.publisher.close();
    await this.ownPool?.end();
  }

  private assertOpen(): void {
    if (this.closed) throw new FeromoniosError('BUS_CLOSED', 'this EventBus was closed with encerrar()');
  }
}
