import fc from 'fast-check';
import { backoffAfter, backoffDelay, sleep } from './retry';

describe('backoffDelay', () => {
  it('doubles from initialMs, never above maxMs, never below (1 − jitter) of the capped delay', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -5, max: 100 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 60_000 }),
        fc.double({ min: -1, max: 2, noNaN: true }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (attempt, initialMs, maxMs, jitter, r) => {
          const d = backoffDelay(attempt, { initialMs, maxMs, jitter }, () => r);
          const capped = Math.min(maxMs, initialMs * 2 ** (Math.max(1, attempt) - 1));
          const j = Math.min(1, Math.max(0, jitter));
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThanOrEqual(maxMs);
          expect(d).toBeGreaterThanOrEqual(Math.floor(capped * (1 - j)));
          expect(Number.isInteger(d)).toBe(true);
        },
      ),
    );
  });

  it('is exact without jitter and spread with it', () => {
    expect([1, 2, 3, 4].map((a) => backoffDelay(a, { initialMs: 100, maxMs: 500, jitter: 0 }))).toEqual([
      100, 200, 400, 500,
    ]);
    const spread = new Set(Array.from({ length: 50 }, () => backoffDelay(5, { initialMs: 100, maxMs: 10_000 })));
    expect(spread.size).toBeGreaterThan(10); // processes that failed together do not retry in step
    for (const d of spread) expect(d).toBeGreaterThanOrEqual(800); // default jitter 0.5 of 1600
  });

  it('treats a non-finite attempt as the first', () => {
    expect(backoffDelay(Number.NaN, { initialMs: 100, maxMs: 500, jitter: 0 })).toBe(100);
    expect(backoffDelay(Number.POSITIVE_INFINITY, { initialMs: 100, maxMs: 500, jitter: 0 })).toBe(100);
  });
});

describe("backoffAfter (the backoff counted from the failed attempt's start)", () => {
  const b = { initialMs: 100, maxMs: 5_000 };
  it("waits the backoff less the attempt's own duration, never below the floor nor above the plain backoff", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: -1_000, max: 20_000 }),
        fc.integer({ min: 0, max: 2_000 }),
        fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        (attempt, elapsed, floor, r) => {
          const plain = backoffDelay(attempt, b, () => r);
          const wait = backoffAfter(attempt, b, elapsed, floor, () => r);
          expect(wait).toBeGreaterThanOrEqual(floor);
          expect(wait).toBeLessThanOrEqual(Math.max(floor, plain));
          expect(wait).toBe(Math.max(floor, plain - Math.max(0, elapsed)));
        },
      ),
    );
  });

  it('an attempt that lasted longer than the longest backoff goes again after the floor only', () => {
    // a relay pass the broker refused until publishTimeoutMs (8 s) after ten failures in a row
    expect(backoffAfter(11, b, 8_000, 100)).toBe(100);
    // a pass that failed at once (the database down) waits the backoff
    expect(backoffAfter(3, b, 0, 100, () => 0)).toBe(400);
  });
});

describe('sleep', () => {
  it('resolves early when its signal aborts, and at once when it already has', async () => {
    const ac = new AbortController();
    const t0 = Date.now();
    const p = sleep(60_000, ac.signal);
    ac.abort();
    await p;
    await sleep(60_000, ac.signal);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });
});
