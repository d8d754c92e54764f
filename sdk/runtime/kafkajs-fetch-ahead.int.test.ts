import fc from 'fast-check';
import { Kafka, logLevel, type Consumer, type EachBatchPayload } from 'kafkajs';
import { randomSuffix, serviceEnv } from '../../test/harness';
import { patchKafkajsFetchAhead, restoreKafkajsFetchAhead } from './kafkajs-fetch-ahead';

/**
 * kafkajs's consumer fetching ahead (ADR 0028) against a real broker: the next fetch is on the
 * wire while a batch is handled, and what the workers get is what kafkajs as released gives them —
 * every batch starting at the partition's resolved offset (or its seek), none for a paused
 * partition, the commits what the handler resolved — whatever the handler does with a batch.
 */
const PARTITIONS = 3;
const PER_PARTITION = 60;

const kafka = new Kafka({ clientId: 'fetch-ahead-test', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let topic: string;

beforeAll(async () => {
  if (!patchKafkajsFetchAhead()) throw new Error('kafkajs is not the version the fetch ahead was written for');
  topic = `fetch-ahead-${randomSuffix()}`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }], waitForLeaders: true });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  // five records per send: small record batches, so that a small fetch returns a few of them
  for (let p = 0; p < PARTITIONS; p++)
    for (let i = 0; i < PER_PARTITION; i += 5)
      await producer.send({
        topic,
        messages: Array.from({ length: 5 }, (_, k) => ({ partition: p, value: `${p}:${i + k}` })),
      });
  await producer.disconnect();
});

afterAll(() => {
  patchKafkajsFetchAhead(); // as the SDK leaves it
});

/** A consumer of its own group reading `topic` from the beginning, a few record batches per fetch. */
async function consumerOf(group: string, run: (c: Consumer) => Promise<void>): Promise<Consumer> {
  const c = kafka.consumer({ groupId: group, maxBytesPerPartition: 400, maxWaitTimeInMs: 50 });
  await c.connect();
  await c.subscribe({ topics: [topic], fromBeginning: true });
  await run(c);
  return c;
}

async function until(what: string, done: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

describe('kafkajs fetching ahead', () => {
  it('sends the next fetch while a batch is handled (kafkajs as released waits for the batch)', async () => {
    const fetchesDuringFirstBatch = async (): Promise<number> => {
      let fetches = 0;
      let during = -1;
      const c = await consumerOf(`fetch-ahead-${randomSuffix()}`, async (c) => {
        c.on(c.events.REQUEST, ({ payload }) => {
          if (payload.apiName === 'Fetch') fetches++;
        });
        await c.run({
          eachBatch: async ({ batch }) => {
            if (during >= 0 || batch.messages.length === 0) return;
            const before = fetches;
            await sleep(400);
            during = fetches - before;
          },
        });
      });
      await until('the first batch', () => during >= 0);
      await c.disconnect();
      return during;
    };
    expect(await fetchesDuringFirstBatch()).toBeGreaterThan(0);
    restoreKafkajsFetchAhead();
    try {
      expect(await fetchesDuringFirstBatch()).toBe(0);
    } finally {
      patchKafkajsFetchAhead();
    }
  });

  /** What a handler does with one batch it is given. */
  type Step =
    | { kind: 'resolve'; share: number } // resolves the first share of the batch (0: none)
    | { kind: 'pause'; share: number; ms: number } // resolves a share, pauses, resumes ms later
    | { kind: 'seek'; back: number }; // resolves nothing, seeks `back` records before the batch

  const step: fc.Arbitrary<Step> = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        kind: fc.constant('resolve' as const),
        share: fc.double({ min: 0, max: 1, noNaN: true }),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('pause' as const),
        share: fc.double({ min: 0, max: 1, noNaN: true }),
        ms: fc.integer({ min: 0, max: 120 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('seek' as const), back: fc.integer({ min: 0, max: 20 }) }) },
  );

  it('hands every batch from where the consumer is, whatever the handler did with the one before', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const group = `fetch-ahead-${randomSuffix()}`;
        // per partition: where the next batch must start, whether it is paused, how far handled
        const next = new Map<number, number>();
        const paused = new Set<number>();
        const handled = new Map<number, number>();
        const wrong: string[] = [];
        let calls = 0;
        let stopping = false;
        const timers: NodeJS.Timeout[] = [];
        let consumer: Consumer | undefined;
        const handle = async (p: EachBatchPayload): Promise<void> => {
          const { batch } = p;
          const partition = batch.partition;
          if (stopping || batch.messages.length === 0) return;
          const first = Number(batch.messages[0]?.offset);
          const expected = next.get(partition) ?? 0;
          if (first !== expected) wrong.push(`partition ${partition}: batch at ${first}, consumer at ${expected}`);
          if (paused.has(partition)) wrong.push(`partition ${partition}: a batch while paused`);
          // the steps once, then every batch handled whole: the run ends whatever the steps were
          const s: Step = steps[calls++] ?? { kind: 'resolve', share: 1 };
          const resolveShare = (share: number): void => {
            const n = Math.floor(share * batch.messages.length);
            if (n === 0) return;
            const last = Number(batch.messages[n - 1]?.offset);
            p.resolveOffset(String(last));
            next.set(partition, last + 1);
            handled.set(partition, Math.max(handled.get(partition) ?? 0, last + 1));
          };
          if (s.kind === 'resolve') resolveShare(s.share);
          else if (s.kind === 'pause') {
            resolveShare(s.share);
            const resume = p.pause();
            paused.add(partition);
            timers.push(
              setTimeout(() => {
                paused.delete(partition);
                resume();
              }, s.ms),
            );
          } else {
            const to = Math.max(0, first - s.back);
            consumer?.seek({ topic, partition, offset: String(to) });
            next.set(partition, to);
          }
          await sleep(1); // the fetch ahead gets its turn on the wire
        };
        await consumerOf(group, (c) => {
          consumer = c;
          return c.run({ eachBatchAutoResolve: false, partitionsConsumedConcurrently: PARTITIONS, eachBatch: handle });
        });
        try {
          await until('every record handled', () =>
            Array.from({ length: PARTITIONS }, (_, q) => handled.get(q) ?? 0).every((h) => h >= PER_PARTITION),
          );
        } finally {
          stopping = true;
          timers.forEach(clearTimeout);
          await consumer?.disconnect();
        }
        expect(wrong).toEqual([]);
        // what the group committed is what the handler resolved, never what was only fetched ahead
        const admin = kafka.admin();
        await admin.connect();
        const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
        await admin.disconnect();
        const byPartition = new Map((committed?.partitions ?? []).map((x) => [x.partition, Number(x.offset)]));
        for (let q = 0; q < PARTITIONS; q++) expect(byPartition.get(q)).toBe(next.get(q));
      }),
      { numRuns: 25 },
    );
  }, 240_000);
});
