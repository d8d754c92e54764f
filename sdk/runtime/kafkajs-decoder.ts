/**
 * kafkajs 2.2.4's record decoder, made cheaper: the same records, decoded without the
 * quadratic header merge and without 64-bit `Long` arithmetic for a record's offset and
 * timestamp when plain numbers are exact (docs/adr/0023-kafkajs-record-decoder.md).
 *
 * kafkajs decodes every record it fetches with `protocol/recordBatch/record/v0/decoder.js`. That
 * function merges the record's headers into an object by spreading the object built so far
 * once per header — a CloudEvents record carries ten, so 55 property copies and ten objects per
 * record — and computes the record's offset and timestamp with `Long` (a `BigInt` wrapper): a
 * varlong read one `BigInt` operation per byte, then an addition and a `toString` for each. In
 * a colony reading a backlog, these were ~5 % of the process and much of its garbage.
 *
 * {@link decodeRecord} returns the same object, property for property: headers merged in the
 * same order with the same rules (a repeated key becomes an array; a key read through the
 * object's prototype, such as `constructor`, merges with what the prototype gives, exactly as
 * the original does; `__proto__` becomes an own property, as in the original's object
 * literal), and the offset and timestamp as the same decimal strings. Offsets and timestamps
 * outside 2^53, varlongs longer than four bytes and malformed lengths take the original's own
 * code. sdk/runtime/kafkajs-decoder.unit.test.ts compares it with the original on random
 * records, hostile header names and truncated buffers.
 *
 * kafkajs binds the record decoder when its record-batch decoder module is first loaded, which
 * happens at the first fetch a process makes (kafkajs loads each protocol version lazily). So
 * the patch replaces the module's export in Node's module cache before that: `kafkaConnection`
 * applies it when a Feromônios client is created. In a process that fetched with kafkajs
 * before, the original stays bound and is used (nothing breaks; only the saving is missed).
 * Applied only to kafkajs {@link KAFKAJS_DECODER_VERSION}.
 */

import { kafkajsModuleSwap } from './kafkajs-module-swap';

/** The kafkajs version the replacement was written and tested against. */
export const KAFKAJS_DECODER_VERSION = '2.2.4';

/** The parts of kafkajs's `Decoder` (`kafkajs/src/protocol/decoder`) a record's decoding uses. */
export interface KafkajsDecoder {
  buffer: Buffer;
  offset: number;
  readInt8(): number;
  readVarInt(): number;
  readVarLong(): unknown;
  readVarIntBytes(): Buffer | null;
  readVarIntString(): string | null;
}

/** What kafkajs's record-batch decoder passes for every record of a batch. */
export interface BatchContext {
  firstOffset?: string;
  firstTimestamp?: string;
  magicByte?: number;
  isControlBatch?: boolean;
  timestampType?: number;
  maxTimestamp?: string;
  [k: string]: unknown;
}

/** kafkajs's `Long` (`kafkajs/src/utils/long`): only what the fallback uses. */
interface LongClass {
  fromValue(v: unknown): { add(other: unknown): { toString(): string } };
}

/** `TimestampTypes.LOG_APPEND_TIME` (`kafkajs/src/protocol/timestampTypes`). */
const LOG_APPEND_TIME = 1;

const SAFE_DECIMAL = /^-?\d{1,15}$/;
const exact = (s: unknown): number | undefined =>
  typeof s === 'string' && SAFE_DECIMAL.test(s) ? Number(s) : undefined;

/** `base + delta` as kafkajs's `Long` writes it, by plain numbers when that is exact. */
function plus(Long: LongClass, base: number | undefined, baseText: unknown, delta: number): string {
  if (base !== undefined) {
    const sum = base + delta;
    if (Number.isSafeInteger(sum)) return String(sum);
  }
  return Long.fromValue(baseText).add(Long.fromValue(delta)).toString();
}

/**
 * A zig-zag varlong of at most four bytes (±2^27: a record's timestamp delta, milliseconds within
 * its batch) read as a number; `undefined` (and the offset left where it was) for a longer one,
 * which the original's `readVarLong` then reads. Past the buffer's end, bytes read as the
 * original reads them (`undefined`: zero, and the last).
 */
function shortVarLong(d: KafkajsDecoder): number | undefined {
  const buf = d.buffer;
  let at = d.offset;
  let raw = 0;
  let scale = 1;
  for (let i = 0; i < 4; i++) {
    const byte = buf[at++] as number;
    raw += (byte & 0x7f) * scale;
    if (!(byte >= 0x80)) {
      d.offset = at;
      return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
    }
    scale *= 128;
  }
  return undefined;
}

/** The longest header key remembered between records (CloudEvents keys are ~10–20 bytes). */
const MAX_REMEMBERED_KEY_BYTES = 64;

/**
 * The keys a decoder read last, by header position: a record's headers repeat the previous
 * record's keys in the same order (every CloudEvents record carries the same ten), so a key whose
 * bytes equal the remembered ones is that text again — one short byte comparison instead of a
 * UTF-8 decode and a new string per header (invalid UTF-8 included: the same bytes always decode
 * to the same text).
 */
interface RememberedKey {
  bytes: Buffer;
  text: string;
}

