import { expectOriginalKeptOnceBound } from '../../test/harness/kafkajs-swap';
import fc from 'fast-check';
import {
  KAFKAJS_RECORD_ENCODER_VERSION,
  patchKafkajsRecordEncoder,
  recordEncoder,
  restoreKafkajsRecordEncoder,
  type RecordEncoderClass,
  type RecordEncoderFn,
  type RecordInput,
} from './kafkajs-record-encoder';

/* eslint-disable @typescript-eslint/no-require-imports */

const Encoder = require('kafkajs/src/protocol/encoder') as RecordEncoderClass;
/** kafkajs's own record encoder, as released (read before anything is patched in this registry). */
const original = require('kafkajs/src/protocol/recordBatch/record/v0') as RecordEncoderFn;
const ours = recordEncoder(Encoder);

/** The bytes a record encoder writes, or the error it throws (its class and message). */
function outcome(encode: RecordEncoderFn, record: RecordInput): string {
  try {
    return (encode(record) as { buffer: Buffer }).buffer.toString('hex');
  } catch (err) {
    return `${(err as Error).constructor.name}: ${(err as Error).message}`;
  }
}

/** Texts with control characters, NUL and lone surrogates (written as U+FFFD by both), accents, emoji. */
const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme' }),
  fc.string({ minLength: 250, maxLength: 600 }), // around the 256 characters up to which ASCII is written without \`Buffer\`
  fc.constantFrom(
    '',
    'ção',
    '🐜',
    '\u0000',
    '\u007f',
    '\u0080',
    '\ud800',
    '\r\n\t\u001b',
    'x'.repeat(256),
    'x'.repeat(257),
  ),
);
/** Bytes, now and then past kafkajs's 4 KiB buffer pool and several doublings of a record's buffer. */
const bytes = fc
  .oneof(
    { weight: 9, arbitrary: fc.uint8Array({ maxLength: 200 }) },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 4000, maxLength: 70_000 }) },
  )
  .map((a) => Buffer.from(a));
