import { expectOriginalKeptOnceBound } from '../../test/harness/kafkajs-swap';
import fc from 'fast-check';
import {
  KAFKAJS_PRODUCE_REQUEST_VERSION,
  patchKafkajsProduceRequest,
  produceRequest,
  restoreKafkajsProduceRequest,
  type ProduceArgs,
  type ProduceMessage,
  type ProduceRequestFn,
} from './kafkajs-produce-request';
import { patchEncoder, restoreEncoder, type EncoderClass } from './kafkajs-encoder';

/* eslint-disable @typescript-eslint/no-require-imports */

type Long = { fromInt(n: number): unknown; fromValue(v: unknown): unknown };
const Encoder = require('kafkajs/src/protocol/encoder') as Parameters<typeof produceRequest>[0];
const Long = require('kafkajs/src/utils/long') as Long;
/** kafkajs's own produce request, as released (loaded before anything is patched in this registry). */
const original = require('kafkajs/src/protocol/requests/produce/v3/request') as ProduceRequestFn;
const ours = produceRequest(Encoder, Long, original);

/** The bytes a request encodes to, or the error it throws (its class and message). */
async function outcome(make: ProduceRequestFn, args: ProduceArgs): Promise<string> {
  try {
    const request = make(args);
    const encoded = (await request.encode()) as { buffer: Buffer };
    return `${request.apiKey}/${request.apiVersion}/${request.apiName}/${request.expectResponse()} ${encoded.buffer.toString('hex')}`;
  } catch (err) {
    return `${(err as Error).constructor.name}: ${(err as Error).message}`;
  }
}

const NOW = 1_764_900_000_000;

/** Texts: ASCII and not, around the 256 characters up to which ASCII is written without \`Buffer\`. */
const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ minLength: 250, maxLength: 600 }),
  fc.constantFrom('', 'ção', '🐜', '\u0000', '\u007f', '\u0080', '\ud800', 'x'.repeat(256), 'x'.repeat(257)),
);
const bytes = fc.oneof(
  { weight: 9, arbitrary: fc.uint8Array({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.uint8Array({ minLength: 4_000, maxLength: 40_000 }) },
);
const keyOrValue = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  text,
  bytes.map((b) => Buffer.from(b)),
);
/** Timestamps as producers give them: none, numbers and texts around now (sorted as text by kafkajs), garbage. */
const timestamp = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 3, arbitrary: fc.integer({ min: NOW - 100_000_000, max: NOW + 100_000_000 }) },
  { weight: 3, arbitrary: fc.integer({ min: NOW - 100_000_000, max: NOW + 100_000_000 }).map(String) },
  { weight: 1, arbitrary: fc.constantFrom(0, '0', '', 'abc', 1.5, '999', -1, Number.NaN) },
);
const headerValue = fc.oneof(
  text,
  bytes.map((b) => Buffer.from(b)),
  fc.array(text, { maxLength: 3 }),
);
const headers = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 6, arbitrary: fc.dictionary(text, headerValue, { maxKeys: 10 }) },
  { weight: 1, arbitrary: fc.constantFrom({ n: 1 }, { v: null }, { u: undefined }) }, // kafkajs refuses these
);
const message: fc.Arbitrary<ProduceMessage> = fc.record(
  { key: keyOrValue, value: keyOrValue, headers, timestamp },
  { requiredKeys: [] },
);
const args: fc.Arbitrary<ProduceArgs> = fc.record({
  acks: fc.constantFrom(-1, 0, 1),
  timeout: fc.nat(60_000),
  transactionalId: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
  producerId: fc.oneof(
    fc.constant(undefined),
    fc.integer({ min: -1, max: 1_000_000 }).map((n) => Long.fromInt(n)),
    fc.bigInt({ min: -1n, max: 2n ** 62n }).map((n) => Long.fromValue(n)),
  ),
  producerEpoch: fc.option(fc.nat(32_767), { nil: undefined }),
  compression: fc.constantFrom(undefined, 0),
  topicData: fc.array(
    fc.record({
      topic: fc.string({ minLength: 1, maxLength: 40 }),
      partitions: fc.array(
        fc.record(
          {
            partition: fc.nat(1_000),
            firstSequence: fc.nat(2 ** 31 - 1),
            messages: fc.array(message, { maxLength: 8 }),
          },
          { requiredKeys: ['partition', 'messages'] },
        ),
        { maxLength: 4 },
      ),
    }),
    { minLength: 1, maxLength: 3 },
  ),
});

