import { backoffDelay, sleep } from '../runtime/retry';
import type { Span } from '@opentelemetry/api';
import type { Kafka, Message, PartitionMetadata, RecordMetadata } from 'kafkajs';
import type { EventoConsultado, PosicaoKafka, PublicarEventoDto } from '../contract';
import {
  BrokerError,
  BrokerRejectedError,
  brokerSecurityFailure,
  FeromoniosError,
  isRetriable,
  PublishValidationError,
} from '../errors';
import type { Logger } from '../runtime/logger';
import type { SdkMetrics } from '../runtime/metrics';
import type { SchemaCatalog } from '../catalog/catalog';
import type { SchemaIdResolver } from '../catalog/schema-ids';
import { ensureTopics, partitionCounts, withAdmin, type TopicNames, type TopicSettings } from '../wire/topics';
import { endSpan, startProducerSpan, traceparentOf } from '../runtime/tracing';
import { eventoValidado, validarEvento, type EventoValidado } from './validation';
import { buildHeaders, encodeValue } from '../wire/wire-format';
import { SessionProducer } from '../runtime/producer';
import { murmur2Partitioner } from '../runtime/partitioner';
import { SessionOrder } from './session-order';

interface QueuedSend {
  planned: Array<{ topic: string; message: Message }>;
  resolve(positions: PosicaoKafka[]): void;
  reject(err: unknown): void;
}

/** Calls waiting behind an in-flight request are merged up to about this many value bytes. */
const MAX_COALESCED_BYTES = 512 * 1024;

interface PublisherDeps {
  kafka: Kafka;
  catalog: SchemaCatalog;
  schemaIds: SchemaIdResolver;
  topics: TopicNames;
  topicSettings: TopicSettings;
  logger: Logger;
  metrics: SdkMetrics;
  timeoutMs: number;
}

/**
 * Validates (seed 3.3 order), encodes (wire format + CloudEvents headers) and produces events
 * with the idempotent producer (`acks=all`, one in-flight request: kafkajs #1005).
 */
export class Publisher {
  private readonly producer: SessionProducer;
  private readonly readyTopics = new Set<string>();
  private readonly queue: QueuedSend[] = [];
  private readonly topicChecks = new Map<string, Promise<void>>();
  private sending = false;
  /**
   * This publisher's session in `feromonios_ordem`: counters (a failed event sent again keeps its
   * own) and the settled mark, held back by a retriable failure for `timeoutMs` and at least
   * 10 s — the outbox relay's next pass comes within its 5 s backoff (docs/ordering.md).
   */
  private readonly order: SessionOrder;

  constructor(private readonly d: PublisherDeps) {
    this.producer = new SessionProducer(d.kafka, d.logger);
    this.order = new SessionOrder(Math.max(d.timeoutMs, 10_000));
  }

  async publicar(dto: PublicarEventoDto): Promise<EventoConsultado> {
    const [evento] = await this.publicarLote([dto], false);
    return evento as EventoConsultado;
  }

  /**
   * Validates every event first; produces none if one fails (the error's `index` names it).
   * Then produces all in one request per broker, in order within each partition.
   */
  async publicarLote(dtos: PublicarEventoDto[], batch = true): Promise<EventoConsultado[]> {
    let validados: EventoValidado[];
    try {
      if (!Array.isArray(dtos))
        throw new PublishValidationError('INVALID_FIELD', 'field', 'publicarLote expects an array of events');
      validados = dtos.map((dto, i) => validarEvento(dto, this.d.catalog, batch ? i : undefined));
    } catch (err) {
      this.refused(err, Array.isArray(dtos) ? dtos[0] : undefined, 1);
      throw err;
    }
    return this.publicarValidados(validados);
  }

