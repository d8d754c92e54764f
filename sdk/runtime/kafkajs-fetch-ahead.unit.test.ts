import fc from 'fast-check';
import {
  offsetAfter,
  patchFetch,
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

/**
 * A consumer group shaped like kafkajs's where the wrapper touches it: its `fetch` applies the
 * waiting seeks, asks partition 0 of topic `t` from `offsetManager.nextOffset`, and hands a
 * failure to `recoverFromFetch`, as kafkajs 2.2.4's does; what the broker answers is scripted.
 */
class Group {
  generationId = 1;
  resolved = '0';
  readonly pending = new Map<number, string>(); // seeks waiting, by partition
  readonly seekOffset: { has(t: string, p: number): boolean; readonly size: number };
  readonly subscriptionState = { isPaused: () => false, assigned: () => [{ topic: 't', partitions: [0] }] };
  offsetManager: OffsetBookkeeping = {
    nextOffset: () => this.resolved,
    committedOffsets: () => ({ t: { 0: '0' } }),
    resolveOffsets: () => Promise.resolve(),
  };
  /** The offset each fetch asked, in the order they were sent. */
  readonly asked: string[] = [];
  seeksApplied = 0;
  readonly recovered: unknown[] = [];
  /** The broker: records from the offset asked, or a failure. */
  answer: (from: number) => number | Error = () => 5;

  constructor() {
    const pending = this.pending;
    this.seekOffset = {
      has: (_t, p) => pending.has(p),
      get size() {
        return pending.size;
      },
    };
  }

  seekOffsets(): Promise<void> {
    this.seeksApplied++;
    for (const [, offset] of this.pending) this.resolved = offset;
    this.pending.clear();
    return Promise.resolve();
  }

  recoverFromFetch(error: unknown): Promise<void> {
    this.recovered.push(error);
    return Promise.resolve();
  }

  async fetch(this: Group, _nodeId: number): Promise<FetchedBatch[]> {
    try {
      await this.seekOffsets();
      const from = this.offsetManager.nextOffset('t', 0).toString();
      this.asked.push(from);
      await new Promise((r) => setImmediate(r)); // the broker's round trip
      const n = this.answer(Number(from));
      if (n instanceof Error) throw n;
      if (n === 0) return [];
      const offsets = Array.from({ length: n }, (_, i) => String(Number(from) + i));
      return [batch(0, from, offsets)];
    } catch (e) {
      await this.recoverFromFetch(e);
      return [];
    }
  }
}
patchFetch(Group.prototype as unknown as FetchingGroup);

const settle = () => new Promise((r) => setTimeout(r, 5));
const first = (b: FetchedBatch[]) => b[0]?.messagesWithinOffset[0]?.offset;
const fetchOf = (g: Group) => g.fetch(0);

describe("the wrapped fetch, on a group shaped like kafkajs's", () => {
  it('sends the next fetch at once, from past the batch, and hands it over once the batch is handled', async () => {
    const g = new Group();
    expect(first(await fetchOf(g))).toBe('0');
    await settle();
    expect(g.asked).toEqual(['0', '5']); // ahead, while offsets 0–4 are being handled
    g.resolved = '5';
    expect(first(await fetchOf(g))).toBe('5');
    expect(g.asked).toEqual(['0', '5', '10']);
  });

  it('drops the batch fetched ahead when the one before was handled in part, and fetches from there', async () => {
    const g = new Group();
    await fetchOf(g);
    await settle();
    g.resolved = '3';
    expect(await fetchOf(g)).toEqual([]); // dropped: kafkajs's runner heartbeats and fetches again
    expect(first(await fetchOf(g))).toBe('3');
    expect(g.asked.slice(0, 3)).toEqual(['0', '5', '3']);
  });

  it("leaves a seek that waits to kafkajs's own fetch: the fetch ahead applies none, kafkajs's own fetch applies it next", async () => {
    const g = new Group();
    await fetchOf(g);
    expect(g.seeksApplied).toBe(1);
    g.pending.set(0, '2'); // a seek asked while the batch is handled
    await settle();
    expect(g.seeksApplied).toBe(1); // the fetch ahead did not apply it
    g.resolved = '5';
    expect(await fetchOf(g)).toEqual([]); // its batch is stale to the seek: dropped
    await settle();
    expect(g.asked).toEqual(['0', '5']); // nothing fetched meanwhile
    expect(first(await fetchOf(g))).toBe('2'); // kafkajs's own fetch applies it
    expect(g.seeksApplied).toBe(2);
  });

  it('does not recover from a failure ahead; the next call fetches as kafkajs does and recovers there', async () => {
    const g = new Group();
    const broken = new Error('leader moved');
    await fetchOf(g);
    g.answer = () => broken;
    await settle(); // the fetch ahead failed
    expect(g.recovered).toEqual([]);
    g.resolved = '5';
    expect(await fetchOf(g)).toEqual([]);
    expect(g.recovered).toEqual([broken]); // by kafkajs's own fetch, on the real group
    expect(g.asked).toEqual(['0', '5', '5']);
  });

  it('starts nothing ahead after a fetch that returned nothing (an idle consumer long-polls as before)', async () => {
    const g = new Group();
    g.answer = () => 0;
    expect(await fetchOf(g)).toEqual([]);
    await settle();
    expect(g.asked).toEqual(['0']);
  });

  it("does not wait for a fetch ahead of another generation (a rebalance in between): kafkajs's own runs", async () => {
    const g = new Group();
    await fetchOf(g);
    g.generationId = 2;
    g.resolved = '0'; // the new generation starts from the committed offset
    g.answer = (from) => (from === 0 ? 4 : 5);
    expect(first(await fetchOf(g))).toBe('0');
    expect(g.asked.slice(0, 3)).toEqual(['0', '5', '0']);
  });
});