describe("kafkajs's produce request in one pass (docs/adr/0022-kafkajs-encoder-allocations.md, addendum)", () => {
  beforeEach(() => jest.spyOn(Date, 'now').mockReturnValue(NOW));
  afterEach(() => jest.restoreAllMocks());

  it("writes the bytes of kafkajs's own produce request, or throws its error, for any request (property)", async () => {
    await fc.assert(
      fc.asyncProperty(args, async (a) => {
        expect(await outcome(ours, a)).toBe(await outcome(original, a));
      }),
      { numRuns: 1_500 },
    );
  });

  it('writes the same bytes on the encoder every Feromônios client patches (ADR 0022)', async () => {
    patchEncoder(Encoder as unknown as EncoderClass);
    try {
      await fc.assert(
        fc.asyncProperty(args, async (a) => {
          expect(await outcome(ours, a)).toBe(await outcome(original, a));
        }),
        { numRuns: 500 },
      );
    } finally {
      restoreEncoder(Encoder as unknown as EncoderClass);
    }
  });

  it('writes a request of CloudEvents records, two topics, several partitions, exactly as kafkajs does', async () => {
    const cloudEvent = (i: number): ProduceMessage => ({
      key: `correlacao-${i}`,
      value: Buffer.concat([Buffer.from([0, 0, 0, 0, 7]), Buffer.from(JSON.stringify({ demanda_id: `D-${i}` }))]),
      headers: {
        ce_specversion: '1.0',
        ce_id: `00000000-0000-4000-8000-00000000000${i}`,
        ce_type: 'demanda.categorizada',
        ce_source: 'D-3',
        ce_time: '2026-12-05T07:00:00.000Z',
        traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
        feromonios_ordem: [`s:${i}`, 'x'],
      },
    });
    const request: ProduceArgs = {
      acks: -1,
      timeout: 30_000,
      producerId: Long.fromInt(42),
      producerEpoch: 3,
      topicData: [
        {
          topic: 'feromonios.evento.demanda.categorizada',
          partitions: [
            { partition: 0, firstSequence: 17, messages: [0, 1, 2].map(cloudEvent) },
            { partition: 2, firstSequence: 0, messages: [3, 4].map(cloudEvent) },
          ],
        },
        { topic: 'feromonios.evento.demanda.recebida', partitions: [{ partition: 1, messages: [cloudEvent(5)] }] },
      ],
    };
    const mine = await outcome(ours, request);
    expect(mine).toBe(await outcome(original, request));
    expect(mine.startsWith('0/3/Produce/true ')).toBe(true);
  });

  it("leaves a compressed request to kafkajs's own encoding", async () => {
    const request: ProduceArgs = {
      acks: -1,
      timeout: 1_000,
      compression: 1, // GZIP
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [{ key: 'k', value: 'v'.repeat(500) }] }] }],
    };
    const delegated = jest.fn(original);
    const mine = await outcome(produceRequest(Encoder, Long, delegated), request);
    expect(delegated).toHaveBeenCalledTimes(1);
    expect(mine).toBe(await outcome(original, request));
  });

  it('is written for the kafkajs installed (the replacement is installed only for that version)', () => {
    expect((require('kafkajs/package.json') as { version: string }).version).toBe(KAFKAJS_PRODUCE_REQUEST_VERSION);
  });

  it('is not installed in a process that already produced with kafkajs: the original stays bound', () => {
    expectOriginalKeptOnceBound({
      binder: 'kafkajs/src/protocol/requests/produce/v4/request', // as by a first produce, before the patch
      module: 'kafkajs/src/protocol/requests/produce/v3/request',
      load: () =>
        (require('./kafkajs-produce-request') as { patchKafkajsProduceRequest: typeof patchKafkajsProduceRequest })
          .patchKafkajsProduceRequest,
    });
  });

  it('is what kafkajs’s produce request (version 7, as negotiated with Kafka 4) encodes with once patched, and can be taken back', async () => {
    // (jest gives this file a module registry of its own: kafkajs has not produced in it)
    expect(patchKafkajsProduceRequest()).toBe(true);
    expect(patchKafkajsProduceRequest()).toBe(true); // a second call changes nothing
    const produce = require('kafkajs/src/protocol/requests/produce') as {
      protocol(v: { version: number }): (o: object) => {
        request: { apiVersion: number; encode(): Promise<{ buffer: Buffer }> };
      };
    };
    const request = () =>
      produce.protocol({ version: 7 })({
        acks: -1,
        timeout: 30_000,
        producerId: Long.fromInt(7),
        topicData: [
          { topic: 'feromonios.evento.x', partitions: [{ partition: 1, messages: [{ key: 'k', value: 'v' }] }] },
        ],
      }).request;
    // Which one runs shows in the encoders made: the one pass makes one; kafkajs's own, a tree of
    // them (each constructor sizes its buffer by `nextPowerOfTwo`)
    const made = jest.spyOn(Encoder as unknown as { nextPowerOfTwo: (v: number) => number }, 'nextPowerOfTwo');
    const mine = request();
    expect(mine.apiVersion).toBe(7);
    const mineBytes = (await mine.encode()).buffer;
    const withReplacement = made.mock.calls.length;
    restoreKafkajsProduceRequest(); // kafkajs's own, for a benchmark's plain-kafkajs reference
    made.mockClear();
    const theirs = (await request().encode()).buffer;
    const withOriginal = made.mock.calls.length;
    expect(mineBytes.equals(theirs)).toBe(true);
    expect(withReplacement).toBe(1);
    expect(withOriginal).toBeGreaterThan(5);
    expect(patchKafkajsProduceRequest()).toBe(true);
    made.mockClear();
    expect((await request().encode()).buffer.equals(theirs)).toBe(true);
    expect(made.mock.calls.length).toBe(1);
  });
});
/* eslint-enable @typescript-eslint/no-require-imports */
