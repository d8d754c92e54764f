/**
 * kafkajs 2.2.4's record encoder, writing a record's headers into the record's own buffer
 * (docs/adr/0022-kafkajs-encoder-allocations.md, addendum of 2026-12-05).
 *
 * kafkajs encodes every record it produces with `protocol/recordBatch/record/v0/index.js`, which
 * encodes each header with an `Encoder` of its own (`recordBatch/header/v0`) and then copies the
 * headers' bytes into the record's encoder. A CloudEvents record carries ten headers: ten encoder
 * objects, each with a `Buffer` of its own and a `Buffer` view to copy it out — some thirty buffer
 * objects per record, the largest allocation of a publishing process after ADR 0022's patch
 * (`FastBuffer` ~4 % of the thread with 64 publishers in flight).
 *
 * {@link recordEncoder} writes the same bytes — the same calls (`writeVarIntString(key)`,
 * `writeVarIntBytes(value)`) on the record's encoder instead of on a fresh one per header — and
 * computes the record's size, attributes and deltas with kafkajs's own code. Header order and the
 * expansion of a header given as an array are kafkajs's. sdk/runtime/kafkajs-record-encoder.unit.test.ts
 * compares it with the original on random records.
 *
 * kafkajs binds the record encoder when its produce request module (v3, which later versions
 * reuse) is first loaded — at the process's first produce. So, like the record decoder (ADR
 * 0023), the replacement goes into Node's module cache before that (`kafkajsModuleSwap`):
 * `kafkaConnection` applies it when a Feromônios client is created. A process that produced with kafkajs before keeps the
 * original (nothing breaks; only the saving is missed). Applied only to kafkajs
 * {@link KAFKAJS_RECORD_ENCODER_VERSION}.
 */

import { kafkajsModuleSwap } from './kafkajs-module-swap';

/* eslint-disable @typescript-eslint/no-require-imports -- kafkajs's internals are CommonJS, resolved from its package */

/** The kafkajs version the replacement was written and tested against. */
export const KAFKAJS_RECORD_ENCODER_VERSION = '2.2.4';

/** The parts of kafkajs's `Encoder` (`kafkajs/src/protocol/encoder`) a record's encoding uses. */
export interface RecordEncoding {
  buf: Buffer;
  offset: number;
  ensureAvailable(length: number): void;
  writeVarInt(value: number): RecordEncoding;
  writeInt8(value: number): RecordEncoding;
  writeVarLong(value: unknown): RecordEncoding;
  writeVarIntBytes(value: unknown): RecordEncoding;
  writeVarIntString(value: unknown): RecordEncoding;
}

/** kafkajs's `Encoder` class: what {@link recordEncoder} needs of it. */
export interface RecordEncoderClass {
  new (): RecordEncoding;
  sizeOfVarInt(value: number): number;
  sizeOfVarLong(value: unknown): number;
  sizeOfVarIntBytes(value: unknown): number;
}

/** A message as kafkajs's produce request hands it to the record encoder. */
export interface RecordInput {
  offsetDelta?: number;
  timestampDelta?: number;
  key?: unknown;
  value?: unknown;
  headers?: Record<string, unknown>;
}

export type RecordEncoderFn = (record: RecordInput) => unknown;

/**
 * A record encoder on kafkajs's `Encoder` that writes the bytes kafkajs's own writes, headers
 * included, into one encoder.
 */
export function recordEncoder(Encoder: RecordEncoderClass): RecordEncoderFn {
  const write = recordWriter(Encoder);
  return ({ offsetDelta = 0, timestampDelta = 0, key, value, headers = {} }) =>
    write(new Encoder(), key, value, headers, offsetDelta, timestampDelta);
}

/**
 * Writes one record — kafkajs's record encoder's bytes for `{ key, value, headers, offsetDelta,
 * timestampDelta }` (defaults already applied) — at the end of `encoder`, which it returns: a
 * record's own encoder ({@link recordEncoder}) or a whole produce request's (the one-pass produce
 * request of sdk/runtime/kafkajs-produce-request.ts). Sizes, attributes and deltas are computed
 * with kafkajs's own code, so what kafkajs refuses throws kafkajs's error, before any byte of the
 * record is written.
 */
