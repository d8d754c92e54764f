import fc from 'fast-check';
import { setNewest } from './bounded-map';

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
});
