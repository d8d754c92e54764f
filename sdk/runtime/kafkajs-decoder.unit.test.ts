/* eslint-disable @typescript-eslint/no-require-imports */
import { expectOriginalKeptOnceBound } from '../../test/harness/kafkajs-swap';
import fc from 'fast-check';
import {
  KAFKAJS_DECODER_VERSION,
  patchKafkajsRecordDecoder,
  recordDecoder,
  restoreKafkajsRecordDecoder,
  type BatchContext,
  type KafkajsDecoder,
} from './kafkajs-decoder';

type DecoderClass = new (buffer: Buffer) => KafkajsDecoder;
type EncoderInstance = {
  writeInt8(v: number): EncoderInstance;
  writeVarInt(v: number): EncoderInstance;
  writeVarLong(v: unknown): EncoderInstance;
  writeVarIntBytes(v: Buffer | null): EncoderInstance;
  writeVarIntString(v: string | null): EncoderInstance;
  buffer: Buffer;
};
const Encoder = require('kafkajs/src/protocol/encoder') as new () => EncoderInstance;
const Decoder = require('kafkajs/src/protocol/decoder') as DecoderClass;
const Long = require('kafkajs/src/utils/long') as { fromValue(v: unknown): unknown };
const original = require('kafkajs/src/protocol/recordBatch/record/v0/decoder') as (
  d: KafkajsDecoder,
  c?: BatchContext,
) => unknown;
const ours = recordDecoder(Long as Parameters<typeof recordDecoder>[0]);

/** Everything observable about a value: own keys in order, prototypes, Buffers by content. */
function describeValue(v: unknown, seen = new Set<unknown>()): unknown {
  if (Buffer.isBuffer(v)) return { buffer: v.toString('hex') };
  if (v === Object.prototype) return '<Object.prototype>';
  if (typeof v === 'function') return `<function ${v.name}>`;
  if (typeof v !== 'object' || v === null) return { [typeof v]: String(v) };
  if (seen.has(v)) return '<cycle>';
  seen.add(v);
  const proto = Object.getPrototypeOf(v) as unknown;
  return {
    proto: proto === Object.prototype ? 'Object' : proto === Array.prototype ? 'Array' : String(proto),
    own: Reflect.ownKeys(v).map((k) => {
      const d = Object.getOwnPropertyDescriptor(v, k) as PropertyDescriptor;
      return [String(k), d.enumerable, d.writable, describeValue(d.value, seen)];
    }),
  };
}

/** What a decoder does with these bytes: its result (or error) and where it leaves the offset. */
function outcome(decode: typeof original, bytes: Buffer, ctx: BatchContext | undefined): unknown {
  const d = new Decoder(Buffer.from(bytes));
  try {
    const r = decode(d, ctx);
    return {
      ok: describeValue({ ...(r as object), batchContext: (r as { batchContext: unknown }).batchContext === ctx }),
      at: d.offset,
    };
  } catch (err) {
    return { error: `${(err as Error).constructor.name}: ${(err as Error).message}`, at: d.offset };
  }
}

const HOSTILE_KEYS = [
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'null',
  '0',
  '1',
  '10',
  'ce_id',
  'a',
];
const bytes = fc.oneof(
  fc.constant(null),
  fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
);
const header = fc.record({
  key: fc.oneof(fc.constantFrom(...HOSTILE_KEYS), fc.string({ maxLength: 12 }), fc.constant(null)),
  value: bytes,
  /** a key length written as a negative number other than -1 (no bytes follow) */
  badLength: fc.oneof(
    { weight: 9, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.integer({ min: -40, max: -2 }) },
  ),
});
const decimal = fc.oneof(
  fc.integer({ min: 0, max: 2 ** 40 }).map(String),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
  fc.constantFrom(
    '0',
    '-0',
    '007',
    '+5',
    'NaN',
    '999999999999999',
    '1000000000000000',
    '9007199254740991',
    '9007199254740993',
    '-9007199254740993',
    '12345678901234567',
  ),
);
const record = fc.record({
  attributes: fc.integer({ min: -128, max: 127 }),
  timestampDelta: fc.oneof(
    fc.integer({ min: -100, max: 100 }),
    fc.integer({ min: -(2 ** 27) - 5, max: 2 ** 27 + 5 }),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  ),
  offsetDelta: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  key: bytes,
  value: bytes,
  headers: fc.oneof(
    { weight: 8, arbitrary: fc.array(header, { maxLength: 12 }) },
    { weight: 1, arbitrary: fc.constantFrom(-1, -2, -7) },
  ),
  /** the record cut short (kafkajs reads past the end as zeros) */
  cut: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat({ max: 200 }) }),
});
const context = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  {
    weight: 9,
    arbitrary: fc.record(
      {
        firstOffset: decimal,
        firstTimestamp: decimal,
        maxTimestamp: fc.oneof(decimal, fc.constant('')),
        magicByte: fc.constant(2),
        isControlBatch: fc.boolean(),
        timestampType: fc.constantFrom(-1, 0, 1),
      },
      { requiredKeys: ['firstOffset', 'firstTimestamp'] },
    ),
  },
);

