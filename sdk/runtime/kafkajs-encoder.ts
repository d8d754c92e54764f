/**
 * kafkajs 2.2.4's protocol encoder, made to allocate less: the same bytes, written into fewer and
 * cheaper buffers (docs/adr/0022-kafkajs-encoder-allocations.md).
 *
 * Every record kafkajs produces goes through `Encoder` objects — one per record, one per header,
 * more per batch and request — each starting with a zero-filled 512-byte `Buffer.alloc`, growing by
 * zero-filled copies, and writing each varint through a temporary array turned into a buffer of
 * its own. In a CPU profile of 64 publishers in flight, `Buffer` construction alone was ~9 % of the
 * process, most of it the headers' encoders. kafkajs is no longer maintained (2.2.4, of 2023, is its
 * last release), so the fix cannot go upstream; it is applied here to the class's prototype and
 * statics when a Feromônios client is created (`kafkaConnection`):
 *
 * - an encoder starts empty and takes 128 bytes at its first write, growing by doubling with
 *   `Buffer.allocUnsafe` — below 4 KiB a slice of Node's shared pool, never zero-filled. Safe
 *   because kafkajs reads an encoder only through `buf.slice(0, offset)`, and every byte below
 *   `offset` is written first;
 * - a varint is written into the buffer directly, byte by byte, by the same loop;
 * - a varlong that fits 32 bits (a record's timestamp delta: milliseconds within one batch) is
 *   written as the varint it equals, without `Long` arithmetic; any other takes the original path.
 *
 * Applied only to the kafkajs version it was written and tested against (`2.2.4`); any other is
 * left as it is. sdk/runtime/kafkajs-encoder.unit.test.ts checks, for random values and whole
 * record batches, that the patched encoder writes exactly the bytes of the original.
 */

import { patchKafkajsCrc32c, restoreKafkajsCrc32c } from './kafkajs-crc32c';
import { patchKafkajsProduceRequest, restoreKafkajsProduceRequest } from './kafkajs-produce-request';
import { patchKafkajsRecordEncoder, restoreKafkajsRecordEncoder } from './kafkajs-record-encoder';

/** The kafkajs version the patch was written and tested against. */
export const KAFKAJS_ENCODER_VERSION = '2.2.4';

interface EncoderInstance {
  buf: Buffer;
  offset: number;
  writeVarInt: (this: EncoderInstance, value: number) => EncoderInstance;
  writeUVarInt: (this: EncoderInstance, value: number) => EncoderInstance;
  writeVarLong: (this: EncoderInstance, value: unknown) => EncoderInstance;
  ensureAvailable: (this: EncoderInstance, length: number) => void;
}

/** The parts of kafkajs's `Encoder` class (`kafkajs/src/protocol/encoder`) the patch replaces. */
export interface EncoderClass {
  new (initialSize?: number): EncoderInstance;
  prototype: EncoderInstance;
  encodeZigZag: (this: EncoderClass, value: number) => number;
  sizeOfVarInt: (this: EncoderClass, value: number) => number;
  sizeOfVarLong: (this: EncoderClass, value: unknown) => number;
  nextPowerOfTwo: (this: EncoderClass, value: number) => number;
}

type Originals = Pick<EncoderInstance, 'ensureAvailable' | 'writeUVarInt' | 'writeVarLong'> &
  Pick<EncoderClass, 'sizeOfVarLong' | 'nextPowerOfTwo'>;

/**
 * The smallest buffer an encoder takes: a header's encoder (~50 bytes) fits at once, a record's
 * grows from it by doubling. Starting at what the first write needs (5 bytes, then 16, 32, …)
 * measured ~5 % slower for `publicarLote`, the copies of the early growth; 128, 256 and 512
 * measured the same within noise — the smallest keeps the most of each 8 KiB pool.
 */
const FIRST_BUFFER_BYTES = 128;

/** The replaced members of each patched class, to restore them. */
const patched = new WeakMap<EncoderClass, Originals>();

/**
 * Within 32 bits a varlong zig-zags to the same unsigned number as a varint (the varint's 32-bit
 * zig-zag wraps, and its writer reads the result as unsigned): the same bytes.
 */
const fitsVarInt = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= -0x80000000 && value <= 0x7fffffff;

/**
 * Replaces, in place, the members of `Encoder` that allocate; a second call does nothing.
 * Exported for the tests, which patch one copy of the class and compare it with a pristine one.
 */
