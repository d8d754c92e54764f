import fc from 'fast-check';
import {
  type ICustomPartitioner,
  type Kafka,
  KafkaJSBrokerNotFound,
  KafkaJSConnectionError,
  KafkaJSNonRetriableError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
  KafkaJSRequestTimeoutError,
  type ProducerBatch,
  type RecordMetadata,
  type TopicMessages,
} from 'kafkajs';
import { BrokerError, isRetriable } from '../errors';
import { isBrokerUnreachable, isRequestTimeout, SessionProducer, unconfirmed } from './producer';

describe('isBrokerUnreachable (a consumer whose broker is gone starts anew instead of retrying it)', () => {
  it('sees a refused, reset or closed connection and a broker missing from the metadata, also wrapped', () => {
    const refused = new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:29094');
    expect(isBrokerUnreachable(refused)).toBe(true);
    // kafkajs exports the class without declaring it, and declares the other without its message
    const { KafkaJSConnectionClosedError } = jest.requireActual<Record<string, new (m: string) => Error>>('kafkajs');
    expect(isBrokerUnreachable(new KafkaJSConnectionClosedError!('Closed connection'))).toBe(true);
    const NotFound = KafkaJSBrokerNotFound as unknown as new (m: string) => Error;
    expect(isBrokerUnreachable(new NotFound('Broker 3 not found in the cached metadata'))).toBe(true);
    expect(isBrokerUnreachable(new KafkaJSNumberOfRetriesExceeded(refused, { retryCount: 5, retryTime: 1000 }))).toBe(
      true,
    );
    expect(isBrokerUnreachable(new Error('commit failed', { cause: refused }))).toBe(true);
  });

  it('does not take a broker that answered (an error code), a database error, non-errors or endless chains for one', () => {
    expect(isBrokerUnreachable(new KafkaJSProtocolError('The coordinator is loading'))).toBe(false);
    expect(isBrokerUnreachable(new KafkaJSNonRetriableError('refused'))).toBe(false);
    expect(isBrokerUnreachable(new KafkaJSRequestTimeoutError('timed out'))).toBe(false);
    expect(isBrokerUnreachable(Object.assign(new Error('Connection terminated'), { code: '57P01' }))).toBe(false);
    expect(isBrokerUnreachable(new Error('KafkaJSConnectionError'))).toBe(false); // the name decides, not the text
    expect(isBrokerUnreachable({ name: 'KafkaJSConnectionError' })).toBe(false);
    expect(isBrokerUnreachable(undefined)).toBe(false);
    const loop = new Error('loop') as Error & { cause?: unknown };
    loop.cause = loop;
    expect(isBrokerUnreachable(loop)).toBe(false);
  });
});

describe('isRequestTimeout (a timed-out request discards the producer session)', () => {
  it('sees a request timeout, also wrapped by kafkajs retries or by a cause chain', () => {
    const timeout = new KafkaJSRequestTimeoutError('Request Produce(key: 0, version: 7) timed out');
    expect(isRequestTimeout(timeout)).toBe(true);
    expect(isRequestTimeout(new KafkaJSNumberOfRetriesExceeded(timeout, { retryCount: 5, retryTime: 1000 }))).toBe(
      true,
    );
    expect(isRequestTimeout(new Error('broker unavailable', { cause: timeout }))).toBe(true);
  });

  it('does not take other errors, non-errors or endless chains for one', () => {
    expect(isRequestTimeout(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED'))).toBe(false);
    expect(isRequestTimeout(new Error('Request timed out'))).toBe(false); // the name decides, not the text
    expect(isRequestTimeout('KafkaJSRequestTimeoutError')).toBe(false);
    expect(isRequestTimeout(undefined)).toBe(false);
    const loop = new Error('loop') as Error & { cause?: unknown };
    loop.cause = loop;
    expect(isRequestTimeout(loop)).toBe(false);
  });
});

describe('unconfirmed (kafkajs can resolve a send without some partitions: kafkajs#1303)', () => {
  const meta = (topicName: string, partition: number): RecordMetadata => ({
    topicName,
    partition,
    errorCode: 0,
    baseOffset: '0',
  });

  it('returns exactly the messages whose partition has no result, grouped and ordered as sent', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            topic: fc.constantFrom('a', 'b', 'c'),
            partitions: fc.array(fc.nat({ max: 5 }), { minLength: 1, maxLength: 20 }),
          }),
          { maxLength: 4 },
        ),
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c'), fc.nat({ max: 5 })), { maxLength: 12 }),
        (groups, answered) => {
          const sent: TopicMessages[] = groups.map(({ topic, partitions }) => ({
            topic,
            messages: partitions.map((partition, i) => ({ key: `${topic}-${i}`, value: null, partition })),
          }));
          const results = answered.map(([t, p]) => meta(t, p));
          const ok = new Set(answered.map(([t, p]) => `${t}/${p}`));
          const expected = sent
            .map(({ topic, messages }) => ({
              topic,
              messages: messages.filter((m) => !ok.has(`${topic}/${m.partition}`)),
            }))
            .filter((g) => g.messages.length > 0);
          expect(unconfirmed(sent, results)).toEqual(expected);
        },
      ),
    );
  });

  it('counts a message kafkajs never partitioned as unconfirmed, and a topic only by its own results', () => {
    const sent: TopicMessages[] = [
      { topic: 'x', messages: [{ value: 'no partition' }, { value: 'p0', partition: 0 }] },
      { topic: 'y', messages: [{ value: 'p0', partition: 0 }] },
    ];
    // partition 0 of x answered; y's partition 0 is not x's
    expect(unconfirmed(sent, [meta('x', 0)])).toEqual([
      { topic: 'x', messages: [{ value: 'no partition' }] },
      { topic: 'y', messages: [{ value: 'p0', partition: 0 }] },
    ]);
    expect(unconfirmed(sent, [])).toEqual(sent);
  });
});

