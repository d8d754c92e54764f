import {
  Kafka,
  logLevel,
  Partitioners,
  type Admin,
  type Batch,
  type Consumer,
  type KafkaMessage,
  type Producer,
} from 'kafkajs';
import type pg from 'pg';
import type { SchemaCatalog } from '../sdk/catalog';
import { EventDecoder } from '../sdk/event-decoder';
import { FeromoniosError, isRetriable, SchemaValidationError, WireFormatError } from '../sdk/errors';
import type { Logger } from '../sdk/logger';
import { redactPayload, scrubText, type RedactionOptions } from '../sdk/redaction';
import { DLQ_HEADERS } from '../sdk/subscriber';
import { isIsoTimestamp, isUuid } from '../sdk/validation';
import { decodeValue, HEADER, headerString } from '../sdk/wire-format';
import type { SchemaRegistry } from '../sdk/registry';
import { ensureTopics, type TopicNames, type TopicSettings } from '../sdk/topics';
import { recordFailure, recordResolved, type DeadLetterRecord } from './dead-letter-writer';
import { DLQ_OUTCOME_HEADER } from '../sdk/reprocessing';
import { appendToEventLog, type LogRow } from './event-log-writer';
import type { BridgeMetrics } from './metrics';

export interface BridgeOptions {
  brokers: string[];
  clientId: string;
  /** Consumer group shared by every instance. */
  groupId: string;
  pool: pg.Pool;
  registry: SchemaRegistry;
  catalog: SchemaCatalog;
  topics: TopicNames;
  topicSettings: TopicSettings;
  redaction: RedactionOptions;
  /** Most events per database transaction. */
  batchSize: number;
  /** Longest wait for a fetch to fill, in milliseconds. */
  flushIntervalMs: number;
  /** How often new topics are looked for, in milliseconds. */
  topicRefreshMs: number;
  maxPayloadBytes: number;
  /** Failures of one (event_id, colonia) before its DLQ row becomes `failed_permanent`. */
  dlqMaxTentativas: number;
  /** How long a DLQ record waits for its event to reach the log before it is quarantined, in milliseconds. */
  dlqEventWaitMs?: number;
  /** Fault injection only: random delay before each COMMIT, in milliseconds (0 = off). */
  commitJitterMs?: number;
  logger: Logger;
  metrics: BridgeMetrics;
}

/** Headers added to a quarantined record (the original key, value and headers are kept). */
export const QUARANTINE_HEADERS = {
  reason: 'feromonios_quarentena_motivo',
  detail: 'feromonios_quarentena_detalhe',
  topic: 'feromonios_origem_topico',
  partition: 'feromonios_origem_particao',
  offset: 'feromonios_origem_offset',
} as const;

type BatchControl = {
  heartbeat(): Promise<void>;
  isRunning(): boolean;
  isStale(): boolean;
  resolveOffset(offset: string): void;
};

/** A group of topics consumed by one consumer of its own. */
interface Lane {
  name: string;
  pattern: RegExp;
  groupId: string;
  consumer?: Consumer;
  subscribed: Set<string>;
  handle(consumer: Consumer, batch: Batch, ctl: BatchControl): Promise<void>;
}

/** What `retrying` returns when it gave up because the bridge stops or lost the partition. */
const ABORTED = Symbol('aborted');

type Decoded = { kind: 'ok'; row: LogRow } | { kind: 'poison'; reason: string; detail: string; message: KafkaMessage };

/**
 * The sink connector: mirrors every event topic into `core.event_log`, redacted, with the
 * global sequence. Offsets are committed only after the database commit (at-least-once;
 * duplicates are dropped by event_id). Records it cannot accept go to the quarantine topic
 * with their reason and never stop it. A failing database or registry pauses consumption
 * (retry with backoff, heartbeats kept) instead of losing anything.
 */
export class Bridge {
  private readonly kafka: Kafka;
  private readonly decoder: EventDecoder;
  private readonly lanes: Lane[];
  private producer: Producer | undefined;
  private admin: Admin | undefined;
  private watcher: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private stopping = false;
  private lastDbOk = false;

