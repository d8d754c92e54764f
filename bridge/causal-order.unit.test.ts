import fc from 'fast-check';
import { compareStaged, kahn, orderRound, type StagedRef } from './causal-order';

const NOW = 1_000_000;
const HOLD = 30_000;

let n = 0;
function ref(over: Partial<StagedRef> = {}): StagedRef {
  n++;
  return {
    event_id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    causation_id: null,
    publicado_em: NOW - 1000 + n,
    ordem_sessao: null,
    ordem_contador: null,
    kafka_topic: 't',
    kafka_partition: 0,
    kafka_offset: String(n),
    recebido_em: NOW - 100,
    ...over,
  };
}
const ids = (rows: StagedRef[]) => rows.map((r) => r.event_id);

describe('orderRound across rounds: gaps in a session', () => {
  const GAP = 2_000;
  const sess = (ultimo: Record<string, number>) => ({ ultimo: new Map(Object.entries(ultimo)), esperaMs: GAP });

  it('holds a session’s events after a counter not staged yet (one send split by the round), and their effects', () => {
    // one publicarLote: counters 5..8 on four topics; the round took 7 and 8 but not 5 and 6
    const c7 = ref({ ordem_sessao: 's', ordem_contador: 7, kafka_topic: 'a' });
    const c8 = ref({ ordem_sessao: 's', ordem_contador: 8, kafka_topic: 'b' });
    const effect = ref({ causation_id: c8.event_id, kafka_topic: 'c' });
    const other = ref({ ordem_sessao: 'z', ordem_contador: 3 });
    const r = orderRound([c7, c8, effect, other], {
      inLog: new Set(),
      now: NOW,
      holdMs: HOLD,
      sessoes: sess({ s: 4, z: 2 }),
    });
    expect(ids(r.write)).toEqual([other.event_id]);
    expect(r.held.map((h) => [h.row.event_id, h.cause])).toEqual([
      [c7.event_id, 's:5'],
      [c8.event_id, 's:5'],
      [effect.event_id, c8.event_id],
    ]);
    // next round: 5 and 6 staged too — all four in counter order
    const c5 = ref({ ordem_sessao: 's', ordem_contador: 5, kafka_topic: 'd', publicado_em: NOW });
    const c6 = ref({ ordem_sessao: 's', ordem_contador: 6, kafka_topic: 'e', publicado_em: NOW });
    const next = orderRound([c7, c8, effect, c5, c6], {
      inLog: new Set(),
      now: NOW,
      holdMs: HOLD,
      sessoes: sess({ s: 4 }),
    });
    expect(ids(next.write)).toEqual([c5.event_id, c6.event_id, c7.event_id, c8.event_id, effect.event_id]);
    expect(next.held).toEqual([]);
  });

  it('writes after a gap that waited esperaMs (a send that failed), and never holds a session seen first or repeated counters', () => {
    const late = ref({ ordem_sessao: 's', ordem_contador: 9, recebido_em: NOW - GAP });
    const fresh = ref({ ordem_sessao: 'new', ordem_contador: 40 });
    const again = ref({ ordem_sessao: 'r', ordem_contador: 3 }); // already written once (redelivery)
    const r = orderRound([late, fresh, again], {
      inLog: new Set(),
      now: NOW,
      holdMs: HOLD,
      sessoes: sess({ s: 4, r: 5 }),
    });
    expect(r.held).toEqual([]);
    expect(r.write).toHaveLength(3);
    // the gap that waited is reported (the sequencer counts and logs it); a first-seen session is not a gap
    expect(r.gapsExpired).toEqual([{ sessao: 's', desde: 5, ate: 8 }]);
  });

  it('a session first seen waits for nothing before its lowest staged counter, but for a gap between its staged counters', () => {
    // the first round after an outage: an outbox pass's copies on two partitions (5, 6, 8), the
    // third's (7) still on its way; nothing of the session written by this sequencer before
    const at = (c: number) => ref({ ordem_sessao: 'new', ordem_contador: c, ordem_firme: 5 });
    const [c5, c6, c8] = [at(5), at(6), at(8)];
    const ctx = { inLog: new Set<string>(), now: NOW, holdMs: HOLD, sessoes: sess({}) };
    const r = orderRound([c8, c6, c5], ctx);
    expect(ids(r.write)).toEqual([c5.event_id, c6.event_id]);
    expect(r.held.map((h) => [h.row.event_id, h.cause])).toEqual([[c8.event_id, 'new:7']]);
    const c7 = at(7);
    expect(ids(orderRound([c8, c7, c6, c5], ctx).write)).toEqual(ids([c5, c6, c7, c8]));
  });

  it('a round short of a partition (given up) settles no gap by a mark: the counter may be acknowledged and not staged', () => {
    // mark 7: 5 and 6 acknowledged by Kafka — but a partition given up may hold them, unstaged
    const c7 = ref({ ordem_sessao: 's', ordem_contador: 7, ordem_firme: 7 });
    const ctx = { inLog: new Set<string>(), now: NOW, holdMs: HOLD };
    const short = orderRound([c7], {
      ...ctx,
      sessoes: { ...sess({ s: 4 }), firme: new Map([['s', 7]]), incompleto: true },
    });
    expect(short.write).toEqual([]);
    expect(short.held.map((h) => h.cause)).toEqual(['s:5']);
    // the bound still holds: after esperaMs it is written, and the gap reported
    const waited = { ...c7, recebido_em: NOW - GAP };
    const late = orderRound([waited], { ...ctx, sessoes: { ...sess({ s: 4 }), incompleto: true } });
    expect(ids(late.write)).toEqual([c7.event_id]);
    expect(late.gapsExpired).toEqual([{ sessao: 's', desde: 5, ate: 6 }]);
    // every partition staged to the snapshot: the mark settles it at once, nothing reported
    const whole = orderRound([c7], { ...ctx, sessoes: sess({ s: 4 }) });
    expect(ids(whole.write)).toEqual([c7.event_id]);
    expect(whole.gapsExpired).toEqual([]);
  });

  it('writes at once past a gap below the settled mark (its producer acknowledged or gave up those counters)', () => {
    // counters 5 and 6 failed and were given up; 7 says so (mark 7), staged a moment ago
    const c7 = ref({ ordem_sessao: 's', ordem_contador: 7, ordem_firme: 7 });
    const c8 = ref({ ordem_sessao: 's', ordem_contador: 8, ordem_firme: 7 });
    const r = orderRound([c8, c7], { inLog: new Set(), now: NOW, holdMs: HOLD, sessoes: sess({ s: 4 }) });
    expect(ids(r.write)).toEqual([c7.event_id, c8.event_id]);
    // a mark staged in an earlier round counts as well
    const c9 = ref({ ordem_sessao: 't', ordem_contador: 9, ordem_firme: 3 });
    const marked = orderRound([c9], {
      inLog: new Set(),
      now: NOW,
      holdMs: HOLD,
      sessoes: { ...sess({ t: 4 }), firme: new Map([['t', 9]]) },
    });
    expect(ids(marked.write)).toEqual([c9.event_id]);
  });

  it('holds past a gap at or above the settled mark: those counters were still in flight (an outbox pass written for some partitions)', () => {
    // a pass sent counters 5..8 at once (mark 5); only 7 and 8 were written; 5 and 6 come with the next pass
    const c7 = ref({ ordem_sessao: 's', ordem_contador: 7, ordem_firme: 5 });
    const c8 = ref({ ordem_sessao: 's', ordem_contador: 8, ordem_firme: 5 });
    // an event planned later, with 5 still open: mark 5 again
    const c9 = ref({ ordem_sessao: 's', ordem_contador: 9, ordem_firme: 5 });
    const ctx = { inLog: new Set<string>(), now: NOW, holdMs: HOLD, sessoes: sess({ s: 4 }) };
    const r = orderRound([c7, c8, c9], ctx);
    expect(r.write).toEqual([]);
    expect(r.held.map((h) => h.cause)).toEqual(['s:5', 's:5', 's:5']);
    // the gap partly settled (mark 6: 5 given up, 6 open) still holds
    const c10 = ref({ ordem_sessao: 's', ordem_contador: 10, ordem_firme: 6 });
    expect(orderRound([c7, c8, c9, c10], ctx).write).toEqual([]);
  });

  it('property: nothing of a session is written past a recent gap after its last written counter, unless its producer settled the gap and the round is not short of a partition', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            c: fc.integer({ min: 1, max: 30 }),
            age: fc.integer({ min: 0, max: 3 * GAP }),
            mark: fc.option(fc.integer({ min: 1, max: 30 })),
          }),
          { maxLength: 25 },
        ),
        fc.integer({ min: 0, max: 10 }),
        fc.option(fc.integer({ min: 1, max: 30 })),
        fc.boolean(),
        fc.boolean(),
        (evs, lastWritten, earlierMark, incompleto, firstSeen) => {
          const rows = evs.map((e) =>
            ref({
              ordem_sessao: 's',
              ordem_contador: e.c,
              ordem_firme: e.mark === null ? null : Math.min(e.mark, e.c),
              recebido_em: NOW - e.age,
            }),
          );
          const firme = earlierMark === null ? undefined : new Map([['s', earlierMark]]);
          // a session first seen: its lowest staged counter is where it starts
          const last = firstSeen && evs.length > 0 ? Math.min(...evs.map((e) => e.c)) - 1 : lastWritten;
          // a round short of a partition: no mark settles anything
          const settled = incompleto ? 0 : Math.max(earlierMark ?? 0, ...rows.map((x) => x.ordem_firme ?? 0));
          const r = orderRound(rows, {
            inLog: new Set(),
            now: NOW,
            holdMs: HOLD,
            sessoes: { ...sess(firstSeen ? {} : { s: last }), firme, incompleto },
          });
          expect(r.write.length + r.held.length).toBe(rows.length);
          // written counters above `last`: contiguous from last + 1, unless the gap waited long enough
          const present = new Set(rows.map((x) => x.ordem_contador));
          const unwaited: string[] = [];
          for (const w of r.write) {
            const c = w.ordem_contador as number;
            for (let k = last + 1; k < c; k++) {
              if (present.has(k) || k < settled) continue;
              const firstAfter = rows
                .filter((x) => (x.ordem_contador as number) > k)
                .sort((a, b) => (a.ordem_contador as number) - (b.ordem_contador as number))[0]!;
              if (NOW - firstAfter.recebido_em < GAP) unwaited.push(`${c} written, ${k} missing`);
            }
          }
          expect(unwaited).toEqual([]);
          // and a gap wholly below the mark never holds what follows it
          const held = new Set(r.held.map((h) => h.row.event_id));
          const counters = [...present].sort((a, b) => (a as number) - (b as number)) as number[];
          let expected = last + 1;
          for (const c of counters) {
            if (c < expected) continue;
            if (c !== expected && c > settled) break;
            for (const x of rows.filter((y) => y.ordem_contador === c)) expect(held.has(x.event_id)).toBe(false);
            expected = c + 1;
          }
        },
      ),
    );
  });
});