  /**
   * Produces events `validarEvento` already accepted (confirmed publishing and the outbox relay
   * validate first for their own reasons): same encoding, topics, batching and deadline, no
   * second validation.
   */
  async publicarValidados(validados: EventoValidado[]): Promise<EventoConsultado[]> {
    const started = process.hrtime.bigint();
    try {
      const ids = await this.schemaIdsOf(validados);
      const counters = validados.map((v) => this.order.take(v.event_id));
      try {
        const out = await this.produce(validados, ids, counters);
        this.order.acknowledged(counters);
        this.published(validados, out, started);
        return out;
      } catch (err) {
        this.order.failed(this.counted(validados, counters), isRetriable(err));
        throw err;
      }
    } catch (err) {
      this.refused(err, validados[0], validados.length);
      throw err;
    }
  }

  /**
   * Produces a batch as `publicarValidados` does; if the broker refuses it for good (a record too
   * large for its topic, say), sends each event alone, in order, so that only the ones it refuses
   * are left out — the outbox relay's pass (docs/outbox.md). Returns, per event, the published
   * event or the error that refused it for good. A retriable failure throws, for the whole call
   * (events sent alone before it are in Kafka: sending them again duplicates them, dropped
   * downstream by event_id).
   *
   * Every counter of the batch stays open until its own event is acknowledged or refused: a
   * publish of this bus running meanwhile never carries a settled mark past an event still to be
   * sent again (docs/ordering.md), so what the refused batch did write waits for it in the log.
   */
  async publicarIsolandoRecusas(validados: EventoValidado[]): Promise<Array<EventoConsultado | FeromoniosError>> {
    const started = process.hrtime.bigint();
    const results = new Array<EventoConsultado | FeromoniosError>(validados.length);
    // schema ids one by one: one the registry refuses for good leaves its event out, not the batch
    const resolved = await Promise.allSettled(validados.map((v) => this.d.schemaIds.idOf(v.versao)));
    const unavailable = resolved.find((r) => r.status === 'rejected' && isRetriable(r.reason));
    if (unavailable) {
      const err = (unavailable as PromiseRejectedResult).reason as unknown;
      this.refused(err, validados[0], validados.length);
      throw err;
    }
    const at: number[] = [];
    const ids: number[] = [];
    resolved.forEach((r, i) => {
      if (r.status === 'fulfilled') {
        at.push(i);
        ids.push(r.value);
      } else {
        this.refused(r.reason, validados[i], 1);
        results[i] = refusal(r.reason);
      }
    });
    const batch = at.map((i) => validados[i] as EventoValidado);
    if (batch.length === 0) return results;
    const counters = batch.map((v) => this.order.take(v.event_id));
    try {
      const out = await this.produce(batch, ids, counters);
      this.order.acknowledged(counters);
      this.published(batch, out, started);
      at.forEach((i, k) => (results[i] = out[k] as EventoConsultado));
      return results;
    } catch (err) {
      if (isRetriable(err)) {
        this.order.failed(this.counted(batch, counters), true);
        this.refused(err, batch[0], batch.length);
        throw err;
      }
    }
    for (let k = 0; k < batch.length; k++) {
      const one = [batch[k] as EventoValidado];
      const counter = [counters[k] as number];
      const t0 = process.hrtime.bigint();
      try {
        const out = await this.produce(one, [ids[k] as number], counter);
        this.order.acknowledged(counter);
        this.published(one, out, t0);
        results[at[k] as number] = out[0] as EventoConsultado;
      } catch (err) {
        if (isRetriable(err)) {
          this.order.failed(this.counted(batch.slice(k), counters.slice(k)), true);
          this.refused(err, one[0], batch.length - k);
          throw err;
        }
        this.order.failed(this.counted(one, counter), false);
        this.refused(err, one[0], 1);
        results[at[k] as number] = refusal(err);
      }
    }
    return results;
  }

  private schemaIdsOf(validados: EventoValidado[]): Promise<number[]> {
    return Promise.all(validados.map((v) => this.d.schemaIds.idOf(v.versao)));
  }