/**
 * The confirmation loop of SessionProducer around a stand-in kafkajs producer (pure logic: what
 * is sent again, and when it gives up). The real fault — a leader moving to a broker that already
 * answered — is fault scenario 1 (test/faults/kafka-faults.faults.test.ts).
 */
describe('SessionProducer sends again what kafkajs left unconfirmed', () => {
  const fakeKafka = (answer: (batch: ProducerBatch, call: number) => RecordMetadata[]) => {
    const calls: ProducerBatch[] = [];
    const kafka = {
      producer: (opts: { createPartitioner: ICustomPartitioner }) => {
        const partitioner = opts.createPartitioner();
        return {
          connect: () => Promise.resolve(),
          disconnect: () => Promise.resolve(),
          sendBatch: (batch: ProducerBatch) => {
            // as kafkajs does: every message of every topic goes through the partitioner first
            for (const { topic, messages } of batch.topicMessages ?? [])
              for (const message of messages)
                partitioner({
                  topic,
                  message,
                  partitionMetadata: [0, 1, 2].map((partitionId) => ({
                    partitionId,
                    leader: 1,
                    replicas: [1],
                    isr: [1],
                    partitionErrorCode: 0,
                  })),
                });
            calls.push(structuredClone(batch));
            return Promise.resolve(answer(batch, calls.length));
          },
        };
      },
    } as unknown as Kafka;
    return { kafka, calls };
  };
  const all = (batch: ProducerBatch): RecordMetadata[] =>
    (batch.topicMessages ?? []).flatMap(({ topic, messages }) =>
      [...new Set(messages.map((m) => m.partition as number))].map((partition) => ({
        topicName: topic,
        partition,
        errorCode: 0,
        baseOffset: '7',
      })),
    );

  it('re-sends only the partitions missing from the answer, then resolves with every partition', async () => {
    const { kafka, calls } = fakeKafka((batch, call) =>
      call === 1 ? all(batch).filter((r) => r.partition !== 1) : all(batch),
    );
    const producer = new SessionProducer(kafka);
    const messages = [0, 1, 2, 1].map((partition, i) => ({ key: `k${i}`, value: `v${i}`, partition }));
    const results = await producer.send({ topic: 't', acks: -1, messages });
    expect(calls).toHaveLength(2);
    expect(calls[1]?.topicMessages).toEqual([
      { topic: 't', messages: [messages[1], messages[3]].map((m) => ({ ...m })) },
    ]);
    expect(results.map((r) => r.partition).sort()).toEqual([0, 1, 2]);
  });

  it('matches messages sent without a partition by the partition kafkajs chose for them', async () => {
    const { kafka, calls } = fakeKafka((batch, call) => (call === 1 ? [] : all(batch)));
    const producer = new SessionProducer(kafka);
    const messages = ['a', 'b', 'c'].map((key) => ({ key, value: key }));
    await producer.sendBatch({ acks: -1, topicMessages: [{ topic: 't', messages }] });
    expect(calls).toHaveLength(2);
    // the second send keeps the partitions of the first (murmur2 of the key)
    expect(calls[1]?.topicMessages?.[0]?.messages.map((m) => m.partition)).toEqual(
      calls[0]?.topicMessages?.[0]?.messages.map((m) => m.partition),
    );
  });

  it('refuses, retriably, a send kafkajs keeps answering without a partition', async () => {
    const { kafka, calls } = fakeKafka(() => []);
    const producer = new SessionProducer(kafka);
    const sending = producer.send({ topic: 't', acks: -1, messages: [{ value: 'x', partition: 2 }] });
    await expect(sending).rejects.toThrow(BrokerError);
    await expect(sending).rejects.toThrow('did not acknowledge t/2 after 5 sends');
    expect(calls).toHaveLength(5);
    expect(isRetriable(await sending.catch((e: unknown) => e))).toBe(true);
  });
});
