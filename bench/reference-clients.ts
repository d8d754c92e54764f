import { Producer, ProduceAcks, stringSerializer } from '@platformatic/kafka';
import { Partitioners, type Kafka, type Message, type Producer as KafkaJsProducer } from 'kafkajs';

/** What each publish reference offers the benchmark: one message per call, awaited until acknowledged. */
export interface ReferenceProducer {
  name: string;
  send(messages: Message[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * A connected plain kafkajs producer with the SDK's guarantees (sdk/runtime/producer.ts):
 * idempotent, one request in flight, murmur2 partitioner, no topic auto-creation.
 */
export async function kafkajsProducer(kafka: Kafka): Promise<KafkaJsProducer> {
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  return producer;
}

/** Plain kafkajs as most code uses it: one `send()` per call. */
export const kafkajsPerCall = (producer: KafkaJsProducer, topic: string): ReferenceProducer => ({
  name: 'kafkajs `send()` per call',
  send: async (messages) => void (await producer.send({ topic, acks: -1, messages })),
  close: () => producer.disconnect(),
});

/**
 * The strongest plain code a user would write around a client's `send`: calls queue their
 * messages, and one loop sends everything queued in a single request while the previous one is
 * in flight (what the SDK does inside `publicar`, docs/publishing.md "natural batching"),
 * resolving each caller when its batch is acknowledged.
 */
function batchedByHand(name: string, sendAll: (messages: Message[]) => Promise<void>, close: () => Promise<void>) {
  let queue: Array<{ messages: Message[]; done: (err?: Error) => void }> = [];
  let sending = false;
  const drain = async (): Promise<void> => {
    sending = true;
    while (queue.length > 0) {
      const batch = queue;
      queue = [];
      try {
        await sendAll(batch.flatMap((b) => b.messages));
        for (const b of batch) b.done();
      } catch (err) {
        for (const b of batch) b.done(err instanceof Error ? err : new Error('send failed'));
      }
    }
    sending = false;
  };
  return {
    name,
    send: (messages: Message[]) =>
      new Promise<void>((resolve, reject) => {
        queue.push({
          messages,
          done: (err) => (err ? reject(err) : resolve()),
        });
        if (!sending) void drain();
      }),
    close,
  } satisfies ReferenceProducer;
}

/** kafkajs batched by hand (`batchedByHand`). */
export const kafkajsBatched = (producer: KafkaJsProducer, topic: string): ReferenceProducer =>
  batchedByHand(
    'kafkajs, batched by hand',
    async (messages) => void (await producer.send({ topic, acks: -1, messages })),
    () => producer.disconnect(),
  );

/**
 * `@platformatic/kafka` 1.x (2.x needs Node 22) with the same guarantees: idempotent, which it
 * turns into `acks=all` and one request in flight — batched by hand, because concurrent `send()`
 * calls on its idempotent producer are not safe (out-of-order sequence errors here with 1.35;
 * silently dropped messages in 2.1: platformatic/kafka#326).
 */
export function platformaticProducer(brokers: string[], topic: string): ReferenceProducer {
  const producer = new Producer<string, Buffer, string, string>({
    clientId: 'bench-platformatic',
    bootstrapBrokers: brokers,
    idempotent: true,
    acks: ProduceAcks.ALL,
    autocreateTopics: false,
    serializers: {
      key: stringSerializer,
      value: (v?: Buffer) => v,
      headerKey: stringSerializer,
      headerValue: stringSerializer,
    },
  });
  return batchedByHand(
    '`@platformatic/kafka` 1.x, batched by hand',
    async (messages) =>
      void (await producer.send({
        messages: messages.map((m) => ({
          topic,
          key: String(m.key),
          value: m.value as Buffer,
          headers: m.headers as Record<string, string>,
          timestamp: BigInt(m.timestamp ?? Date.now()),
        })),
      })),
    () => producer.close(),
  );
}