  private counted(validados: EventoValidado[], counters: number[]): Array<{ eventId: string; counter: number }> {
    return validados.map((v, i) => ({ eventId: v.event_id, counter: counters[i] as number }));
  }

  /**
   * Plans, encodes and produces events whose schema ids and counters were taken, within
   * `publishTimeoutMs`, one producer span each; the counters' bookkeeping is the caller's.
   */
  private async produce(validados: EventoValidado[], ids: number[], counters: number[]): Promise<EventoConsultado[]> {
    const spans = validados.map((v) =>
      startProducerSpan(this.d.topics.evento(v.tipo), {
        'messaging.message.id': v.event_id,
        'messaging.kafka.message.key': v.chave_particao ?? v.correlacao_id,
        'feromonios.tipo': v.tipo,
        'feromonios.origem': v.origem,
      }),
    );
    const out = validados.map((v) => eventoValidado(v));
    try {
      await this.withDeadline(async () => {
        const planned = validados.map((v, i) =>
          this.plan(v, ids[i] as number, traceparentOf(spans[i] as Span), counters[i] as number),
        );
        await this.ensureTopics([...new Set(planned.map((m) => m.topic))]);
        for (const m of planned)
          m.message.partition = this.partitioner({
            topic: m.topic,
            partitionMetadata: this.partitionMetadata(m.topic),
            message: m.message,
          });
        const positions = await this.enqueue(planned);
        positions.forEach((posicao, i) => {
          (out[i] as EventoConsultado).posicao = posicao;
          if (!posicao) return;
          spans[i]?.setAttributes({
            'messaging.destination.partition.id': String(posicao.particao),
            'messaging.kafka.offset': Number(posicao.offset),
          });
        });
      });
    } catch (err) {
      spans.forEach((sp) => endSpan(sp, err));
      throw err;
    }
    spans.forEach((sp) => endSpan(sp));
    return out;
  }

  /** Counts and logs acknowledged events. */
  private published(validados: EventoValidado[], out: EventoConsultado[], started: bigint): void {
    this.observe(validados, started, 'ok');
    for (const ev of out)
      this.d.logger.info('event published', {
        event_id: ev.event_id,
        correlacao_id: ev.correlacao_id,
        tipo: ev.tipo,
        origem: ev.origem,
        posicao: ev.posicao,
      });
  }

  /** Counts and logs a refused publish (validation or broker), labelled by its first event. */
  private refused(
    err: unknown,
    first: { tipo?: unknown; origem?: unknown; event_id?: unknown } | undefined,
    events: number,
  ): void {
    const code = err instanceof FeromoniosError ? err.code : 'BROKER_UNAVAILABLE';
    this.d.metrics.published.inc(
      { tipo: labelOf(first?.tipo), origem: labelOf(first?.origem), result: code },
      Math.max(1, events),
    );
    this.d.logger.warn('publish refused', {
      code,
      error: (err as Error).message,
      event_id: first?.event_id,
      tipo: first?.tipo,
    });
  }

