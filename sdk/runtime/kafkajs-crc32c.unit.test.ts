import { expectOriginalKeptOnceBound } from '../../test/harness/kafkajs-swap';
import fc from 'fast-check';
import { crc32c, KAFKAJS_CRC32C_VERSION, patchKafkajsCrc32c, restoreKafkajsCrc32c } from './kafkajs-crc32c';

/* eslint-disable @typescript-eslint/no-require-imports */

/** kafkajs's own batch checksum, as released (its inner loop, read before anything is patched). */
const original = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C') as (b: Buffer) => number;

describe("kafkajs's batch checksum, replaced (docs/adr/0022-kafkajs-encoder-allocations.md, addendum)", () => {
  it('gives the CRC-32C check value and the values of RFC 3720 (iSCSI)', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32c(Buffer.alloc(0))).toBe(0);
    expect(crc32c(Buffer.alloc(32, 0))).toBe(0x8a9136aa);
    expect(crc32c(Buffer.alloc(32, 0xff))).toBe(0x62a8ab43);
    expect(crc32c(Buffer.from(Array.from({ length: 32 }, (_, i) => i)))).toBe(0x46dd794e);
  });

  it("is kafkajs's value for any bytes, of every length and alignment (property)", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          { weight: 9, arbitrary: fc.uint8Array({ maxLength: 300 }) },
          { weight: 1, arbitrary: fc.uint8Array({ minLength: 4_000, maxLength: 70_000 }) },
        ),
        fc.nat(7),
        (bytes, skip) => {
          // a view that starts inside a larger buffer, as a batch body does inside kafkajs's pool
          const view = Buffer.from(bytes).subarray(Math.min(skip, bytes.length));
          expect(crc32c(view)).toBe(original(view));
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it('is written for the kafkajs installed (the replacement is installed only for that version)', () => {
    expect((require('kafkajs/package.json') as { version: string }).version).toBe(KAFKAJS_CRC32C_VERSION);
  });

  it('is not installed in a process whose record-batch encoder is already loaded: the original stays bound', () => {
    expectOriginalKeptOnceBound({
      binder: 'kafkajs/src/protocol/recordBatch/v0', // as by a first produce, before the patch
      module: 'kafkajs/src/protocol/recordBatch/crc32C',
      load: () => (require('./kafkajs-crc32c') as { patchKafkajsCrc32c: typeof patchKafkajsCrc32c }).patchKafkajsCrc32c,
    });
  });

  it('is what kafkajs’s produce request checksums with once patched, the same bytes, and can be taken back', async () => {
    // (jest gives this file a module registry of its own: kafkajs has not produced in it)
    expect(patchKafkajsCrc32c()).toBe(true);
    expect(patchKafkajsCrc32c()).toBe(true); // a second call changes nothing
    const produce = require('kafkajs/src/protocol/requests/produce/v3/request') as (o: object) => {
      encode(): Promise<{ buffer: Buffer }>;
    };
    const Long = require('kafkajs/src/utils/long') as { fromInt(n: number): unknown };
    const partition = (p: number) => ({
      partition: p,
      firstSequence: 3,
      messages: [0, 1, 2].map((i) => ({
        key: `k${p}${i}`,
        value: Buffer.alloc(300 + i, p + i),
        timestamp: 1_700_000_000_000 + i,
        headers: { ce_id: `id-${i}` },
      })),
    });
    const request = () =>
      produce({
        acks: -1,
        timeout: 30_000,
        producerId: Long.fromInt(7),
        topicData: [{ topic: 'feromonios.evento.demanda.categorizada', partitions: [partition(0), partition(2)] }],
      }).encode();
    // Which one runs shows in kafkajs's wrapper around its own loop: `Uint32Array.from` once per
    // batch checksummed; the replacement returns its unsigned value as it is.
    const made = jest.spyOn(Uint32Array, 'from');
    const mine = (await request()).buffer;
    const withReplacement = made.mock.calls.length;
    restoreKafkajsCrc32c(); // kafkajs's own, for a benchmark's plain-kafkajs reference
    made.mockClear();
    const theirs = (await request()).buffer;
    const withOriginal = made.mock.calls.length;
    expect(mine.equals(theirs)).toBe(true);
    expect(withReplacement).toBe(0);
    expect(withOriginal).toBe(2); // one batch per partition
    expect(patchKafkajsCrc32c()).toBe(true);
    made.mockClear();
    expect((await request()).buffer.equals(theirs)).toBe(true);
    expect(made.mock.calls.length).toBe(0);
    made.mockRestore();
  });
});
/* eslint-enable @typescript-eslint/no-require-imports */
