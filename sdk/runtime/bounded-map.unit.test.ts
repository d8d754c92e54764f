import fc from 'fast-check';
import { setNewest } from './bounded-map';

type Op = { set: [number, number] } | { del: number } | { clear: true };

describe('setNewest', () => {
  it('keeps exactly the most recently set distinct keys, at most max, oldest first, each with its last value', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 20 }), fc.integer()), { maxLength: 200 }),
        fc.integer({ min: 1, max: 10 }),
        (ops, max) => {
          const map = new Map<number, number>();
          for (const [k, v] of ops) setNewest(map, k, v, max);
          // the model: last set of each key, ordered by when it was last set, the newest `max`
          const last = new Map<number, { v: number; at: number }>();
          ops.forEach(([k, v], at) => last.set(k, { v, at }));
          const expected = [...last]
            .sort((a, b) => a[1].at - b[1].at)
            .slice(-max)
            .map(([k, { v }]) => [k, v]);
          expect([...map]).toEqual(expected);
        },
      ),
    );
  });

  // The oldest entry is read through an iterator kept between calls: whatever the map's owner
  // does meanwhile (deletes, clears, a window of 0 that empties it every time), the map must
  // stay exactly the model's — an LRU of insertion order cut to `max` by each setNewest.
  it('stays exact when the map is also deleted from and cleared between calls, down to max 0', () => {
    const op: fc.Arbitrary<Op> = fc.oneof(
      { weight: 6, arbitrary: fc.tuple(fc.integer({ min: 0, max: 30 }), fc.integer()).map((set) => ({ set })) },
      { weight: 2, arbitrary: fc.integer({ min: 0, max: 30 }).map((del) => ({ del })) },
      { weight: 1, arbitrary: fc.constant({ clear: true as const }) },
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), fc.integer({ min: 0, max: 12 }), (ops, max) => {
        const map = new Map<number, number>();
        let model: Array<[number, number]> = [];
        for (const o of ops) {
          if ('set' in o) {
            const [k, v] = o.set;
            setNewest(map, k, v, max);
            model = [...model.filter(([x]) => x !== k), [k, v]];
            while (model.length > max) model.shift();
          } else if ('del' in o) {
            map.delete(o.del);
            model = model.filter(([x]) => x !== o.del);
          } else {
            map.clear();
            model = [];
          }
          expect([...map]).toEqual(model);
        }
      }),
    );
  });

  it('200,000 inserts into a window of 10,000 leave exactly the newest 10,000, oldest first', () => {
    const map = new Map<string, true>();
    for (let i = 0; i < 200_000; i++) setNewest(map, `id-${i}`, true, 10_000);
    expect(map.size).toBe(10_000);
    expect(map.keys().next().value).toBe('id-190000');
    expect([...map.keys()].at(-1)).toBe('id-199999');
  });
});