type Rec = typeof record extends fc.Arbitrary<infer T> ? T : never;

function encode(r: Rec): Buffer {
  const e = new Encoder()
    .writeInt8(r.attributes)
    .writeVarLong(typeof r.timestampDelta === 'bigint' ? r.timestampDelta.toString() : r.timestampDelta)
    .writeVarInt(r.offsetDelta)
    .writeVarIntBytes(r.key)
    .writeVarIntBytes(r.value);
  if (typeof r.headers === 'number') e.writeVarInt(r.headers);
  else {
    e.writeVarInt(r.headers.length);
    for (const h of r.headers) {
      if (h.badLength !== undefined) e.writeVarInt(h.badLength);
      else e.writeVarIntString(h.key);
      e.writeVarIntBytes(h.value);
    }
  }
  const buf = e.buffer;
  return r.cut === undefined ? buf : buf.subarray(0, Math.min(r.cut, buf.length));
}

describe("kafkajs's record decoder, replaced (ADR 0023)", () => {
  it('decodes every record exactly as the original: the same object, property for property, or the same error, and the same offset after', () => {
    fc.assert(
      fc.property(record, context, (r, ctx) => {
        const buf = encode(r);
        expect(outcome(ours, buf, ctx)).toEqual(outcome(original, buf, ctx));
      }),
      { numRuns: 3000 },
    );
  });

  it('merges headers as the original: repeated keys into arrays in order, prototype names as the original leaves them, __proto__ as an own property', () => {
    const r = {
      attributes: 0,
      timestampDelta: 3,
      offsetDelta: 7,
      key: null,
      value: Buffer.from('v'),
      headers: ['ce_id', 'ce_id', 'ce_id', '__proto__', 'constructor', 'null', null, 'x'].map((key, i) => ({
        key,
        value: Buffer.from([i]),
        badLength: undefined,
      })),
      cut: undefined,
    };
    const ctx = {
      firstOffset: '100',
      firstTimestamp: '1700000000000',
      maxTimestamp: '1',
      timestampType: 0,
      magicByte: 2,
    };
    const buf = encode(r);
    const mine = ours(new Decoder(buf), ctx) as { headers: Record<string, unknown>; offset: string; timestamp: string };
    expect(outcome(ours, buf, ctx)).toEqual(outcome(original, buf, ctx));
    expect(mine.offset).toBe('107');
    expect(mine.timestamp).toBe('1700000000003');
    expect(Object.getPrototypeOf(mine.headers)).toBe(Object.prototype); // never replaced by a header
    expect(Object.keys(mine.headers)).toEqual(['ce_id', '__proto__', 'constructor', 'null', 'x']);
    expect(mine.headers.ce_id).toEqual([Buffer.from([0]), Buffer.from([1]), Buffer.from([2])]);
    expect(mine.headers.null).toEqual([Buffer.from([5]), Buffer.from([6])]);
  });

  it('decodes a stream of records through one decoder as the original, remembered header keys included: keys of the same length with other bytes, invalid UTF-8, keys moving position, the buffer reused after', () => {
    // raw key bytes from a small pool, so that positions repeat and collide: equal lengths with
    // one byte changed, multi-byte UTF-8, invalid UTF-8 (decoded to U+FFFD, the same every time),
    // empty, and one longer than what is remembered
    const pool = [
      Buffer.from('ce_id'),
      Buffer.from('ce_iD'),
      Buffer.from('ce_ie'),
      Buffer.from('ce_é'),
      Buffer.from([0x63, 0x65, 0x5f, 0xc3, 0x28]),
      Buffer.from([0xff, 0xfe]),
      Buffer.from([0xff, 0xfd]),
      Buffer.alloc(0),
      Buffer.from('k'.repeat(65)),
      Buffer.from('k'.repeat(64) + 'j'),
    ];
    const headerBytes = fc.record({ key: fc.nat({ max: pool.length - 1 }), value: bytes });
    const stream = fc.array(fc.array(headerBytes, { maxLength: 40 }), { minLength: 1, maxLength: 12 });
    fc.assert(
      fc.property(stream, fc.boolean(), (records, reuse) => {
        const decoder = recordDecoder(Long as Parameters<typeof recordDecoder>[0]);
        const ctx = { firstOffset: '0', firstTimestamp: '1700000000000', magicByte: 2 };
        // one buffer for every record when `reuse`: what a record's bytes were is overwritten by the next
        const shared = Buffer.alloc(64 * 1024);
        for (const headers of records) {
          const e = new Encoder()
            .writeInt8(0)
            .writeVarLong(0)
            .writeVarInt(0)
            .writeVarIntBytes(null)
            .writeVarIntBytes(null);
          e.writeVarInt(headers.length);
          for (const h of headers) e.writeVarIntBytes(pool[h.key] as Buffer).writeVarIntBytes(h.value);
          const wire = e.buffer;
          const buf = reuse ? shared.subarray(0, wire.copy(shared)) : wire;
          const d = new Decoder(buf);
          const mine = describeValue({ ...(decoder(d, ctx) as object), batchContext: true });
          expect({ ok: mine, at: d.offset }).toEqual(outcome(original, Buffer.from(wire), ctx));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('is written for the kafkajs installed (the replacement is installed only for that version)', () => {
    expect((require('kafkajs/package.json') as { version: string }).version).toBe(KAFKAJS_DECODER_VERSION);
  });

  it('is not installed in a process that already fetched with kafkajs: the original stays bound and keeps working', () => {
    expectOriginalKeptOnceBound({
      binder: 'kafkajs/src/protocol/recordBatch/v0/decoder', // as by a first fetch, before the patch
      module: 'kafkajs/src/protocol/recordBatch/record/v0/decoder',
      load: () =>
        (require('./kafkajs-decoder') as { patchKafkajsRecordDecoder: typeof patchKafkajsRecordDecoder })
          .patchKafkajsRecordDecoder,
    });
  });

  it('is what kafkajs binds once patched before its first fetch: a record batch decodes through it', async () => {
    // (jest gives this file a module registry of its own: kafkajs has not fetched in it)
    expect(patchKafkajsRecordDecoder()).toBe(true);
    expect(patchKafkajsRecordDecoder()).toBe(true); // a second call changes nothing
    const recordPath = require.resolve('kafkajs/src/protocol/recordBatch/record/v0/decoder');
    const installed = require.cache[recordPath]?.exports as typeof original;
    expect(installed).not.toBe(original);
    let calls = 0;
    (require.cache[recordPath] as NodeJS.Module).exports = (d: KafkajsDecoder, c?: BatchContext) => {
      calls++;
      return installed(d, c);
    };
    const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0') as {
      RecordBatch: (o: object) => Promise<{ buffer: Buffer }>;
    };
    const Record = require('kafkajs/src/protocol/recordBatch/record/v0') as (o: object) => unknown;
    const decodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder') as (
      d: KafkajsDecoder,
    ) => Promise<{ records: Array<{ offset: string; headers: Record<string, Buffer> }> }>;
    const batch = await RecordBatch({
      firstOffset: '41',
      records: [0, 1, 2].map((i) =>
        Record({ offsetDelta: i, key: `k${i}`, value: `v${i}`, headers: { ce_id: `id-${i}` } }),
      ),
      lastOffsetDelta: 2,
    });
    const { records } = await decodeBatch(new Decoder(batch.buffer));
    expect(calls).toBe(3);
    expect(records.map((r) => [r.offset, r.headers.ce_id?.toString()])).toEqual([
      ['41', 'id-0'],
      ['42', 'id-1'],
      ['43', 'id-2'],
    ]);

    // Which one runs shows in kafkajs's `Long`: the original computes every record's offset and
    // timestamp with it, the replacement only past 2^53.
    const longs = jest.spyOn(Long, 'fromValue');
    const decodedWithLongs = async (): Promise<number> => {
      longs.mockClear();
      const again = await decodeBatch(new Decoder(batch.buffer));
      expect(again.records.map((r) => [r.offset, r.headers.ce_id?.toString()])).toEqual(
        records.map((r) => [r.offset, r.headers.ce_id?.toString()]),
      );
      return longs.mock.calls.length;
    };
    expect(await decodedWithLongs()).toBe(0);
    restoreKafkajsRecordDecoder(); // kafkajs's own, for a benchmark's plain-kafkajs reference
    expect(await decodedWithLongs()).toBeGreaterThanOrEqual(6);
    expect(patchKafkajsRecordDecoder()).toBe(true);
    expect(await decodedWithLongs()).toBe(0);
    longs.mockRestore();
  });
});
