import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { mergeHeld, MemoryStaging, type CommitPoint, type MemoryRow } from './memory-staging';
import { frontierOf } from './staging-frontier';

const T = 'ns.evento.demanda.recebida';

/** A held event of partition `p` at `offset`, published at `at` (milliseconds). */
function held(p: number, offset: number, at: number, o: { id?: string; sessao?: string; firme?: number } = {}) {
  const event_id = o.id ?? randomUUID();
  const held = { event_id, tipo: 'demanda.recebida', line: Buffer.from(`${event_id}\n`) };
  const ref = {
    event_id,
    causation_id: null,
    publicado_em: at,
    ordem_sessao: o.sessao ?? null,
    ordem_contador: null,
    ordem_firme: o.firme ?? null,
    kafka_topic: T,
    kafka_partition: p,
    kafka_offset: String(offset),
    recebido_em: at,
  };
  return { ref, held, bytes: 100 };
}

const open = (maxRows = 1000, maxBytes = 1e9) => {
  const m = new MemoryStaging({ maxRows, maxBytes });
  m.open();
  return m;
};

describe('MemoryStaging (ADR 0029)', () => {
  it('stages nothing until opened, nor after closing, nor with a bound of 0 rows', () => {
    const m = new MemoryStaging({ maxRows: 10, maxBytes: 1e6 });
    expect(m.accepting(m.epoch)).toBe(false);
    expect(m.add(m.epoch, T, 0, [held(0, 0, 1)], 1n, 1)).toBeUndefined();
    m.open();
    expect(m.accepting(m.epoch)).toBe(true);
    m.close();
    expect(m.accepting(m.epoch)).toBe(false);
    const off = new MemoryStaging({ maxRows: 0, maxBytes: 1e6 });
    off.open();
    expect(off.accepting(off.epoch)).toBe(false);
  });

  it('a batch of an ended epoch adds nothing and a round of one settles nothing', () => {
    const m = open();
    const before = m.epoch;
    const r = held(0, 0, 1);
    m.add(before, T, 0, [r], 1n, 1);
    const [row] = m.below(new Map(), undefined);
    m.reset();
    expect(m.size).toBe(0);
    expect(m.add(before, T, 0, [held(0, 1, 2)], 2n, 2)).toBeUndefined();
    expect(m.settle(before, [row as MemoryRow])).toEqual([]);
  });

  it('commits only after the held events are settled, at the lowest one still held, with the frontier before it', () => {
    const m = open();
    const e = m.epoch;
    const rows = [held(0, 10, 1000), held(0, 11, 2000), held(0, 12, 3000)];
    m.add(e, T, 0, rows, 13n, 3000);
    const [a, b, c] = m.below(new Map(), undefined);
    // the middle one written first: the first still holds the offset back, nothing to commit
    expect(m.settle(e, [b as MemoryRow])).toEqual([]);
    const first = m.settle(e, [a as MemoryRow]);
    expect(first.map((p) => [p.topic, p.partition, p.offset])).toEqual([[T, 0, '12']]);
    expect(frontierOf((first[0] as CommitPoint).metadata)).toBe(2000);
    const last = m.settle(e, [c as MemoryRow]);
    expect(last.map((p) => [p.offset, frontierOf(p.metadata)])).toEqual([['13', 3000]]);
    expect(m.size).toBe(0);
    expect(m.close()).toBe(false); // everything staged was committed
  });

  it("a table chunk's commit stops at events still held before it", () => {
    const m = open();
    const e = m.epoch;
    m.add(e, T, 0, [held(0, 0, 1000)], 1n, 1000);
    expect(m.passed(e, T, 0, 500n, 5000).offset).toBe('0');
    const [r] = m.below(new Map(), undefined);
    expect(m.settle(e, [r as MemoryRow]).map((p) => p.offset)).toEqual(['500']);
    // outside staging in memory, a table chunk commits where it ends (ADR 0009)
    m.close();
    const table = m.passed(m.epoch, T, 0, 900n, 6000);
    expect([table.offset, frontierOf(table.metadata)]).toEqual(['900', 6000]);
  });

  it('a copy of a held event is a duplicate: the higher settled mark of the same session is kept', () => {
    const m = open();
    const e = m.epoch;
    const id = randomUUID();
    m.add(e, T, 0, [held(0, 0, 1, { id, sessao: 's', firme: 2 })], 1n, 1);
    const again = m.add(
      e,
      T,
      1,
      [held(1, 0, 2, { id, sessao: 's', firme: 5 }), held(1, 1, 3, { id, sessao: 'x', firme: 9 })],
      2n,
      3,
    );
    expect(again).toEqual({ held: [], duplicates: [id, id] });
    const [kept] = m.below(new Map(), undefined);
    expect(kept?.ref.ordem_firme).toBe(5);
  });

  it('says what is below a snapshot and a cut, and counts what is before a cut', () => {
    const m = open();
    const e = m.epoch;
    m.add(e, T, 0, [held(0, 0, 100), held(0, 1, 200), held(0, 2, 300)], 3n, 300);
    m.add(e, T, 1, [held(1, 0, 150)], 1n, 150);
    const high = new Map([[`${T}\u00000`, 2n]]);
    expect(m.below(high, undefined).map((r) => r.ref.kafka_offset)).toEqual(['0', '1', '0']);
    expect(m.below(new Map(), 160).map((r) => r.ref.publicado_em)).toEqual([100, 150]);
    expect(m.countBefore(250, 10)).toBe(3);
    expect(m.countBefore(250, 2)).toBe(2);
    // those being written (a plan made ahead leaves them out) are not counted
    const [first] = m.below(new Map(), 110);
    expect(m.countBefore(250, 10, new Set([first!.ref.event_id]))).toBe(2);
    expect(m.below(new Map(), 160, new Set([first!.ref.event_id])).map((r) => r.ref.publicado_em)).toEqual([150]);
    expect(m.staged(T, 0)).toEqual({ upTo: 3n, frontier: 300 });
    expect(m.staged(T, 7)).toBeUndefined();
  });

  it('bounds rows and bytes', () => {
    const m = open(3, 250);
    expect(m.hasRoom(3, 250)).toBe(true);
    expect(m.hasRoom(4, 10)).toBe(false);
    m.add(m.epoch, T, 0, [held(0, 0, 1), held(0, 1, 2)], 2n, 2);
    expect(m.bytes).toBe(200);
    expect(m.hasRoom(1, 51)).toBe(false);
    expect(m.hasRoom(1, 50)).toBe(true);
  });

  it('closing with events held or offsets not committed says the events lane must start again', () => {
    const m = open();
    m.add(m.epoch, T, 0, [held(0, 0, 1)], 1n, 1);
    expect(m.close()).toBe(true);
    expect(m.size).toBe(0);
  });

  // property: whatever the order of chunks held, chunks staged in the table and events settled,
  // a commit never passes an event still held, commits of a partition never go back, and once
  // everything is settled the last commit is where staging ended
  it('never commits past a held event (property)', () => {
    type Op = { kind: 'hold' | 'table'; p: number; n: number } | { kind: 'settle'; pick: number[] };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        kind: fc.constantFrom('hold' as const, 'table' as const),
        p: fc.integer({ min: 0, max: 2 }),
        n: fc.integer({ min: 1, max: 6 }),
      }),
      fc.record({ kind: fc.constant('settle' as const), pick: fc.array(fc.nat(), { maxLength: 6 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const m = open();
        const e = m.epoch;
        const next = [0, 0, 0];
        const last = new Map<number, bigint>();
        const check = (points: CommitPoint[]) => {
          for (const c of points) {
            const lowest = m
              .below(new Map(), undefined)
              .filter((r) => r.ref.kafka_partition === c.partition)
              .reduce(
                (min, r) => (BigInt(r.ref.kafka_offset) < min ? BigInt(r.ref.kafka_offset) : min),
                BigInt(next[c.partition] as number),
              );
            expect(BigInt(c.offset)).toBeLessThanOrEqual(lowest);
            expect(BigInt(c.offset)).toBeGreaterThanOrEqual(last.get(c.partition) ?? -1n);
            last.set(c.partition, BigInt(c.offset));
          }
        };
        for (const o of ops) {
          if (o.kind === 'settle') {
            const all = m.below(new Map(), undefined);
            check(
              m.settle(
                e,
                o.pick.map((i) => all[i % Math.max(all.length, 1)]).filter((r): r is MemoryRow => !!r),
              ),
            );
            continue;
          }
          const from = next[o.p] as number;
          next[o.p] = from + o.n;
          if (o.kind === 'hold')
            m.add(
              e,
              T,
              o.p,
              Array.from({ length: o.n }, (_, i) => held(o.p, from + i, from + i)),
              BigInt(from + o.n),
              from + o.n - 1,
            );
          else check([m.passed(e, T, o.p, BigInt(from + o.n), from + o.n - 1)]);
        }
        check(m.settle(e, m.below(new Map(), undefined)));
        for (const [p, c] of last) expect(c).toBe(BigInt(next[p] as number));
        expect(m.close()).toBe(false);
      }),
    );
  });

  describe("mergeHeld (a round: the table's events, then the held ones)", () => {
    it('adds a backlog of 200,000 held events to a round (a spread into push overflowed the stack and failed every round)', () => {
      const m = open(300_000);
      const rows = Array.from({ length: 200_000 }, (_, i) => held(0, i, 1_000 + i));
      m.add(m.epoch, T, 0, rows, 200_000n, 200_999);
      const table = [held(1, 0, 500).ref];
      const { fromMemory, twice } = mergeHeld(table, m.below(new Map(), undefined), 50_000);
      expect(fromMemory.size).toBe(200_000);
      expect(table).toHaveLength(200_001);
      expect(twice).toEqual([]);
    });

    it("takes only the held events before the table's last when the table filled the round, and returns those the table has too", () => {
      const m = open();
      const both = randomUUID();
      m.add(m.epoch, T, 0, [held(0, 0, 10), held(0, 1, 25, { id: both }), held(0, 2, 40)], 3n, 40);
      const table = [held(1, 0, 20).ref, held(1, 1, 25, { id: both }).ref, held(1, 2, 30).ref];
      const full = mergeHeld([...table], m.below(new Map(), undefined), 3);
      expect([...full.fromMemory.values()].map((r) => r.ref.kafka_offset)).toEqual(['0']);
      expect(full.twice.map((r) => r.ref.event_id)).toEqual([both]);
      // the table's rows fit in the round: every held one comes (but the one it has too)
      const room = mergeHeld([...table], m.below(new Map(), undefined), 4);
      expect([...room.fromMemory.values()].map((r) => r.ref.kafka_offset)).toEqual(['0', '2']);
    });
  });
});
