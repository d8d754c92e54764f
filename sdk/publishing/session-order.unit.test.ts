import fc from 'fast-check';
import { parseOrder } from '../wire/headers';
import { SessionOrder } from './session-order';

describe('SessionOrder (feromonios_ordem counters and settled mark)', () => {
  let t = 0;
  const clock = () => t;
  beforeEach(() => (t = 1_000));

  it('counts from 1; the mark is the lowest counter not acknowledged', () => {
    const o = new SessionOrder(10_000, clock);
    const [a, b, c] = ['a', 'b', 'c'].map((id) => o.take(id)) as [number, number, number];
    expect([a, b, c]).toEqual([1, 2, 3]);
    expect(parseOrder(o.header(c))).toEqual({ sessao: o.session, contador: 3, firme: 1 });
    o.acknowledged([b]);
    expect(o.settledMark()).toBe(1); // 1 still in flight
    o.acknowledged([a]);
    expect(o.settledMark()).toBe(3);
    o.acknowledged([c]);
    expect(o.settledMark()).toBe(4); // nothing open: the next counter
  });

  it('a failed publish holds the mark back for failedHoldMs, and its event keeps its counter when sent again', () => {
    const o = new SessionOrder(10_000, clock);
    const a = o.take('a');
    o.failed([{ eventId: 'a', counter: a }], true);
    const b = o.take('b');
    expect(parseOrder(o.header(b))?.firme).toBe(a); // a retry may come: the gap is not settled
    t += 9_999;
    expect(o.settledMark()).toBe(a);
    expect(o.take('a')).toBe(a); // the outbox relay's next pass: same counter, open again
    t += 60_000;
    expect(o.settledMark()).toBe(a); // in flight again: no expiry while sent
    o.failed([{ eventId: 'a', counter: a }], true);
    t += 10_000;
    expect(o.settledMark()).toBe(b); // given up: settled
    o.acknowledged([b]);
    expect(o.settledMark()).toBe(3);
    expect(o.take('c')).toBe(3);
  });

  it('a refusal for good (not retriable) settles the counter at once; a retry of the event still keeps it', () => {
    const o = new SessionOrder(10_000, clock);
    const a = o.take('a');
    const b = o.take('b');
    o.failed([{ eventId: 'a', counter: a }], false);
    expect(o.settledMark()).toBe(b);
    expect(o.take('a')).toBe(a);
    expect(o.settledMark()).toBe(a);
  });

  it('a retry after the hold reopens the counter below the mark (the mark may go back; the bridge keeps the highest)', () => {
    const o = new SessionOrder(1_000, clock);
    const a = o.take('a');
    o.failed([{ eventId: 'a', counter: a }], true);
    const b = o.take('b');
    o.acknowledged([b]);
    t += 1_000;
    expect(o.settledMark()).toBe(3);
    expect(o.take('a')).toBe(a);
    expect(o.settledMark()).toBe(a);
  });

  it('property: every counter below the mark is acknowledged or failed more than failedHoldMs ago and not sent again', () => {
    type Op = { kind: 'take' | 'ack' | 'fail' | 'tick'; n: number };
    const op = fc.oneof(
      fc.record({ kind: fc.constant<'take'>('take'), n: fc.nat(30) }),
      fc.record({ kind: fc.constant<'ack'>('ack'), n: fc.nat(30) }),
      fc.record({ kind: fc.constant<'fail'>('fail'), n: fc.nat(30) }),
      fc.record({ kind: fc.constant<'tick'>('tick'), n: fc.nat(3_000) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops: Op[]) => {
        t = 0;
        const hold = 1_000;
        const o = new SessionOrder(hold, clock);
        // the model: per counter, 'sent' | 'acked' | failed at time
        const state = new Map<number, { s: 'sent' } | { s: 'acked' } | { s: 'failed'; at: number; id: string }>();
        const inFlight: Array<{ id: string; counter: number }> = [];
        let fresh = 0;
        const problems: string[] = [];
        for (const { kind, n } of ops) {
          if (kind === 'tick') t += n;
          else if (kind === 'take') {
            // half the time a retry of a failed event, else a new one
            const failed = [...state].filter(([, v]) => v.s === 'failed');
            const retry = n % 2 === 0 ? failed[n % Math.max(1, failed.length)] : undefined;
            const id = retry && retry[1].s === 'failed' ? retry[1].id : `e${++fresh}`;
            const counter = o.take(id);
            if (retry && counter !== retry[0]) problems.push(`retry of ${id} took ${counter}, not ${retry[0]}`);
            state.set(counter, { s: 'sent' });
            inFlight.push({ id, counter });
            const mark = parseOrder(o.header(counter))?.firme as number;
            if (!(mark <= counter)) problems.push(`mark ${mark} above its counter ${counter}`);
          } else if (inFlight.length > 0) {
            const [done] = inFlight.splice(n % inFlight.length, 1) as [{ id: string; counter: number }];
            if (kind === 'ack') {
              o.acknowledged([done.counter]);
              state.set(done.counter, { s: 'acked' });
            } else {
              const retriable = n % 3 !== 0;
              o.failed([{ eventId: done.id, counter: done.counter }], retriable);
              // a refusal for good settles at once: as if it failed a hold ago
              state.set(done.counter, { s: 'failed', at: retriable ? t : t - hold, id: done.id });
            }
          }
          const mark = o.settledMark();
          for (const [c, v] of state) {
            const settled = v.s === 'acked' || (v.s === 'failed' && t - v.at >= hold);
            if (c < mark && !settled) problems.push(`${c} below the mark ${mark} and open`);
          }
          // and the mark is as high as it may be: the counter at the mark is open (or the next one)
          const at = state.get(mark);
          if (at ? !(at.s === 'sent' || (at.s === 'failed' && t - at.at < hold)) : mark !== state.size + 1)
            problems.push(`the mark ${mark} could be higher`);
        }
        expect(problems).toEqual([]);
      }),
    );
  });
});
