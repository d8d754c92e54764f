import fc from 'fast-check';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { murmur2, murmur2Partitioner } from './partitioner';

/* eslint-disable @typescript-eslint/no-require-imports */
/** kafkajs's murmur2, on its `Long` (what `Partitioners.DefaultPartitioner` hashes with). */
const kafkajsMurmur2 = require('kafkajs/src/producer/partitioners/default/murmur2') as (key: unknown) => number;
/* eslint-enable @typescript-eslint/no-require-imports */

const metadata = (n: number, leaderless: number[] = []): PartitionMetadata[] =>
  Array.from({ length: n }, (_, partitionId) => ({
    partitionId,
    leader: leaderless.includes(partitionId) ? -1 : 1,
    replicas: [1],
    isr: [1],
    partitionErrorCode: 0,
  }));

/** Keys as producers give them: texts of every kind (a long one past the scratch buffer), bytes. */
const key = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.uuid(),
  fc.string({ minLength: 300, maxLength: 3_000 }),
  fc.constantFrom('', '\u0000', '\ud800', 'ção', '🐜🐜🐜', 'x'.repeat(341), 'é'.repeat(342), '🐜'.repeat(257)),
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
);

describe('murmur2', () => {
  it("gives Kafka's own test vectors (clients' UtilsTest.testMurmur2)", () => {
    expect(murmur2(Buffer.from('21'))).toBe(-973932308);
    expect(murmur2(Buffer.from('foobar'))).toBe(-790332482);
    expect(murmur2(Buffer.from('a-little-bit-long-string'))).toBe(-985981536);
    expect(murmur2(Buffer.from('a-little-bit-longer-string'))).toBe(-1486304829);
    expect(murmur2(Buffer.from('lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8'))).toBe(-58897971);
    expect(murmur2(Buffer.from([97, 98, 99]))).toBe(479470107);
  });

  it("is kafkajs's murmur2 for every key, text or bytes, of every length", () => {
    fc.assert(
      fc.property(key, (k) => {
        expect(murmur2(k)).toBe(kafkajsMurmur2(k));
      }),
      { numRuns: 3_000 },
    );
  });

  it('hashes a text as its UTF-8 bytes', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.string({ minLength: 300, maxLength: 3_000 })),
        (k) => {
          expect(murmur2(k)).toBe(murmur2(Buffer.from(k)));
        },
      ),
    );
  });

  it('hashes what is not a string or a Buffer as String(key), as kafkajs does', () => {
    for (const k of [0, 42, -1, 1.5, true, { a: 1 }, [1, 2]]) expect(murmur2(k)).toBe(kafkajsMurmur2(k));
  });

  it('is not disturbed by a previous, longer key left in its scratch buffer', () => {
    murmur2('a'.repeat(300));
    expect(murmur2('ab')).toBe(kafkajsMurmur2('ab'));
  });
});

describe('murmur2Partitioner', () => {
  it("picks kafkajs's default partitioner's partition for every keyed message", () => {
    const ours = murmur2Partitioner();
    const theirs = Partitioners.DefaultPartitioner();
    fc.assert(
      fc.property(key, fc.integer({ min: 1, max: 200 }), fc.array(fc.nat(199)), (k, n, leaderless) => {
        const args = { topic: 't', partitionMetadata: metadata(n, leaderless), message: { key: k, value: null } };
        expect(ours(args)).toBe(theirs(args));
      }),
      { numRuns: 2_000 },
    );
  });

  it("keeps a message's own partition", () => {
    const p = murmur2Partitioner();
    expect(p({ topic: 't', partitionMetadata: metadata(3), message: { key: 'k', value: null, partition: 7 } })).toBe(7);
    expect(p({ topic: 't', partitionMetadata: metadata(3), message: { key: 'k', value: null, partition: 0 } })).toBe(0);
  });

  it('spreads messages without a key round-robin over the partitions that have a leader', () => {
    const p = murmur2Partitioner();
    const md = metadata(4, [1]);
    const picked = Array.from({ length: 9 }, () => p({ topic: 't', partitionMetadata: md, message: { value: null } }));
    expect(new Set(picked)).toEqual(new Set([0, 2, 3]));
    const i = [0, 2, 3].indexOf(picked[0] as number);
    expect(picked).toEqual(Array.from({ length: 9 }, (_, j) => [0, 2, 3][(i + j) % 3]));
  });

  it('gives a partition without a leader when none has one (the broker then refuses it retriably)', () => {
    const p = murmur2Partitioner();
    const md = metadata(3, [0, 1, 2]);
    for (let i = 0; i < 5; i++)
      expect([0, 1, 2]).toContain(p({ topic: 't', partitionMetadata: md, message: { value: null } }));
  });
});