  constructor(private readonly o: BridgeOptions) {
    this.kafka = new Kafka({
      clientId: o.clientId,
      brokers: o.brokers,
      logLevel: logLevel.WARN,
      logCreator:
        () =>
        ({ level, log }) => {
          const { message, ...rest } = log;
          if (level <= logLevel.ERROR) o.logger.error(message, { ...rest, source: 'kafkajs' });
          else o.logger.warn(message, { ...rest, source: 'kafkajs' });
        },
      retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 5000 },
    });
    this.decoder = new EventDecoder(o.registry, o.catalog, o.maxPayloadBytes);
    this.lanes = [
      {
        name: 'eventos',
        pattern: o.topics.eventos,
        groupId: o.groupId,
        subscribed: new Set(),
        handle: (c, b, ctl) => this.handleBatch(c, b, ctl),
      },
      {
        name: 'dlq',
        pattern: o.topics.dlqs,
        groupId: `${o.groupId}.dlq`,
        subscribed: new Set(),
        handle: (c, b, ctl) => this.handleDlqBatch(c, b, ctl),
      },
    ];
  }

  async start(): Promise<void> {
    this.admin = this.kafka.admin();
    await this.admin.connect();
    this.producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await this.producer.connect();
    await ensureTopics(this.admin, [this.o.topics.quarentena()], this.o.topicSettings);
    await this.refreshSubscription();
    this.watcher = setInterval(() => {
      this.refreshing ??= this.refreshSubscription()
        .catch((err: unknown) => this.o.logger.warn('topic refresh failed', { error: (err as Error).message }))
        .finally(() => (this.refreshing = undefined));
    }, this.o.topicRefreshMs);
    this.o.logger.info('bridge started', { group: this.o.groupId, topics: this.topics });
  }

  /** Graceful stop: no new fetches, the batch in hand finishes and commits, then disconnect. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.watcher);
    await this.refreshing;
    await Promise.all(this.lanes.map((l) => (l.consumer ? l.consumer.disconnect() : Promise.resolve())));
    await this.producer?.disconnect();
    await this.admin?.disconnect();
    this.o.logger.info('bridge stopped');
  }

  /** Ready when consuming and the last database contact succeeded. */
  ready(): boolean {
    return !this.stopping && this.lanes[0]?.consumer !== undefined && this.lastDbOk;
  }

  /** Topics currently mirrored (events and DLQs). */
  get topics(): string[] {
    return this.lanes.flatMap((l) => [...l.subscribed]);
  }

  /**
   * kafkajs resolves a subscription once (#1086): new topics are found by listing topics, and
   * a lane's consumer is recreated with the full list when one appears. Two lanes, each its own
   * group, so a DLQ record waiting for its event never holds the events back.
   */
  private async refreshSubscription(): Promise<void> {
    if (this.stopping || !this.admin) return;
    const all = await this.admin.listTopics();
    for (const lane of this.lanes) {
      const topics = all.filter((t) => lane.pattern.test(t));
      if (topics.length === 0 || (lane.consumer && topics.every((t) => lane.subscribed.has(t)))) continue;
      const previous = lane.consumer;
      lane.consumer = undefined;
      await previous?.disconnect();
      if (this.stopping) return;
      const consumer = this.kafka.consumer({
        groupId: lane.groupId,
        allowAutoTopicCreation: false,
        sessionTimeout: 30_000,
        heartbeatInterval: 3_000,
        maxWaitTimeInMs: this.o.flushIntervalMs,
        maxBytesPerPartition: 4 * 1024 * 1024,
      });
      await consumer.connect();
      await consumer.subscribe({ topics, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: (payload) =>
          lane.handle(consumer, payload.batch, payload).catch((err: unknown) => {
            // kafkajs retries the batch from the last committed offset: nothing is lost.
            this.o.logger.error('batch failed, it will be retried', {
              topic: payload.batch.topic,
              partition: payload.batch.partition,
              error: (err as Error).message,
            });
            throw err;
          }),
      });
      lane.consumer = consumer;
      lane.subscribed = new Set(topics);
      this.o.logger.info('subscribed', { lane: lane.name, topics });
    }
    await this.checkDatabase(); // readiness follows the database, not the consumer's existence
  }

  private async checkDatabase(): Promise<void> {
    try {
      await this.o.pool.query('SELECT 1');
      this.lastDbOk = true;
    } catch {
      this.lastDbOk = false;
    }
  }

  private async handleBatch(
    consumer: Consumer,
    batch: Batch,
    ctl: { heartbeat(): Promise<void>; isRunning(): boolean; isStale(): boolean; resolveOffset(offset: string): void },
  ): Promise<void> {
    const { topic, partition } = batch;
    for (let i = 0; i < batch.messages.length; i += this.o.batchSize) {
      if (!ctl.isRunning() || ctl.isStale()) return; // rebalanced or stopping: the rest is redelivered
      const chunk = batch.messages.slice(i, i + this.o.batchSize);
      this.o.metrics.consumed.inc({ topic }, chunk.length);
      const decoded = await this.retrying('registry', ctl, () => this.decodeChunk(topic, partition, chunk));
      if (decoded === ABORTED) return;
      const poison = decoded.filter((d): d is Extract<Decoded, { kind: 'poison' }> => d.kind === 'poison');
      const rows = decoded.filter((d): d is Extract<Decoded, { kind: 'ok' }> => d.kind === 'ok').map((d) => d.row);
      if (poison.length > 0) {
        const sent = await this.retrying('kafka', ctl, () => this.quarantine(topic, partition, poison));
        if (sent === ABORTED) return;
      }
      const t0 = process.hrtime.bigint();
      const result = await this.retrying('database', ctl, () =>
        appendToEventLog(this.o.pool, rows, this.o.commitJitterMs),
      );
      if (result === ABORTED) return;
      this.lastDbOk = true;
      this.o.metrics.insertDuration.observe(Number(process.hrtime.bigint() - t0) / 1e9);
      this.o.metrics.batchSize.observe(rows.length);
      this.o.metrics.duplicates.inc(result.duplicates.length);
      for (const r of rows) if (!result.duplicates.includes(r.event_id)) this.o.metrics.inserted.inc({ tipo: r.tipo });
      const last = result.inserted.at(-1);
      if (last) this.o.metrics.highestSequence.set(Number(last.sequence_number));
      const lastOffset = (chunk.at(-1) as KafkaMessage).offset;
      ctl.resolveOffset(lastOffset);
      await consumer.commitOffsets([{ topic, partition, offset: (BigInt(lastOffset) + 1n).toString() }]);
      this.o.metrics.lag.set(
        { topic, partition: String(partition) },
        Math.max(0, Number(batch.highWatermark) - Number(lastOffset) - 1),
      );
      this.o.logger.debug('batch written', {
        topic,
        partition,
        inserted: result.inserted.length,
        duplicates: result.duplicates.length,
        quarantined: poison.length,
      });
      await ctl.heartbeat();
    }
  }

  /**
   * A colony's DLQ topic → `core.dead_letter_queue`, record by record, in order. Error texts are
   * scrubbed of the payload's values (handlers' errors may quote them). A record whose event is
   * not in the log yet waits for the bridge to write it (the two topics are consumed
   * independently), up to `dlqEventWaitMs`, then goes to quarantine.
   */
  private async handleDlqBatch(
    consumer: Consumer,
    batch: Batch,
    ctl: { heartbeat(): Promise<void>; isRunning(): boolean; isStale(): boolean; resolveOffset(offset: string): void },
  ): Promise<void> {
    const { topic, partition } = batch;
    const colonia = this.o.topics.coloniaDaDlq(topic) as string;
    for (const message of batch.messages) {
      if (!ctl.isRunning() || ctl.isStale()) return;
      const record = this.readDlqRecord(message, colonia);
      if (typeof record !== 'string' && headerString(message.headers, DLQ_OUTCOME_HEADER) === 'resolved') {
        const r = await this.retrying('database', ctl, () =>
          recordResolved(this.o.pool, record.event_id, colonia, record.falhou_em),
        );
        if (r === ABORTED) return;
        if (r) this.o.metrics.deadLetters.inc({ colonia, estado: 'resolved' });
      } else if (typeof record === 'string') {
        const sent = await this.retrying('kafka', ctl, () =>
          this.quarantine(topic, partition, [{ kind: 'poison', reason: 'invalid-header', detail: record, message }]),
        );
        if (sent === ABORTED) return;
      } else {
        const waitUntil = Date.now() + (this.o.dlqEventWaitMs ?? 60_000);
        for (;;) {
          const r = await this.retrying('database', ctl, () =>
            recordFailure(this.o.pool, record, this.o.dlqMaxTentativas),
          );
          if (r === ABORTED) return;
          if (r.status === 'written') {
            this.o.metrics.deadLetters.inc({ colonia, estado: r.estado });
            break;
          }
          if (Date.now() > waitUntil) {
            const sent = await this.retrying('kafka', ctl, () =>
              this.quarantine(topic, partition, [
                {
                  kind: 'poison',
                  reason: 'event-not-in-log',
                  detail: `event ${record.event_id} never reached core.event_log`,
                  message,
                },
              ]),
            );
            if (sent === ABORTED) return;
            break;
          }
          await ctl.heartbeat().catch(() => undefined);
          await new Promise((res) => setTimeout(res, 250));
          if (!ctl.isRunning() || ctl.isStale() || this.stopping) return;
        }
      }
      ctl.resolveOffset(message.offset);
      await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
    }
  }

  /** The DLQ fields of a record, or why it cannot be read. */
  private readDlqRecord(message: KafkaMessage, colonia: string): DeadLetterRecord | string {
    const eventId = headerString(message.headers, HEADER.id);
    if (!eventId || !isUuid(eventId)) return 'DLQ record without a UUID ce_id header';
    let payload: unknown;
    try {
      payload = decodeValue(message.value).payload;
    } catch {
      payload = undefined; // undecodable original: scrub with the generic rules only
    }
    const text = (name: string): string | undefined => headerString(message.headers, name);
    const failedAt = text(DLQ_HEADERS.failedAt);
    return {
      event_id: eventId,
      colonia,
      handler_nome: text(DLQ_HEADERS.handler)?.slice(0, 255) ?? null,
      mensagem_erro: scrubText(text(DLQ_HEADERS.errorMessage) ?? '(sem mensagem)', payload),
      pilha_erro: text(DLQ_HEADERS.errorStack) ? scrubText(text(DLQ_HEADERS.errorStack) as string, payload) : null,
      falhou_em: failedAt && isIsoTimestamp(failedAt) ? failedAt : new Date().toISOString(),
    };
  }

  private async decodeChunk(topic: string, partition: number, messages: KafkaMessage[]): Promise<Decoded[]> {
    const out: Decoded[] = [];
    for (const message of messages) {
      try {
        const ev = await this.decoder.decode(message, { topico: topic, particao: partition, offset: message.offset });
        const policy = this.o.catalog.tipo(ev.tipo)?.redacao ?? { campos: {} };
        out.push({
          kind: 'ok',
          row: {
            event_id: ev.event_id,
            tipo: ev.tipo,
            versao_schema: ev.versao_schema,
            timestamp: ev.timestamp,
            origem: ev.origem,
            correlacao_id: ev.correlacao_id,
            causation_id: ev.causation_id,
            payload: redactPayload(ev.payload, policy, this.o.redaction),
          },
        });
      } catch (err) {
        if (err instanceof WireFormatError)
          out.push({ kind: 'poison', reason: err.reason, detail: err.message, message });
        else if (err instanceof SchemaValidationError)
          out.push({ kind: 'poison', reason: 'schema-invalid', detail: err.message, message });
        else if (this.o.topics.tipoDe(topic) !== undefined && !isRetriable(err)) {
          out.push({ kind: 'poison', reason: 'rejected', detail: (err as Error).message, message });
        } else throw err; // registry unavailable: retried for the whole chunk
      }
    }
    return out;
  }

  private async quarantine(
    topic: string,
    partition: number,
    poison: Array<Extract<Decoded, { kind: 'poison' }>>,
  ): Promise<void> {
    await this.producer?.send({
      topic: this.o.topics.quarentena(),
      acks: -1,
      messages: poison.map((p) => ({
        key: p.message.key,
        value: p.message.value,
        headers: {
          ...p.message.headers,
          [QUARANTINE_HEADERS.reason]: p.reason,
          [QUARANTINE_HEADERS.detail]: p.detail.slice(0, 2000),
          [QUARANTINE_HEADERS.topic]: topic,
          [QUARANTINE_HEADERS.partition]: String(partition),
          [QUARANTINE_HEADERS.offset]: p.message.offset,
        },
      })),
    });
    for (const p of poison) {
      this.o.metrics.quarantined.inc({ reason: p.reason });
      this.o.logger.warn('record quarantined', {
        topic,
        partition,
        offset: p.message.offset,
        reason: p.reason,
        detail: p.detail.slice(0, 300),
      });
    }
  }

  /**
   * Runs `fn` until it succeeds, backing off on retriable failures (database or registry down)
   * while keeping the group membership alive. Returns `ABORTED` when the bridge stops or the
   * partition is revoked meanwhile: nothing was committed, so the records come back.
   */
  private async retrying<T>(
    dependency: string,
    ctl: { heartbeat(): Promise<void>; isRunning(): boolean; isStale(): boolean },
    fn: () => Promise<T>,
  ): Promise<T | typeof ABORTED> {
    let delay = 200;
    for (;;) {
      try {
        return await fn();
      } catch (err) {
        if (!isRetriable(err) && !(err instanceof FeromoniosError && err.retriable)) throw err;
        if (dependency === 'database') this.lastDbOk = false;
        this.o.metrics.retries.inc({ dependency });
        this.o.logger.warn(`${dependency} unavailable, retrying`, { error: (err as Error).message, delay_ms: delay });
        const until = Date.now() + delay;
        while (Date.now() < until) {
          if (!ctl.isRunning() || ctl.isStale() || this.stopping) return ABORTED;
          await ctl.heartbeat().catch(() => undefined);
          await new Promise((r) => setTimeout(r, Math.min(500, until - Date.now())));
        }
        delay = Math.min(delay * 2, 5_000);
      }
    }
  }
}