describe('orderRound', () => {
  it('puts a cause before its effect even when the effect was published earlier (clock skew)', () => {
    const cause = ref({ publicado_em: NOW - 10, kafka_topic: 'a' });
    const effect = ref({ publicado_em: NOW - 500, kafka_topic: 'b', causation_id: cause.event_id });
    const unrelated = ref({ publicado_em: NOW - 400, kafka_topic: 'c' });
    const r = orderRound([effect, unrelated, cause], { inLog: new Set(), now: NOW, holdMs: HOLD });
    expect(ids(r.write)).toEqual([unrelated.event_id, cause.event_id, effect.event_id]);
    expect(r.held).toEqual([]);
    expect(r.released).toEqual([]);
  });

  it('writes an effect whose cause is already in the log at once, and holds one whose cause is nowhere', () => {
    const old = 'aaaaaaaa-0000-4000-8000-000000000000';
    const missing = 'bbbbbbbb-0000-4000-8000-000000000000';
    const a = ref({ causation_id: old });
    const b = ref({ causation_id: missing });
    const c = ref({ causation_id: b.event_id }); // caused by a held event: held too
    const d = ref();
    const r = orderRound([a, b, c, d], { inLog: new Set([old]), now: NOW, holdMs: HOLD });
    expect(ids(r.write)).toEqual([a.event_id, d.event_id]);
    expect(r.held.map((h) => [h.row.event_id, h.cause])).toEqual([
      [b.event_id, missing],
      [c.event_id, b.event_id],
    ]);
  });

  it('keeps an effect staged before its cause waiting for it past its own hold, and writes it after the cause', () => {
    // the effect's partition was staged first: its own hold runs out while its cause, staged
    // later, is still held for a missing cause of its own
    const missing = 'f0000000-0000-4000-8000-000000000000';
    const cause = ref({ causation_id: missing, recebido_em: NOW - 1_000 });
    const effect = ref({ causation_id: cause.event_id, recebido_em: NOW - HOLD - 1_000 });
    const r = orderRound([effect, cause], { inLog: new Set(), now: NOW, holdMs: HOLD });
    expect(r.write).toEqual([]);
    expect(r.released).toEqual([]);
    expect(ids(r.held.map((h) => h.row)).sort()).toEqual(ids([effect, cause]).sort());
    // the cause's hold runs out: it is released and its effect follows it
    const later = orderRound([effect, cause], { inLog: new Set(), now: NOW + HOLD, holdMs: HOLD });
    expect(ids(later.write)).toEqual(ids([cause, effect]));
    expect(ids(later.released.map((h) => h.row))).toEqual(ids([cause]));
  });

  it('releases an event whose hold ran out, and then its effects follow it in the same round', () => {
    const missing = 'bbbbbbbb-0000-4000-8000-000000000000';
    const b = ref({ causation_id: missing, recebido_em: NOW - HOLD });
    const c = ref({ causation_id: b.event_id, recebido_em: NOW - 5 });
    const r = orderRound([c, b], { inLog: new Set(), now: NOW, holdMs: HOLD });
    expect(ids(r.write)).toEqual([b.event_id, c.event_id]);
    expect(r.released.map((h) => [h.row.event_id, h.cause])).toEqual([[b.event_id, missing]]);
    expect(r.held).toEqual([]);
  });

  it("keeps one producer session's counter order across topics, whatever the timestamps say", () => {
    const s = '11111111-0000-4000-8000-000000000000';
    const first = ref({ ordem_sessao: s, ordem_contador: 1, publicado_em: NOW, kafka_topic: 'z' });
    const second = ref({ ordem_sessao: s, ordem_contador: 2, publicado_em: NOW, kafka_topic: 'a' });
    const third = ref({ ordem_sessao: s, ordem_contador: 3, publicado_em: NOW - 1, kafka_topic: 'm' });
    const r = orderRound([third, second, first], { inLog: new Set(), now: NOW, holdMs: HOLD });
    expect(ids(r.write)).toEqual([first.event_id, second.event_id, third.event_id]);
  });

  it('does not let a held event hold back the later events of its producer', () => {
    const s = '11111111-0000-4000-8000-000000000000';
    const heldOne = ref({ ordem_sessao: s, ordem_contador: 1, causation_id: 'cccccccc-0000-4000-8000-000000000000' });
    const later = ref({ ordem_sessao: s, ordem_contador: 2 });
    const r = orderRound([heldOne, later], { inLog: new Set(), now: NOW, holdMs: HOLD });
    expect(ids(r.write)).toEqual([later.event_id]);
    expect(ids(r.held.map((h) => h.row))).toEqual([heldOne.event_id]);
  });

  it('treats a self-cause as no cause and a causation cycle as a missing cause', () => {
    const self = ref();
    self.causation_id = self.event_id;
    const x = ref();
    const y = ref({ causation_id: x.event_id });
    x.causation_id = y.event_id;
    const r = orderRound([self, x, y], { inLog: new Set(), now: NOW, holdMs: HOLD });
    expect(ids(r.write)).toEqual([self.event_id]);
    expect(ids(r.held.map((h) => h.row)).sort()).toEqual([x.event_id, y.event_id].sort());
    const later = orderRound([self, x, y], { inLog: new Set(), now: NOW + HOLD, holdMs: HOLD });
    // past the hold one member of the cycle is released and the other follows it as its effect
    expect(later.write).toHaveLength(3);
    expect(later.released).toHaveLength(1);
    const w = ids(later.write);
    const releasedId = (later.released[0] as { row: StagedRef }).row.event_id;
    expect(w.indexOf(releasedId)).toBeLessThan(w.indexOf(releasedId === x.event_id ? y.event_id : x.event_id));
  });

  it('orders 50,000 events whose forged session counters contradict their causation at every step, without a quadratic walk', () => {
    const s = '11111111-0000-4000-8000-000000000000';
    const chain: StagedRef[] = [ref({ ordem_sessao: s, ordem_contador: 50_000 })];
    for (let i = 1; i < 50_000; i++)
      chain.push(
        ref({ causation_id: (chain[i - 1] as StagedRef).event_id, ordem_sessao: s, ordem_contador: 50_000 - i }),
      );
    const r = orderRound(chain, { inLog: new Set(), now: NOW, holdMs: HOLD });
    expect(ids(r.write)).toEqual(ids(chain)); // causation wins over the forged session order
  });

  it('walks a 200,000-event causation chain without exhausting the stack', () => {
    const chain: StagedRef[] = [ref()];
    for (let i = 1; i < 200_000; i++)
      chain.push(ref({ causation_id: (chain[i - 1] as StagedRef).event_id, publicado_em: NOW - i }));
    const r = orderRound(chain, { inLog: new Set(), now: NOW, holdMs: HOLD });
    expect(ids(r.write)).toEqual(ids(chain));
  });
});

