import fc from 'fast-check';
import { writeIsolatingRefused } from './refused-rows';

/** What node-postgres rejects with when PostgreSQL refuses a row for its content. */
const refusal = (code: string) => Object.assign(new Error(`refused (${code})`), { code });

/**
 * A fake log: a write of `part` is refused (SQLSTATE of the first bad row in it) when any row of
 * it is bad, else every row is appended, in order. Counts the writes tried.
 */
function fakeLog(bad: ReadonlyMap<number, string>) {
  const log: number[] = [];
  let writes = 0;
  const write = (part: number[]): Promise<number[]> => {
    writes++;
    const first = part.find((i) => bad.has(i));
    if (first !== undefined) return Promise.reject(refusal(bad.get(first) as string));
    log.push(...part);
    return Promise.resolve(part);
  };
  return { log, write, writes: () => writes };
}

describe('writeIsolatingRefused', () => {
  it('property: every good row is written once, in order; every bad one is refused once, in order, with its SQLSTATE', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 300 }).chain((n) =>
          fc.record({
            n: fc.constant(n),
            bad: fc.uniqueArray(
              fc.record({
                at: fc.nat({ max: Math.max(0, n - 1) }),
                code: fc.constantFrom('22P02', '23505', '54000', '22021'),
              }),
              { selector: (b) => b.at, maxLength: n === 0 ? 0 : Math.min(n, 12) },
            ),
          }),
        ),
        async ({ n, bad }) => {
          const badAt = new Map(bad.map((b) => [b.at, b.code]));
          const items = Array.from({ length: n }, (_, i) => i);
          const f = fakeLog(badAt);
          const refused: Array<[number, string]> = [];
          const results = await writeIsolatingRefused(items, f.write, (i, code) => {
            refused.push([i, code]);
            return Promise.resolve();
          });
          const good = items.filter((i) => !badAt.has(i));
          expect(f.log).toEqual(good);
          expect(results.flat()).toEqual(good);
          expect(refused).toEqual(items.filter((i) => badAt.has(i)).map((i) => [i, badAt.get(i)]));
          // halves, not rows one by one: each bad row costs at most two writes per level
          const levels = Math.ceil(Math.log2(Math.max(n, 1))) + 1;
          expect(f.writes()).toBeLessThanOrEqual(1 + 2 * bad.length * levels);
        },
      ),
    );
  });

  it('lets an outage escape for the caller to retry, whatever was written before it', async () => {
    let calls = 0;
    const write = (part: number[]): Promise<number[]> => {
      calls++;
      if (part.includes(3)) return Promise.reject(refusal('22P02'));
      if (calls > 2) return Promise.reject(Object.assign(new Error('gone'), { code: '57P01' })); // admin shutdown
      return Promise.resolve(part);
    };
    await expect(writeIsolatingRefused([0, 1, 2, 3, 4, 5], write, () => Promise.resolve())).rejects.toMatchObject({
      code: '57P01',
    });
  });

  it('writes a chunk no row of which is refused in one write', async () => {
    const f = fakeLog(new Map());
    expect(await writeIsolatingRefused([1, 2, 3], f.write, () => Promise.resolve())).toEqual([[1, 2, 3]]);
    expect(f.writes()).toBe(1);
  });
});
