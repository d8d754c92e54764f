import fc from 'fast-check';
import {
  offsetAfter,
  stillNext,
  type Ahead,
  type FetchedBatch,
  type FetchingGroup,
  type OffsetBookkeeping,
} from './kafkajs-fetch-ahead';

/**
 * The rules by which a batch fetched ahead is handed to kafkajs's workers or dropped (ADR 0028),
 * on a group reduced to what they read. The int test runs them against a real broker.
 */
const batch = (partition: number, fetchedOffset: string, offsets: string[]): FetchedBatch => ({
  topic: 't',
  partition,
  fetchedOffset,
  messagesWithinOffset: offsets.map((offset) => ({ offset })),
});

function groupAt(next: Record<number, string>, o: { paused?: number[]; seeking?: number[]; assigned?: number[] } = {}) {
  const om: OffsetBookkeeping = {
    nextOffset: (_t, p) => next[p] ?? '0',
    committedOffsets: () => ({ t: Object.fromEntries(Object.keys(next).map((p) => [p, '0'])) }),
    resolveOffsets: () => Promise.resolve(),
  };
  const group = {
    generationId: 7,
    offsetManager: om,
    seekOffset: { has: (_t: string, p: number) => (o.seeking ?? []).includes(p), size: (o.seeking ?? []).length },
    subscriptionState: {
      isPaused: (_t: string, p: number) => (o.paused ?? []).includes(p),
      assigned: () => [{ topic: 't', partitions: o.assigned ?? [0, 1, 2] }],
    },
  } as unknown as FetchingGroup;
  const ahead: Ahead = { generationId: 7, offsetManager: om, batches: Promise.resolve([]) };
  return { group, ahead, om };
}

describe('offsetAfter', () => {
  it('is the offset after the last record, past 2^53 too, and nothing for an empty batch', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 63n - 2n }), (last) => {
        expect(offsetAfter(batch(0, '0', ['0', last.toString()]))).toBe((last + 1n).toString());
      }),
    );
    expect(offsetAfter(batch(0, '5', []))).toBeUndefined();
  });
});

describe('stillNext', () => {
  it('keeps a batch fetched from where the consumer now is', () => {
    const { group, ahead } = groupAt({ 0: '10' });
    expect(stillNext(group, ahead, batch(0, '10', ['10', '11']))).toBe(true);
  });

  it('drops a batch fetched from anywhere else (the batch before it handled in part, or not at all)', () => {
    fc.assert(
      fc.property(fc.nat(1000), fc.nat(1000), (at, from) => {
        fc.pre(at !== from);
        const { group, ahead } = groupAt({ 0: String(at) });
        expect(stillNext(group, ahead, batch(0, String(from), [String(from)]))).toBe(false);
      }),
    );
  });

  it('drops a batch of a paused partition, of one with a seek waiting, of one no longer assigned', () => {
    const paused = groupAt({ 1: '3' }, { paused: [1] });
    expect(stillNext(paused.group, paused.ahead, batch(1, '3', ['3']))).toBe(false);
    const seeking = groupAt({ 1: '3' }, { seeking: [1] });
    expect(stillNext(seeking.group, seeking.ahead, batch(1, '3', ['3']))).toBe(false);
    const moved = groupAt({ 1: '3' }, { assigned: [0, 2] });
    expect(stillNext(moved.group, moved.ahead, batch(1, '3', ['3']))).toBe(false);
    const other = groupAt({ 1: '3' }, { paused: [0], seeking: [2] });
    expect(stillNext(other.group, other.ahead, batch(1, '3', ['3']))).toBe(true);
  });

  it('drops every batch fetched under another generation or offset bookkeeping (a rebalance in between)', () => {
    const { group, ahead } = groupAt({ 0: '4' });
    expect(stillNext(group, { ...ahead, generationId: 6 }, batch(0, '4', ['4']))).toBe(false);
    expect(stillNext(group, { ...ahead, offsetManager: groupAt({ 0: '4' }).om }, batch(0, '4', ['4']))).toBe(false);
  });

  it('drops a batch of a partition whose committed offset is unknown (kafkajs fetches none of those)', () => {
    const { group, ahead } = groupAt({ 0: '4' });
    expect(stillNext(group, ahead, batch(1, '0', ['0']))).toBe(false);
  });
});
