/**
 * CRC-32C (Castagnoli) eight bytes at a time, in place of kafkajs 2.2.4's byte-at-a-time table
 * loop for the checksum of every record batch it produces (docs/adr/0022-kafkajs-encoder-allocations.md,
 * second addendum).
 *
 * Kafka checks a record batch's CRC-32C over everything after the CRC field (attributes to the
 * last record), so a producer reads each byte it sends once more for the checksum. kafkajs does
 * it one byte per step (`protocol/recordBatch/crc32C/crc32C.js`): ~3 % of a process publishing
 * with 64 calls in flight. {@link crc32c} is the standard "slicing-by-8" form of the same
 * table-driven CRC (eight tables derived from the one polynomial, one 8-byte word per step), the
 * same value for every input: sdk/runtime/kafkajs-crc32c.unit.test.ts compares it with kafkajs's
 * on random buffers and with the reference check value, and the publisher's int tests have the
 * broker verify it on every batch.
 *
 * kafkajs binds its checksum when its record-batch encoder is loaded (at the process's first
 * produce, or first fetch), so the replacement goes into Node's module cache before that, by the
 * mechanism of the record decoder and encoder (`kafkajsModuleSwap`); `patchKafkajsEncoder`
 * (so `kafkaConnection`) applies it. Applied only to kafkajs {@link KAFKAJS_CRC32C_VERSION}.
 */

import { kafkajsModuleSwap } from './kafkajs-module-swap';

/** The kafkajs version the replacement was written and tested against. */
export const KAFKAJS_CRC32C_VERSION = '2.2.4';

/** CRC-32C's polynomial, bit-reversed (iSCSI, Kafka's record batches). */
const POLYNOMIAL = 0x82f63b78;

/** Table k gives a byte's contribution k bytes before the end of an 8-byte step. */
const T = new Int32Array(8 * 256);
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let bit = 0; bit < 8; bit++) c = c & 1 ? (c >>> 1) ^ POLYNOMIAL : c >>> 1;
  T[n] = c;
}
for (let n = 0; n < 256; n++)
  for (let k = 1; k < 8; k++) {
    const prev = T[(k - 1) * 256 + n] as number;
    T[k * 256 + n] = (prev >>> 8) ^ (T[prev & 0xff] as number);
  }

/** CRC-32C of `data`, as an unsigned 32-bit integer (what kafkajs's `crc32C` module returns). */
export function crc32c(data: Uint8Array): number {
  let crc = -1;
  let i = 0;
  const n = data.length;
  for (const end = n - 7; i < end; i += 8) {
    const lo =
      crc ^
      ((data[i] as number) |
        ((data[i + 1] as number) << 8) |
        ((data[i + 2] as number) << 16) |
        ((data[i + 3] as number) << 24));
    crc =
      (T[1792 + (lo & 0xff)] as number) ^
      (T[1536 + ((lo >>> 8) & 0xff)] as number) ^
      (T[1280 + ((lo >>> 16) & 0xff)] as number) ^
      (T[1024 + (lo >>> 24)] as number) ^
      (T[768 + (data[i + 4] as number)] as number) ^
      (T[512 + (data[i + 5] as number)] as number) ^
      (T[256 + (data[i + 6] as number)] as number) ^
      (T[data[i + 7] as number] as number);
  }
  for (; i < n; i++) crc = (T[(crc ^ (data[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  return ~crc >>> 0;
}

const swap = kafkajsModuleSwap<Uint8Array, undefined>({
  version: KAFKAJS_CRC32C_VERSION,
  module: 'kafkajs/src/protocol/recordBatch/crc32C',
  boundBy: 'kafkajs/src/protocol/recordBatch/v0',
  replacement: () => crc32c,
});

/**
 * Puts {@link crc32c} in place of kafkajs's batch checksum in Node's module cache, when kafkajs is
 * version {@link KAFKAJS_CRC32C_VERSION} and has not yet loaded its record-batch encoder. Returns
 * whether kafkajs checksums batches with it. Called by `patchKafkajsEncoder`; calling it again
 * does nothing (or undoes a restore).
 */
export function patchKafkajsCrc32c(): boolean {
  return swap.patch();
}

/** kafkajs's own checksum back, until the next {@link patchKafkajsCrc32c} (the publish benchmark's "as released"). */
export function restoreKafkajsCrc32c(): void {
  swap.restore();
}