export function patchEncoder(Encoder: EncoderClass): void {
  if (patched.has(Encoder)) return;
  const proto = Encoder.prototype;
  const o: Originals = {
    ensureAvailable: proto.ensureAvailable,
    writeUVarInt: proto.writeUVarInt,
    writeVarLong: proto.writeVarLong,
    sizeOfVarLong: Encoder.sizeOfVarLong,
    nextPowerOfTwo: Encoder.nextPowerOfTwo,
  };
  patched.set(Encoder, o);
  const powerOfTwo = o.nextPowerOfTwo.bind(Encoder);
  const varLong = o.writeVarLong;
  const sizeOfVarLong = o.sizeOfVarLong.bind(Encoder);

  // The constructor sizes its first buffer (zero-filled, 512 bytes) by this static, which nothing
  // else calls once `ensureAvailable` below is in place: an encoder now starts empty, and its first
  // write takes a pooled buffer of FIRST_BUFFER_BYTES (or more, if that write needs more).
  Encoder.nextPowerOfTwo = () => 0;

  proto.ensureAvailable = function ensureAvailable(this: EncoderInstance, length: number): void {
    const needed = this.offset + length;
    if (needed <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(needed <= FIRST_BUFFER_BYTES ? FIRST_BUFFER_BYTES : powerOfTwo(needed));
    this.buf.copy(grown, 0, 0, this.offset);
    this.buf = grown;
  };

  proto.writeUVarInt = function writeUVarInt(this: EncoderInstance, value: number): EncoderInstance {
    this.ensureAvailable(5); // 32 bits take at most 5 bytes of 7
    const buf = this.buf;
    let at = this.offset;
    let v = value;
    while ((v & 0xffffff80) !== 0) {
      buf[at++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    buf[at++] = v & 0x7f;
    this.offset = at;
    return this;
  };

  proto.writeVarLong = function writeVarLong(this: EncoderInstance, value: unknown): EncoderInstance {
    return fitsVarInt(value) ? this.writeVarInt(value) : varLong.call(this, value);
  };

  Encoder.sizeOfVarLong = (value: unknown): number =>
    fitsVarInt(value) ? Encoder.sizeOfVarInt(value) : sizeOfVarLong(value);
}

/** Puts back what {@link patchEncoder} replaced. */
export function restoreEncoder(Encoder: EncoderClass): void {
  const o = patched.get(Encoder);
  if (!o) return;
  patched.delete(Encoder);
  Object.assign(Encoder.prototype, {
    ensureAvailable: o.ensureAvailable,
    writeUVarInt: o.writeUVarInt,
    writeVarLong: o.writeVarLong,
  });
  Encoder.sizeOfVarLong = o.sizeOfVarLong;
  Encoder.nextPowerOfTwo = o.nextPowerOfTwo;
}

/** kafkajs's `Encoder` when it is the version the patch was tested against, else `undefined`. */
function kafkajsEncoder(): EncoderClass | undefined {
  try {
    /* eslint-disable @typescript-eslint/no-require-imports */
    const { version } = require('kafkajs/package.json') as { version: string };
    return version === KAFKAJS_ENCODER_VERSION ? (require('kafkajs/src/protocol/encoder') as EncoderClass) : undefined;
    /* eslint-enable @typescript-eslint/no-require-imports */
  } catch {
    return undefined; // a kafkajs laid out otherwise: left as it is
  }
}

/**
 * Applies {@link patchEncoder} to the kafkajs this package resolves (every Kafka client of the
 * process shares it), when it is version {@link KAFKAJS_ENCODER_VERSION}, and, if the process has
 * not produced yet, puts in place the produce request written in one pass
 * (`patchKafkajsProduceRequest`, the ADR's third addendum) — and, for the requests kafkajs still
 * encodes itself (compressed ones, or all of them after `restoreKafkajsProduceRequest`), the
 * record encoder that writes a record's headers into its own buffer and the batch checksum eight
 * bytes a step (`patchKafkajsRecordEncoder`, `patchKafkajsCrc32c`: the first two addenda). Returns
 * whether the `Encoder` patch is in place. Called by `kafkaConnection`; calling it again does nothing.
 */
export function patchKafkajsEncoder(): boolean {
  const Encoder = kafkajsEncoder();
  if (Encoder) patchEncoder(Encoder);
  patchKafkajsRecordEncoder(); // a record's headers written into its own buffer (the addendum)
  patchKafkajsCrc32c(); // the batch checksum eight bytes a step (the second addendum)
  // the produce request in one pass (the third addendum); last: loading kafkajs's own binds the two above
  patchKafkajsProduceRequest();
  return Encoder !== undefined;
}

/**
 * kafkajs's own encoder — its members, its record encoder, its batch checksum and its produce
 * request — back, until the next {@link patchKafkajsEncoder}. For the publish benchmark, which
 * measures plain kafkajs as released beside the SDK in one process.
 */
export function restoreKafkajsEncoder(): void {
  const Encoder = kafkajsEncoder();
  if (Encoder) restoreEncoder(Encoder);
  restoreKafkajsRecordEncoder();
  restoreKafkajsCrc32c();
  restoreKafkajsProduceRequest();
}
