import fc from 'fast-check';
import {
  KAFKAJS_ENCODER_VERSION,
  patchEncoder,
  patchKafkajsEncoder,
  restoreEncoder,
  restoreKafkajsEncoder,
  type EncoderClass,
} from './kafkajs-encoder';
import { kafkaConnection } from './kafka-sockets';

/* eslint-disable @typescript-eslint/no-require-imports */

/** A copy of kafkajs's protocol modules of its own (a fresh module registry): one stays pristine, one is patched. */
function kafkajsProtocol(): {
  Encoder: EncoderClass;
  RecordBatch: (batch: object) => Promise<{ buffer: Buffer }>;
  Record: (record: object) => unknown;
  Decoder: new (buffer: Buffer) => unknown;
  decodeBatch: (decoder: unknown) => Promise<{ records: Array<Record<string, unknown>> }>;
} {
  let protocol: ReturnType<typeof kafkajsProtocol> | undefined;
  jest.isolateModules(() => {
    protocol = {
      Encoder: require('kafkajs/src/protocol/encoder') as EncoderClass,
      RecordBatch: (
        require('kafkajs/src/protocol/recordBatch/v0') as {
          RecordBatch: ReturnType<typeof kafkajsProtocol>['RecordBatch'];
        }
      ).RecordBatch,
      Record: require('kafkajs/src/protocol/recordBatch/record/v0') as ReturnType<typeof kafkajsProtocol>['Record'],
      Decoder: require('kafkajs/src/protocol/decoder') as ReturnType<typeof kafkajsProtocol>['Decoder'],
      decodeBatch: require('kafkajs/src/protocol/recordBatch/v0/decoder') as ReturnType<
        typeof kafkajsProtocol
      >['decodeBatch'],
    };
  });
  return protocol as ReturnType<typeof kafkajsProtocol>;
}

/* eslint-enable @typescript-eslint/no-require-imports */

const pristine = kafkajsProtocol();
const patched = kafkajsProtocol();
patchEncoder(patched.Encoder);

/** One call on an encoder, as kafkajs's protocol code makes them. */
type Op = { m: string; v: unknown };

const int32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
const long = fc.oneof(
  fc.integer({ min: -0x80000000, max: 0x7fffffff }), // what the patch writes as a varint
  fc.constantFrom(2 ** 31 - 1, -(2 ** 31), 2 ** 31, -(2 ** 31) - 1, 2 ** 32, 2 ** 53 - 1, -(2 ** 53 - 1)), // its edges
  fc.maxSafeInteger(),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String), // Long.fromValue takes strings
);
const text = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constant(null));
const bytes = fc.oneof(
  fc.uint8Array({ maxLength: 3000 }).map((a) => Buffer.from(a)),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constant(null),
);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ m: fc.constant('writeInt8'), v: fc.integer({ min: -128, max: 127 }) }),
  fc.record({ m: fc.constant('writeInt16'), v: fc.integer({ min: -32768, max: 32767 }) }),
  fc.record({ m: fc.constant('writeInt32'), v: int32 }),
  fc.record({ m: fc.constant('writeInt64'), v: long }),
  fc.record({ m: fc.constant('writeVarInt'), v: int32 }),
  fc.record({ m: fc.constant('writeUVarInt'), v: fc.nat({ max: 0xffffffff }) }),
  fc.record({ m: fc.constant('writeVarLong'), v: long }),
  fc.record({ m: fc.constant('writeString'), v: text }),
  fc.record({ m: fc.constant('writeVarIntString'), v: text }),
  fc.record({ m: fc.constant('writeUVarIntString'), v: text }),
  fc.record({ m: fc.constant('writeBytes'), v: bytes }),
  fc.record({ m: fc.constant('writeVarIntBytes'), v: bytes }),
  fc.record({ m: fc.constant('writeUVarIntBytes'), v: bytes }),
  fc.record({ m: fc.constant('writeBoolean'), v: fc.boolean() }),
);

/** The bytes an encoder of `Encoder` holds after `ops`, with `nested` written through child encoders. */
function encode(Encoder: EncoderClass, ops: Op[], nested: Op[][]): Buffer {
  type Writer = Record<string, (v: unknown) => unknown> & { buffer: Buffer };
  const run = (e: Writer, list: Op[]) => {
    for (const o of list) (e[o.m] as (v: unknown) => unknown).call(e, o.v);
    return e;
  };
  const outer = run(new Encoder() as unknown as Writer, ops) as unknown as Writer & {
    writeEncoderArray(es: unknown[]): unknown;
    writeVarLong(v: unknown): unknown;
  };
  outer.writeEncoderArray(nested.map((list) => run(new Encoder() as unknown as Writer, list)));
  return outer.buffer;
}