export function recordWriter(
  Encoder: RecordEncoderClass,
): (
  encoder: RecordEncoding,
  key: unknown,
  value: unknown,
  headers: Record<string, unknown>,
  offsetDelta: number,
  timestampDelta: number,
) => RecordEncoding {
  return (encoder, key, value, headers, offsetDelta, timestampDelta) => {
    // kafkajs's own expansion: a header given as an array is that many headers, in order
    const keys: string[] = [];
    const values: unknown[] = [];
    for (const headerKey of Object.keys(headers)) {
      const v = headers[headerKey];
      if (!Array.isArray(v)) {
        keys.push(headerKey);
        values.push(v);
      } else
        for (const each of v as unknown[]) {
          keys.push(headerKey);
          values.push(each);
        }
    }
    // sized in kafkajs's order (what it refuses throws the error kafkajs throws first); a short
    // ASCII text (every header of a CloudEvents record, the key) is sized and written here, its
    // bytes its char codes: the same bytes as kafkajs's `Buffer` calls, without a native call each
    const keyAscii = typeof key === 'string' ? asciiLength(key) : -1;
    const sizeOfFields =
      1 + // attributes
      Encoder.sizeOfVarLong(timestampDelta) +
      Encoder.sizeOfVarInt(offsetDelta) +
      (keyAscii >= 0 ? Encoder.sizeOfVarInt(keyAscii) + keyAscii : Encoder.sizeOfVarIntBytes(key)) +
      Encoder.sizeOfVarIntBytes(value);
    let headersSize = Encoder.sizeOfVarInt(keys.length);
    const ascii: number[] = [];
    for (let i = 0; i < keys.length; i++) {
      // as kafkajs sizes them (Buffer.byteLength throws for what it cannot size, as there)
      const k = keys[i] as string;
      const keyLength = asciiLength(k);
      const keySize = keyLength >= 0 ? keyLength : Buffer.byteLength(k);
      const v = values[i];
      const valueLength = typeof v === 'string' ? asciiLength(v) : -1;
      const valueSize = valueLength >= 0 ? valueLength : Buffer.byteLength(v as string);
      ascii.push(keyLength, valueLength);
      headersSize += Encoder.sizeOfVarInt(keySize) + keySize;
      headersSize += v === null ? Encoder.sizeOfVarInt(-1) : Encoder.sizeOfVarInt(valueSize) + valueSize;
    }
    encoder
      .writeVarInt(sizeOfFields + headersSize)
      .writeInt8(0) // no record attributes
      .writeVarLong(timestampDelta)
      .writeVarInt(offsetDelta);
    if (keyAscii >= 0) writeAscii(encoder, key as string);
    else encoder.writeVarIntBytes(key);
    encoder.writeVarIntBytes(value).writeVarInt(keys.length);
    for (let i = 0; i < keys.length; i++) {
      if ((ascii[2 * i] as number) >= 0) writeAscii(encoder, keys[i] as string);
      else encoder.writeVarIntString(keys[i]);
      if ((ascii[2 * i + 1] as number) >= 0) writeAscii(encoder, values[i] as string);
      else encoder.writeVarIntBytes(values[i]);
    }
    return encoder;
  };
}

/** Texts longer than this are sized and written by `Buffer` (native code is the faster there). */
const ASCII_LOOP_MAX = 256;

/** `text`'s UTF-8 length if it is short and every code unit of it ASCII (its bytes are its char codes); -1 otherwise. */
function asciiLength(text: string): number {
  const n = text.length;
  if (n > ASCII_LOOP_MAX) return -1;
  for (let i = 0; i < n; i++) if (text.charCodeAt(i) > 0x7f) return -1;
  return n;
}

/** An ASCII text as kafkajs's `writeVarIntString` / `writeVarIntBytes` write it: its length, then its bytes. */
function writeAscii(encoder: RecordEncoding, text: string): void {
  const n = text.length;
  encoder.writeVarInt(n);
  encoder.ensureAvailable(n);
  const buf = encoder.buf;
  let at = encoder.offset;
  for (let i = 0; i < n; i++) buf[at++] = text.charCodeAt(i);
  encoder.offset = at;
}

/** kafkajs's record encoder, swapped in the module cache before its produce request binds it. */
const swap = kafkajsModuleSwap<RecordInput, undefined>({
  version: KAFKAJS_RECORD_ENCODER_VERSION,
  module: 'kafkajs/src/protocol/recordBatch/record/v0',
  boundBy: 'kafkajs/src/protocol/requests/produce/v3/request',
  replacement: () => recordEncoder(require('kafkajs/src/protocol/encoder') as RecordEncoderClass),
});

/**
 * Puts {@link recordEncoder} in place of kafkajs's record encoder in Node's module cache, when
 * kafkajs is version {@link KAFKAJS_RECORD_ENCODER_VERSION} and has not yet loaded its produce
 * request (no produce yet in this process). Returns whether kafkajs encodes records with it.
 * Called by `patchKafkajsEncoder` (so by `kafkaConnection`); calling it again does nothing (or
 * undoes a restore).
 */
export function patchKafkajsRecordEncoder(): boolean {
  return swap.patch();
}

/**
 * kafkajs's own record encoder back, until the next {@link patchKafkajsRecordEncoder}. For the
 * publish benchmark, which measures plain kafkajs as released beside the SDK in one process.
 */
export function restoreKafkajsRecordEncoder(): void {
  swap.restore();
}
/* eslint-enable @typescript-eslint/no-require-imports */