  /**
   * Natural batching: calls that arrive while a produce request is in flight wait for it and go
   * together in the next one (kafkajs has no linger, and one in-flight request is what keeps the
   * idempotent producer ordered). An idle publisher sends at once; a busy one sends fewer, larger
   * requests. Each call keeps its own messages in order, and calls keep their arrival order, so
   * order within a partition is the order of the calls. A request of several calls that the
   * broker refuses for good is sent again one call at a time: a call fails for its own records
   * only, never for a record too large that another call put in the same request.
   */
  private enqueue(planned: Array<{ topic: string; message: Message }>): Promise<PosicaoKafka[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ planned, resolve, reject });
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.queue.length > 0) {
        const take: QueuedSend[] = [];
        let bytes = 0;
        while (this.queue.length > 0 && (take.length === 0 || bytes < MAX_COALESCED_BYTES)) {
          const next = this.queue.shift() as QueuedSend;
          take.push(next);
          for (const m of next.planned) bytes += (m.message.value as Buffer | null)?.length ?? 0;
        }
        try {
          this.settle(take, await this.sendWithPatience(byTopicOf(take)));
        } catch (err) {
          if (take.length > 1 && !isRetriable(err) && !brokerSecurityFailure(err)) {
            // Refused for good — but maybe for one call's records only (one too large for its
            // topic): a call must not fail for another's record it shared a request with. Each
            // call alone, in arrival order (the order within each partition stays theirs).
            for (const q of take) {
              try {
                this.settle([q], await this.sendWithPatience(byTopicOf([q])));
              } catch (one) {
                q.reject(one);
              }
            }
          } else for (const q of take) q.reject(err);
        }
        // A request that carried several calls means concurrent callers: let the ones just answered
        // publish again before the next request is cut (their next calls reach the queue after a
        // few promise hops and would otherwise wait a whole round trip, halving a busy publisher's
        // batches). A lone caller is not made to wait for it.
        if (take.length > 1) await new Promise<void>((r) => setImmediate(r));
      }
    } finally {
      this.sending = false;
    }
  }

  /**
   * Resolves each call of a request with its records' positions: each partition reports the
   * offset of its first message, the rest follow in order. A call with a partition the broker did
   * not answer for is refused (never acknowledged without the broker's word).
   */
  private settle(take: QueuedSend[], results: RecordMetadata[]): void {
    const next = new Map(results.map((r) => [`${r.topicName}/${r.partition}`, BigInt(r.baseOffset ?? '-1')]));
    const keyOf = (m: { topic: string; message: Message }) => `${m.topic}/${m.message.partition}`;
    for (const q of take) {
      const unanswered = q.planned.find((m) => !next.has(keyOf(m)));
      if (unanswered) {
        q.reject(new BrokerError(`the broker did not acknowledge ${keyOf(unanswered)}`));
        continue;
      }
      q.resolve(
        q.planned.map((m) => {
          const offset = next.get(keyOf(m)) as bigint;
          next.set(keyOf(m), offset + 1n);
          return { topico: m.topic, particao: m.message.partition as number, offset: String(offset) };
        }),
      );
    }
  }

  /**
   * One produce request; a retriable broker error (a leader moving, a broker restarting) is
   * retried with backoff until `publishTimeoutMs` has passed — kafkajs's own retries give up
   * within a second or two, well before the caller's deadline. A retry after an ambiguous failure
   * may write a message twice: at-least-once, dropped downstream by event_id.
   */
  private async sendWithPatience(byTopic: Map<string, Message[]>): Promise<RecordMetadata[]> {
    const deadline = Date.now() + this.d.timeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.producer.sendBatch({
          acks: -1,
          topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
        });
      } catch (err) {
        if (!isRetriable(err) || Date.now() >= deadline) throw err;
        this.d.logger.warn('produce failed; retrying', { error: (err as Error).message, attempt: attempt + 1 });
        await sleep(backoffDelay(attempt + 1, { initialMs: 50, maxMs: 1_000 }));
      }
    }
  }

  /** Produces already-encoded records (reprocessing) with the same producer and guarantees. */
  async sendRaw(topic: string, messages: Message[]): Promise<void> {
    await this.withDeadline(async () => {
      await this.ensureTopics([topic]);
      await this.enqueue(messages.map((message) => ({ topic, message })));
    });
  }

  async close(): Promise<void> {
    await this.producer.close();
  }

  /** Same partitioner as Java clients and Redpanda tooling: murmur2 of the key (sdk/runtime/partitioner.ts). */
  private readonly partitioner = murmur2Partitioner();
  private readonly partitionCounts = new Map<string, number>();

  /** The partitioner's view of each topic, built once per partition count (it only reads it). */
  private readonly metadataByTopic = new Map<string, PartitionMetadata[]>();

  private partitionMetadata(topic: string): PartitionMetadata[] {
    const n = this.partitionCounts.get(topic) ?? 1;
    const known = this.metadataByTopic.get(topic);
    if (known?.length === n) return known;
    const built = Array.from({ length: n }, (_, partitionId) => ({
      partitionId,
      leader: -1,
      replicas: [],
      isr: [],
      partitionErrorCode: 0,
    }));
    this.metadataByTopic.set(topic, built);
    return built;
  }

  private plan(
    v: EventoValidado,
    schemaId: number,
    traceparent: string,
    counter: number,
  ): { topic: string; message: Message } {
    return {
      topic: this.d.topics.evento(v.tipo),
      message: {
        key: v.chave_particao ?? v.correlacao_id,
        value: encodeValue(schemaId, v.payloadJson),
        // no record timestamp: kafkajs stamps the record with the send time (CreateTime). The event's
        // own time travels in ce_time; as the record's, a backfill would fall under retention
        // at once and a future one be refused by the broker (docs/publishing.md, "Timestamps")
        headers: buildHeaders(v, {
          traceparent,
          partitionKey: v.chave_particao,
          ordem: this.order.header(counter),
        }),
      },
    };
  }

  /**
   * Makes sure the topics exist and learns their partition counts, once per topic: concurrent
   * first calls (a burst of publishes on a fresh bus) share one admin round trip.
   */
  private async ensureTopics(topics: string[]): Promise<void> {
    const missing = topics.filter((t) => !this.readyTopics.has(t));
    if (missing.length === 0) return;
    const waiting = missing.map((t) => this.topicChecks.get(t)).filter((p): p is Promise<void> => p !== undefined);
    const fresh = missing.filter((t) => !this.topicChecks.has(t));
    if (fresh.length > 0) {
      const check = withAdmin(this.d.kafka, async (admin) => {
        await ensureTopics(admin, fresh, this.d.topicSettings);
        for (const [t, n] of await partitionCounts(admin, fresh)) this.partitionCounts.set(t, n);
      })
        .then(() => fresh.forEach((t) => this.readyTopics.add(t)))
        .finally(() => fresh.forEach((t) => this.topicChecks.delete(t)));
      fresh.forEach((t) => this.topicChecks.set(t, check));
      waiting.push(check);
    }
    await Promise.all(waiting);
  }

  private async withDeadline<T>(fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new BrokerError(`broker did not acknowledge within ${this.d.timeoutMs} ms (publishTimeoutMs)`)),
        this.d.timeoutMs,
      );
    });
    try {
      return await Promise.race([fn(), deadline]);
    } catch (err) {
      if (err instanceof FeromoniosError) throw err;
      const security = brokerSecurityFailure(err);
      if (security) throw security;
      if (!isRetriable(err)) throw new BrokerRejectedError(`broker refused the record: ${(err as Error).message}`, err);
      throw new BrokerError(`broker unavailable: ${(err as Error).message}`, err);
    } finally {
      clearTimeout(timer);
    }
  }

  private observe(vs: EventoValidado[], started: bigint, result: string): void {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    for (const v of vs) {
      this.d.metrics.published.inc({ tipo: v.tipo, origem: v.origem, result });
      this.d.metrics.publishDuration.observe({ tipo: v.tipo, origem: v.origem, result }, seconds);
    }
  }
}

/** A refusal for good as the SDK types it. */
const refusal = (err: unknown): FeromoniosError =>
  err instanceof FeromoniosError
    ? err
    : new BrokerRejectedError(`broker refused the record: ${(err as Error).message}`, err);

/** The records of these calls, by topic, in call order. */
function byTopicOf(take: QueuedSend[]): Map<string, Message[]> {
  const byTopic = new Map<string, Message[]>();
  for (const q of take)
    for (const m of q.planned) {
      const list = byTopic.get(m.topic);
      if (list) list.push(m.message);
      else byTopic.set(m.topic, [m.message]);
    }
  return byTopic;
}

const labelOf = (v: unknown): string => (typeof v === 'string' && v.length <= 100 ? v : 'invalido');