describe('kafkajs encoder, patched to allocate less', () => {
  it('is written for the kafkajs installed (the patch is applied only to that version)', () => {
    expect((require('kafkajs/package.json') as { version: string }).version).toBe(KAFKAJS_ENCODER_VERSION); // eslint-disable-line @typescript-eslint/no-require-imports
  });

  it('writes exactly the bytes of the original for any sequence of writes, nested encoders included', () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 40 }),
        fc.array(fc.array(op, { maxLength: 8 }), { maxLength: 5 }),
        (ops, nested) => {
          expect(encode(patched.Encoder, ops, nested).toString('hex')).toBe(
            encode(pristine.Encoder, ops, nested).toString('hex'),
          );
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('sizes varlongs as the original does (a record states its own length)', () => {
    fc.assert(
      fc.property(long, (v) => expect(patched.Encoder.sizeOfVarLong(v)).toBe(pristine.Encoder.sizeOfVarLong(v))),
    );
  });

  const header = fc.tuple(
    fc.string({ maxLength: 30 }),
    fc.oneof(fc.string({ maxLength: 80 }), fc.array(fc.string({ maxLength: 40 }), { minLength: 1, maxLength: 3 })),
  );
  const record = fc.record({
    key: fc.oneof(
      fc.uint8Array({ maxLength: 60 }).map((a) => Buffer.from(a)),
      fc.constant(null),
    ),
    value: fc.oneof(
      fc.uint8Array({ maxLength: 5000 }).map((a) => Buffer.from(a)),
      fc.constant(null),
    ),
    headers: fc.array(header, { maxLength: 12 }).map((hs) => Object.fromEntries(hs)),
    timestampDelta: fc.oneof(
      fc.nat({ max: 60_000 }),
      long.filter((v) => typeof v === 'number'),
    ),
  });

  it('encodes whole record batches to the same bytes, which decode back to the records', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 20 }), async (records) => {
        const batch = (p: typeof pristine) =>
          p.RecordBatch({
            firstTimestamp: 1_764_000_000_000,
            maxTimestamp: 1_764_000_000_000,
            lastOffsetDelta: records.length - 1,
            producerId: 4711,
            producerEpoch: 2,
            firstSequence: 99,
            records: records.map((r, offsetDelta) => p.Record({ ...r, offsetDelta })),
          });
        const bytes = (await batch(patched)).buffer;
        expect(bytes.toString('hex')).toBe((await batch(pristine)).buffer.toString('hex'));
        const decoded = await pristine.decodeBatch(new pristine.Decoder(bytes));
        expect(
          decoded.records.map((r) => ({
            key: r.key === null ? null : (r.key as Buffer).toString('hex'),
            value: r.value === null ? null : (r.value as Buffer).toString('hex'),
            offset: r.offset,
          })),
        ).toEqual(
          records.map((r, i) => ({
            key: r.key === null ? null : r.key.toString('hex'),
            value: r.value === null ? null : r.value.toString('hex'),
            offset: String(i),
          })),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('starts an encoder empty and grows it from the pool, not by zero-filled 512-byte buffers', () => {
    const e = new patched.Encoder() as unknown as { buf: Buffer; writeVarIntString(s: string): unknown };
    expect(e.buf.length).toBe(0);
    e.writeVarIntString('ce_id');
    expect(e.buf.length).toBe(128); // its first buffer: a header fits
    const big = new patched.Encoder() as unknown as { buf: Buffer; writeBytes(b: Buffer): unknown };
    big.writeBytes(Buffer.alloc(300));
    expect(big.buf.length).toBe(512); // a first write larger than that: the next power of two
    expect(e.buf.buffer.byteLength).toBeGreaterThan(e.buf.length); // a slice of Node's shared pool
  });

  it('is undone by restoreEncoder and applied once however often it is called', () => {
    const copy = kafkajsProtocol().Encoder;
    const original = copy.prototype.writeUVarInt;
    patchEncoder(copy);
    const once = copy.prototype.writeUVarInt;
    patchEncoder(copy);
    expect(copy.prototype.writeUVarInt).toBe(once);
    expect(once).not.toBe(original);
    restoreEncoder(copy);
    expect(copy.prototype.writeUVarInt).toBe(original);
    expect((new copy() as unknown as { buf: Buffer }).buf.length).toBe(512); // kafkajs's own start
  });

  it('is applied to the kafkajs every client shares by kafkaConnection, and can be taken back', () => {
    const Encoder = require('kafkajs/src/protocol/encoder') as EncoderClass; // eslint-disable-line @typescript-eslint/no-require-imports
    restoreKafkajsEncoder();
    expect((new Encoder() as unknown as { buf: Buffer }).buf.length).toBe(512);
    kafkaConnection(undefined);
    expect((new Encoder() as unknown as { buf: Buffer }).buf.length).toBe(0);
    expect(patchKafkajsEncoder()).toBe(true);
  });
});