/** What a producer may give as a key or a value: kafkajs takes strings, buffers and null. */
const keyOrValue = fc.oneof(text, bytes, fc.constant(null), fc.constant(undefined));
/** A header's value: a string or a buffer, several of them (an array), or what kafkajs refuses. */
const headerValue = fc.oneof(
  { weight: 6, arbitrary: fc.oneof(text, bytes) },
  { weight: 2, arbitrary: fc.array(fc.oneof(text, bytes), { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, undefined, 7, true) },
);
const headerName = fc.oneof(text, fc.constantFrom('ce_id', 'traceparent', '__proto__', 'constructor', 'toString'));
const records: fc.Arbitrary<RecordInput> = fc.record(
  {
    offsetDelta: fc.nat({ max: 100_000 }),
    timestampDelta: fc.oneof(fc.integer({ min: -1000, max: 1_000_000 }), fc.constant(0)),
    key: keyOrValue,
    value: keyOrValue,
    // Object.fromEntries defines every key as an own property, '__proto__' included (as JSON.parse
    // does for a hostile caller's object); an assignment would set the prototype instead
    headers: fc
      .array(fc.tuple(headerName, headerValue), { maxLength: 12 })
      .map((pairs) => Object.fromEntries(pairs) as Record<string, unknown>),
  },
  { requiredKeys: ['key', 'value'] },
);

describe("kafkajs's record encoder, replaced (docs/adr/0022-kafkajs-encoder-allocations.md, addendum)", () => {
  it('writes the bytes of kafkajs’s own record encoder, or throws its error, for any record (property)', () => {
    fc.assert(
      fc.property(records, (record) => {
        expect(outcome(ours, record)).toBe(outcome(original, record));
      }),
      { numRuns: 3000 },
    );
  });

  it('writes a CloudEvents record with ten headers and a repeated one exactly as kafkajs does', () => {
    const headers = {
      ce_id: 'a8f4c3de-0a53-4b0c-9a1c-7d4e0f5b9e21',
      ce_type: 'demanda.categorizada',
      ce_source: 'D-3',
      ce_time: '2026-12-05T03:00:00.000Z',
      ce_specversion: '1.0',
      feromonios_versao_schema: '1.0.0',
      feromonios_correlacao_id: 'a8f4c3de-0a53-4b0c-9a1c-7d4e0f5b9e21',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      feromonios_ordem: 'a8f4c3de-0a53-4b0c-9a1c-7d4e0f5b9e21:12:11',
      repetido: ['um', Buffer.from('dois')],
    };
    const record = { offsetDelta: 3, timestampDelta: 17, key: 'chave', value: Buffer.from('{"x":1}'), headers };
    const mine = (ours(record) as { buffer: Buffer }).buffer;
    expect(mine.equals((original(record) as { buffer: Buffer }).buffer)).toBe(true);
    expect(mine.includes(Buffer.from('dois'))).toBe(true);
  });

  it('refuses what kafkajs refuses — a header without a value, a number — with kafkajs’s error', () => {
    for (const bad of [null, undefined, 7]) {
      const record = { key: 'k', value: 'v', headers: { ce_id: 'x', estranho: bad } };
      expect(outcome(ours, record)).toMatch(/^TypeError: /);
      expect(outcome(ours, record)).toBe(outcome(original, record));
    }
  });

  it('is written for the kafkajs installed (the replacement is installed only for that version)', () => {
    expect((require('kafkajs/package.json') as { version: string }).version).toBe(KAFKAJS_RECORD_ENCODER_VERSION);
  });

  it('is not installed in a process that already produced with kafkajs: the original stays bound', () => {
    expectOriginalKeptOnceBound({
      binder: 'kafkajs/src/protocol/requests/produce/v3/request', // as by a first produce, before the patch
      module: 'kafkajs/src/protocol/recordBatch/record/v0',
      load: () =>
        (require('./kafkajs-record-encoder') as { patchKafkajsRecordEncoder: typeof patchKafkajsRecordEncoder })
          .patchKafkajsRecordEncoder,
    });
  });

  it('is what kafkajs’s produce request binds once patched before the first produce, and can be taken back', async () => {
    // (jest gives this file a module registry of its own: kafkajs has not produced in it)
    expect(patchKafkajsRecordEncoder()).toBe(true);
    expect(patchKafkajsRecordEncoder()).toBe(true); // a second call changes nothing
    const produce = require('kafkajs/src/protocol/requests/produce/v3/request') as (o: object) => {
      encode(): Promise<{ buffer: Buffer }>;
    };
    const Long = require('kafkajs/src/utils/long') as { fromInt(n: number): unknown };
    const request = () =>
      produce({
        acks: -1,
        timeout: 30_000,
        producerId: Long.fromInt(7),
        topicData: [
          {
            topic: 'feromonios.evento.demanda.categorizada',
            partitions: [
              {
                partition: 1,
                firstSequence: 0,
                messages: [0, 1, 2].map((i) => ({
                  key: `k${i}`,
                  value: `v${i}`,
                  timestamp: 1_700_000_000_000 + i,
                  headers: { ce_id: `id-${i}`, traceparent: ['a', 'b'] },
                })),
              },
            ],
          },
        ],
      }).encode();
    // Which one runs shows in the encoders kafkajs creates: the original makes one per header
    // besides the record's (each constructor sizes its buffer by `nextPowerOfTwo`), the
    // replacement none — nine headers here.
    const made = jest.spyOn(Encoder as unknown as { nextPowerOfTwo: (v: number) => number }, 'nextPowerOfTwo');
    const mine = (await request()).buffer;
    const withReplacement = made.mock.calls.length;
    restoreKafkajsRecordEncoder(); // kafkajs's own, for a benchmark's plain-kafkajs reference
    made.mockClear();
    const theirs = (await request()).buffer;
    const withOriginal = made.mock.calls.length;
    expect(mine.equals(theirs)).toBe(true);
    expect(withOriginal - withReplacement).toBeGreaterThanOrEqual(9);
    expect(patchKafkajsRecordEncoder()).toBe(true);
    made.mockClear();
    expect((await request()).buffer.equals(theirs)).toBe(true);
    expect(made.mock.calls.length).toBe(withReplacement);
    made.mockRestore();
  });
});
/* eslint-enable @typescript-eslint/no-require-imports */