/**
 * A header key, as kafkajs's `readVarIntString` reads it — `String(null)` for length -1, as the
 * original's computed key makes it — decoded straight from the record's buffer, without a
 * `Buffer` of its own, or taken from `remembered[position]` when its bytes are the same; a
 * length or offset out of the ordinary (negative, past the end) takes the original's own
 * `slice`, whose rules differ there.
 */
function readKey(d: KafkajsDecoder, remembered: Array<RememberedKey | undefined>, position: number): string {
  const length = d.readVarInt();
  if (length === -1) return 'null';
  const buf = d.buffer;
  const start = d.offset;
  const end = start + length;
  if (!(start >= 0 && length >= 0 && end <= buf.length)) {
    const odd = buf.slice(start, end).toString('utf8');
    d.offset = end;
    return odd;
  }
  d.offset = end;
  const last = remembered[position];
  if (last !== undefined && last.bytes.length === length) {
    const bytes = last.bytes;
    let i = 0;
    while (i < length && bytes[i] === buf[start + i]) i++;
    if (i === length) return last.text;
  }
  const text = buf.toString('utf8', start, end);
  if (length <= MAX_REMEMBERED_KEY_BYTES && position < MAX_REMEMBERED_KEYS)
    remembered[position] = { bytes: Buffer.from(buf.subarray(start, end)), text };
  return text;
}

/** Header positions whose keys are remembered: more headers than this are decoded each time. */
const MAX_REMEMBERED_KEYS = 32;

/**
 * Builds the record decoder over kafkajs's own `Long`. A header count below -1 throws the
 * original's `RangeError` (kafkajs's `readVarIntArray` allocates the array first).
 */
export function recordDecoder(Long: LongClass): (decoder: KafkajsDecoder, batchContext?: BatchContext) => unknown {
  // the batch's first offset and timestamp as exact numbers, computed once per batch
  let lastContext: BatchContext | undefined;
  let baseOffset: number | undefined;
  let baseTimestamp: number | undefined;
  const rememberedKeys: Array<RememberedKey | undefined> = [];
  return function decodeRecord(decoder: KafkajsDecoder, batchContext: BatchContext = {}) {
    const {
      firstOffset,
      firstTimestamp,
      magicByte,
      isControlBatch = false,
      timestampType,
      maxTimestamp,
    } = batchContext;
    if (batchContext !== lastContext) {
      lastContext = batchContext;
      baseOffset = exact(firstOffset);
      baseTimestamp = exact(firstTimestamp);
    }
    const attributes = decoder.readInt8();

    const shortDelta = shortVarLong(decoder);
    const timestampDelta = shortDelta === undefined ? decoder.readVarLong() : undefined;
    const timestamp =
      timestampType === LOG_APPEND_TIME && maxTimestamp
        ? maxTimestamp
        : shortDelta !== undefined
          ? plus(Long, baseTimestamp, firstTimestamp, shortDelta)
          : Long.fromValue(firstTimestamp).add(timestampDelta).toString();

    const offsetDelta = decoder.readVarInt();
    const offset = plus(Long, baseOffset, firstOffset, offsetDelta);

    const key = decoder.readVarIntBytes();
    const value = decoder.readVarIntBytes();
    const count = decoder.readVarInt();
    if (count < -1) new Array(count); // the original's RangeError
    const headers: Record<string, unknown> = {};
    for (let i = 0; i < count; i++) {
      const k = readKey(decoder, rememberedKeys, i);
      const v = decoder.readVarIntBytes();
      const prev = headers[k];
      const merged = prev === undefined ? v : Array.isArray(prev) ? prev.concat([v]) : [prev, v];
      // an object literal's computed key makes even `__proto__` an own property
      if (k === '__proto__')
        Object.defineProperty(headers, k, { value: merged, writable: true, enumerable: true, configurable: true });
      else headers[k] = merged;
    }

    return {
      magicByte,
      attributes,
      timestamp,
      offset,
      key,
      value,
      headers,
      isControlRecord: isControlBatch,
      batchContext,
    };
  };
}

type RecordDecoderFn = (decoder: KafkajsDecoder, batchContext?: BatchContext) => unknown;

/** kafkajs's record decoder, swapped in the module cache before its record-batch decoder binds it. */
const swap = kafkajsModuleSwap<KafkajsDecoder, BatchContext | undefined>({
  version: KAFKAJS_DECODER_VERSION,
  module: 'kafkajs/src/protocol/recordBatch/record/v0/decoder',
  boundBy: 'kafkajs/src/protocol/recordBatch/v0/decoder',
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- kafkajs's Long, CommonJS
  replacement: (): RecordDecoderFn => recordDecoder(require('kafkajs/src/utils/long') as LongClass),
});

/**
 * Puts {@link recordDecoder} in place of kafkajs's record decoder in Node's module cache, when
 * kafkajs is version {@link KAFKAJS_DECODER_VERSION} and has not yet loaded its record-batch
 * decoder (no fetch yet in this process). Returns whether kafkajs decodes records with it.
 * Called by `kafkaConnection`; calling it again does nothing (or undoes a restore).
 */
export function patchKafkajsRecordDecoder(): boolean {
  return swap.patch();
}

/**
 * kafkajs's own record decoder back, until the next {@link patchKafkajsRecordDecoder}. For the
 * consume benchmark, which measures plain kafkajs as released beside the SDK in one process.
 */
export function restoreKafkajsRecordDecoder(): void {
  swap.restore();
}