describe('orderRound, property-based', () => {
  // a round of up to 40 events over 3 sessions, with causes drawn among themselves, the log,
  // and nowhere; random clocks, topics, partitions and staging times
  const round = fc
    .array(
      fc.record({
        ts: fc.integer({ min: 0, max: 50 }),
        session: fc.option(fc.constantFrom('s1', 's2', 's3'), { nil: null }),
        topic: fc.constantFrom('a', 'b', 'c'),
        partition: fc.integer({ min: 0, max: 2 }),
        cause: fc.option(fc.oneof(fc.integer({ min: 0, max: 39 }), fc.constantFrom('log', 'nowhere')), { nil: null }),
        age: fc.integer({ min: 0, max: 2 * HOLD }),
      }),
      { maxLength: 40 },
    )
    .map((specs) => {
      const counters = new Map<string, number>();
      const rows = specs.map((s, i) => {
        const c = s.session === null ? null : (counters.get(s.session) ?? 0) + 1;
        if (s.session !== null) counters.set(s.session, c as number);
        return {
          event_id: `e${i}`,
          causation_id: null as string | null,
          publicado_em: s.ts,
          ordem_sessao: s.session,
          ordem_contador: c,
          kafka_topic: s.topic,
          kafka_partition: s.partition,
          kafka_offset: String(i),
          recebido_em: NOW - s.age,
        };
      });
      specs.forEach((s, i) => {
        const r = rows[i] as StagedRef;
        if (s.cause === 'log') r.causation_id = 'in-log';
        else if (s.cause === 'nowhere') r.causation_id = 'nowhere';
        else if (s.cause !== null && s.cause < rows.length) r.causation_id = `e${s.cause}`;
      });
      return rows;
    });

  it('writes or holds every event exactly once; every written effect follows its cause or is released', () => {
    fc.assert(
      fc.property(round, (rows) => {
        const r = orderRound(rows, { inLog: new Set(['in-log']), now: NOW, holdMs: HOLD });
        const written = ids(r.write);
        expect([...written, ...ids(r.held.map((h) => h.row))].sort()).toEqual(ids(rows).sort());
        const released = new Set(ids(r.released.map((h) => h.row)));
        for (const e of released) expect(written).toContain(e);
        const at = new Map(written.map((id, i) => [id, i]));
        for (const row of r.write) {
          const c = row.causation_id;
          if (c === null || c === row.event_id || c === 'in-log' || released.has(row.event_id)) continue;
          // the cause is in this round and written before its effect
          expect(at.get(c)).toBeLessThan(at.get(row.event_id) as number);
        }
        // a held event is young enough to wait, or waits for a cause of this round that is held
        const heldIds = new Set(ids(r.held.map((h) => h.row)));
        const heldTooLong = r.held.filter(
          (h) => NOW - h.row.recebido_em >= HOLD && !heldIds.has(h.row.causation_id as string),
        );
        expect(ids(heldTooLong.map((h) => h.row))).toEqual([]);
        // only an event whose cause is not in this round (or a causation cycle) is released: a
        // staged cause is always written before its effect
        const byId = new Map(rows.map((x) => [x.event_id, x]));
        const inCycle = (row: StagedRef): boolean => {
          const seen = new Set<string>();
          let c = row.causation_id;
          while (c !== null && byId.has(c) && !seen.has(c)) {
            seen.add(c);
            c = (byId.get(c) as StagedRef).causation_id;
          }
          return c !== null && seen.has(c);
        };
        const releasedPastStagedCause = r.released.filter(
          (h) => byId.has(h.row.causation_id as string) && !inCycle(h.row),
        );
        expect(ids(releasedPastStagedCause.map((h) => h.row))).toEqual([]);
      }),
    );
  });

  it("keeps each session's counter order among written events, unless a cause forces otherwise", () => {
    fc.assert(
      fc.property(round, (rows) => {
        const noCauses = rows.map((x) => ({ ...x, causation_id: null }));
        const r = orderRound(noCauses, { inLog: new Set(), now: NOW, holdMs: HOLD });
        const last = new Map<string, number>();
        for (const row of r.write) {
          if (row.ordem_sessao === null) continue;
          expect(row.ordem_contador as number).toBeGreaterThan(last.get(row.ordem_sessao) ?? 0);
          last.set(row.ordem_sessao, row.ordem_contador as number);
        }
      }),
    );
  });

  it('without causes or sessions, is exactly the publish-time order', () => {
    fc.assert(
      fc.property(round, (rows) => {
        const plain = rows.map((x) => ({ ...x, causation_id: null, ordem_sessao: null, ordem_contador: null }));
        const r = orderRound(plain, { inLog: new Set(), now: NOW, holdMs: HOLD });
        expect(r.write).toEqual([...plain].sort(compareStaged));
      }),
    );
  });

  it('when every edge goes forward in rule-3 order, Kahn gives rule-3 order itself (the round skips it then)', () => {
    // random DAGs whose edges all go from an earlier event to a later one, some events left out
    // (held), causal and session edges mixed: what orderRound writes without running Kahn
    const dag = fc.integer({ min: 0, max: 60 }).chain((n) =>
      fc.record({
        n: fc.constant(n),
        out: fc.uniqueArray(fc.nat({ max: Math.max(0, n - 1) }), { maxLength: Math.floor(n / 3) }),
        edges: fc.array(
          fc.record({
            a: fc.nat({ max: Math.max(0, n - 1) }),
            b: fc.nat({ max: Math.max(0, n - 1) }),
            causal: fc.boolean(),
          }),
          { maxLength: 3 * n },
        ),
      }),
    );
    fc.assert(
      fc.property(dag, ({ n, out, edges }) => {
        const held = new Set(out);
        const writable = Array.from({ length: n }, (_, i) => i).filter((i) => !held.has(i));
        const forward = edges
          .filter((e) => e.a !== e.b && !held.has(e.a) && !held.has(e.b))
          .map((e) => ({ from: Math.min(e.a, e.b), to: Math.max(e.a, e.b), causal: e.causal }));
        expect(kahn(n, writable, forward)).toEqual(writable);
      }),
    );
    // and a backward edge is not rule-3 order: Kahn is what puts the cause first
    expect(kahn(3, [0, 1, 2], [{ from: 2, to: 0, causal: true }])).toEqual([1, 2, 0]);
  });

  it('holds nothing when the hold is 0', () => {
    fc.assert(
      fc.property(round, (rows) => {
        expect(orderRound(rows, { inLog: new Set(), now: NOW, holdMs: 0 }).held).toEqual([]);
      }),
    );
  });
});
