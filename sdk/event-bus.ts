import { Kafka, logLevel as kafkaLogLevel, type logCreator } from 'kafkajs';
import { SchemaCatalog } from './catalog';
import type { EventoConsultado, PublicarEventoDto } from './contract';
import { FeromoniosError } from './errors';
import { jsonLogger, type Logger } from './logger';
import { SdkMetrics } from './metrics';
import { resolveOptions, type EventBusInput, type EventBusOptions } from './options';
import { Publisher } from './publisher';
import { ConfluentSchemaRegistry, type SchemaRegistry } from './registry';
import { SchemaIdResolver } from './schema-ids';
import { syncSchemas, type SchemaSyncEntry } from './schema-sync';
import { TopicNames } from './topics';

/**
 * The event bus colonies use: the seed's `EventBusService` contract over Kafka.
 *
 *   const bus = new EventBus({ brokers: ['127.0.0.1:9092'], registryUrl, clientId: 'D-1a' });
 *   const evento = await bus.publicar({ tipo: 'demanda.recebida', origem: 'D-1a', payload });
 *   await bus.encerrar();
 */
export class EventBus {
  readonly options: EventBusOptions;
  readonly catalog: SchemaCatalog;
  readonly topics: TopicNames;
  readonly registry: SchemaRegistry;
  readonly metrics: SdkMetrics;
  readonly logger: Logger;
  private readonly kafka: Kafka;
  private readonly publisher: Publisher;
  private closed = false;

  constructor(input: EventBusInput) {
    this.options = resolveOptions(input);
    const o = this.options;
    this.logger = o.logger ?? jsonLogger('feromonios-sdk');
    this.catalog = SchemaCatalog.load(o.schemasDir);
    this.topics = new TopicNames(o.namespace);
    this.registry =
      o.registry ??
      new ConfluentSchemaRegistry({
        url: o.registryUrl ?? '',
        timeoutMs: o.registryTimeoutMs,
        retries: o.registryRetries,
      });
    this.metrics = new SdkMetrics(o.metricsRegistry);
    this.kafka = new Kafka({
      clientId: o.clientId,
      brokers: o.brokers,
      connectionTimeout: 3000,
      requestTimeout: Math.max(1000, o.publishTimeoutMs),
      retry: { initialRetryTime: 100, maxRetryTime: 1000, retries: 5 },
      logLevel: kafkaLogLevel.WARN,
      logCreator: kafkaLogs(this.logger),
    });
    this.publisher = new Publisher({
      kafka: this.kafka,
      catalog: this.catalog,
      schemaIds: new SchemaIdResolver(this.registry, this.topics),
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
   * moments later (docs/publishing.md). Throws a typed error naming the failed step.
   */
  async publicar(dto: PublicarEventoDto): Promise<EventoConsultado> {
    this.assertOpen();
    return this.publisher.publicar(dto);
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

  /** Registers every catalog version with the registry (what `npm run schemas:sync` does). */
  async sincronizarSchemas(): Promise<SchemaSyncEntry[]> {
    return syncSchemas(this.registry, this.catalog, this.topics);
  }

  /** Stops the bus: disconnects the producer. Further calls throw `BUS_CLOSED`. */
  async encerrar(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.publisher.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new FeromoniosError('BUS_CLOSED', 'this EventBus was closed with encerrar()');
  }
}

/** Routes kafkajs's own logs into the bus's structured logger. */
function kafkaLogs(logger: Logger): logCreator {
  return () =>
    ({ level, log }) => {
      const { message, ...rest } = log;
      const fields = { ...rest, source: 'kafkajs' };
      if (level === kafkaLogLevel.ERROR) logger.error(message, fields);
      else if (level === kafkaLogLevel.WARN) logger.warn(message, fields);
      else if (level === kafkaLogLevel.INFO) logger.info(message, fields);
      else logger.debug(message, fields);
    };
}
