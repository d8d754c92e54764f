import {
  type ICustomPartitioner,
  type Kafka,
  type Producer,
  type ProducerBatch,
  type ProducerRecord,
  type RecordMetadata,
  type TopicMessages,
} from 'kafkajs';
import { BrokerError, FeromoniosError, isRetriable } from '../errors';
import type { Logger } from './logger';
import { murmur2Partitioner } from './partitioner';

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
 *
 * kafkajs 2.2.4 can also resolve a send without having written all of it (tulios/kafkajs#1303,
 * PR #1798): its retries keep the responses of the brokers that answered, and a partition whose
 * leader moved to one of those brokers is never sent again — its records are missing from the
 * result, and from Kafka. So every send is checked: each partition it targeted must be in the
 * result, and the records of a partition that is not are sent again (they were not written, or
 * the idempotent producer drops the copy). `send` and `sendBatch` resolve only when every record
 * was acknowledged.
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
    const { topic, messages, ...options } = record;
    return this.sendConfirmed({ ...options, topicMessages: [{ topic, messages }] });
  }

  sendBatch(batch: ProducerBatch): Promise<RecordMetadata[]> {
    return this.sendConfirmed(batch);
  }

  /** Sends, then sends again what kafkajs's answer leaves unconfirmed (see the class). */
  private async sendConfirmed(batch: ProducerBatch): Promise<RecordMetadata[]> {
    const confirmed: RecordMetadata[] = [];
    let pending = batch.topicMessages ?? [];
    for (let round = 1; ; round++) {
      const results = await this.run((p) => p.sendBatch({ ...batch, topicMessages: pending }));
      confirmed.push(...results);
      pending = unconfirmed(pending, results);
      if (pending.length === 0) return confirmed;
      const partitions = pending.flatMap(({ topic, messages }) => [
        ...new Set(messages.map((m) => `${topic}/${m.partition ?? '?'}`)),
      ]);
      if (round >= CONFIRMATION_ROUNDS)
        throw new BrokerError(`the broker did not acknowledge ${partitions.join(', ')} after ${round} sends`);
      this.logger?.warn('kafkajs resolved a send without some partitions; sending their records again', {
        partitions,
        round,
      });
    }
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
        createPartitioner: recordingPartitioner,
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

/**
 * Whether `err` or an error it wraps (kafkajs's retrier nests its causes in `cause` and
 * `originalError`, five levels at most looked at) is an `Error` named one of `names`.
 */
function wrapsErrorNamed(err: unknown, names: ReadonlySet<string>, depth = 0): boolean {
  if (!(err instanceof Error) || depth > 5) return false;
  if (names.has(err.name)) return true;
  const e = err as Error & { cause?: unknown; originalError?: unknown };
  return wrapsErrorNamed(e.cause, names, depth + 1) || wrapsErrorNamed(e.originalError, names, depth + 1);
}

const REQUEST_TIMEOUT = new Set(['KafkaJSRequestTimeoutError']);
const BROKER_GONE = new Set(['KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSBrokerNotFound']);

/** Whether `err` (or an error it wraps: kafkajs's retrier nests its causes) is a request that timed out. */
export function isRequestTimeout(err: unknown): boolean {
  return wrapsErrorNamed(err, REQUEST_TIMEOUT);
}

/**
 * Whether `err` (or an error it wraps) says a broker kafkajs was talking to is gone: a connection
 * refused, reset or closed, or a broker id its cached metadata no longer has. A consumer keeps the
 * group coordinator it found when it joined, and kafkajs retries a commit or a heartbeat against
 * it — a coordinator that died is retried for the consumer's whole retry budget (~30 s) before the
 * consumer crashes and finds the new one. A caller that sees this can start the consumer anew at once.
 */
export function isBrokerUnreachable(err: unknown): boolean {
  return wrapsErrorNamed(err, BROKER_GONE);
}

/** Sends of one batch before the records kafkajs keeps leaving out are refused (retriably). */
const CONFIRMATION_ROUNDS = 5;

/**
 * The murmur2 partitioner (Java clients', Redpanda tooling's, kafkajs's default; sdk/runtime/partitioner.ts),
 * writing its choice into the message, so that a message sent without a partition can be matched
 * with the result afterwards (and a retry keeps it where the first try put it).
 */
const recordingPartitioner: ICustomPartitioner = () => {
  const murmur2 = murmur2Partitioner();
  return (args) => {
    const partition = murmur2(args);
    args.message.partition = partition;
    return partition;
  };
};

/**
 * The messages of `sent` whose partition has no entry in kafkajs's `results` (so were not
 * acknowledged), grouped by topic as sent, in their order. A message without a partition (kafkajs
 * never partitioned it) counts as unconfirmed.
 */
export function unconfirmed(sent: TopicMessages[], results: RecordMetadata[]): TopicMessages[] {
  const acknowledged = new Set(results.map((r) => `${r.topicName}\u0000${r.partition}`));
  const out: TopicMessages[] = [];
  for (const { topic, messages } of sent) {
    const missing = messages.filter(
      (m) => typeof m.partition !== 'number' || !acknowledged.has(`${topic}\u0000${m.partition}`),
    );
    if (missing.length > 0) out.push({ topic, messages: missing });
  }
  return out;
}
