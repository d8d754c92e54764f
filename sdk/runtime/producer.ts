import {
  Partitioners,
  type Kafka,
  type Producer,
  type ProducerBatch,
  type ProducerRecord,
  type RecordMetadata,
} from 'kafkajs';
import { FeromoniosError, isRetriable } from '../errors';
import type { Logger } from './logger';

/**
 * The one producer configuration of the project (publisher, bridge quarantine, colony DLQ):
 * idempotent, one request in flight (kafkajs #1005), murmur2 partitioner like Java clients and
 * Redpanda tooling, topics never auto-created.
 *
 * kafkajs's idempotent producer keeps a sequence number per partition. When the broker refuses
 * part of a request for good — one partition's records too large, the others written — kafkajs
 * rolls every sequence back, so the partitions that were written are now out of step and each
 * later send to them fails with OUT_OF_ORDER_SEQUENCE_NUMBER, for ever. So after any
 * non-retriable failure the session is discarded, and the next send opens a new one (a new
 * producer id, sequences from zero). Retriable failures keep the session — except a request
 * that timed out. kafkajs keeps a connection whose request went unanswered and retries on it; on
 * a connection the network left half-open (the peer gone, nobody told) every request times out,
 * for ever. So a timeout discards the session too, and the next send opens new connections
 * (docs/reliability.md, "Network faults"): a dead connection costs kafkajs's retries of one
 * request. Those retries stay (five): kafkajs re-sends only the partitions that failed, while a
 * whole-batch retry above it re-sends the partitions already written too — duplicates, and a
 * batch's first copies out of order across partitions (fault scenario 7 caught it with one).
 */
export class SessionProducer {
  private producer: Producer | undefined;
  private connecting: Promise<Producer> | undefined;
  private closed = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly logger?: Logger,
  ) {}

  send(record: ProducerRecord): Promise<RecordMetadata[]> {
    return this.run((p) => p.send(record));
  }

  sendBatch(batch: ProducerBatch): Promise<RecordMetadata[]> {
    return this.run((p) => p.sendBatch(batch));
  }

  /** Opens the session now (otherwise the first send does). */
  async connect(): Promise<void> {
    await this.session();
  }

  async close(): Promise<void> {
    this.closed = true;
    const p = this.producer ?? (await this.connecting?.catch(() => undefined));
    this.producer = undefined;
    this.connecting = undefined;
    await p?.disconnect();
  }

  private async run<T>(fn: (p: Producer) => Promise<T>): Promise<T> {
    const p = await this.session();
    try {
      return await fn(p);
    } catch (err) {
      const timedOut = isRequestTimeout(err);
      if ((timedOut || !isRetriable(err)) && this.producer === p) {
        this.producer = undefined;
        this.logger?.warn(
          timedOut
            ? 'producer session discarded after a request timed out'
            : 'producer session discarded after a refused request',
          { error: (err as Error).message.slice(0, 300) },
        );
        void p.disconnect().catch(() => undefined);
      }
      throw err;
    }
  }

  private session(): Promise<Producer> {
    if (this.closed) return Promise.reject(new FeromoniosError('BUS_CLOSED', 'the producer is closed'));
    if (this.producer) return Promise.resolve(this.producer);
    this.connecting ??= (async () => {
      const p = this.kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      try {
        await p.connect();
      } catch (err) {
        // a connect that failed half-way (metadata refused after the socket opened) keeps its socket
        await p.disconnect().catch(() => undefined);
        throw err;
      } finally {
        this.connecting = undefined;
      }
      if (this.closed) {
        await p.disconnect().catch(() => undefined); // close() ran while this session opened
        throw new FeromoniosError('BUS_CLOSED', 'the producer is closed');
      }
      this.producer = p;
      return p;
    })();
    return this.connecting;
  }
}

/** Whether `err` (or an error it wraps: kafkajs's retrier nests its causes) is a request that timed out. */
export function isRequestTimeout(err: unknown, depth = 0): boolean {
  if (!(err instanceof Error) || depth > 5) return false;
  if (err.name === 'KafkaJSRequestTimeoutError') return true;
  const e = err as Error & { cause?: unknown; originalError?: unknown };
  return isRequestTimeout(e.cause, depth + 1) || isRequestTimeout(e.originalError, depth + 1);
}
