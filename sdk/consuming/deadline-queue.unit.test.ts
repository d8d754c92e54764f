import fc from 'fast-check';
import { DeadlineQueue, type Prazo } from './deadline-queue';

const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));
const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

/** An attempt's deadline, recording when (and how often) it expired. */
const prazo = (inMs: number) => {
  const p: Prazo & { expiredAt: number[] } = {
    deadline: performance.now() + inMs,
    expiredAt: [],
    expire: () => void p.expiredAt.push(performance.now()),
  };
  return p;
};

describe('DeadlineQueue', () => {
  it('property: an attempt expires exactly once, not before its deadline, and never after it settled', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            startMs: fc.integer({ min: 0, max: 20 }),
            timeoutMs: fc.integer({ min: 5, max: 40 }),
            settleMs: fc.option(fc.integer({ min: 0, max: 60 })), // null: never settles
          }),
          { minLength: 1, maxLength: 8 },
        ),
        async (attempts) => {
          const queue = new DeadlineQueue();
          const settledAt = new Map<number, number>();
          const all: Array<ReturnType<typeof prazo>> = [];
          await Promise.all(
            attempts.map(async (a, i) => {
              await tick(a.startMs);
              const p = prazo(a.timeoutMs);
              all[i] = p;
              queue.add(p);
              if (a.settleMs === null) return;
              await tick(a.settleMs);
              if (p.expiredAt.length === 0) settledAt.set(i, performance.now());
              queue.settle(p);
            }),
          );
          await tick(60);
          // settled in time: never expired; otherwise expired once, at or after its deadline
          expect(all.map((p, i) => (settledAt.has(i) ? p.expiredAt.length : p.expiredAt.length - 1))).toEqual(
            all.map(() => 0),
          );
          // never before it, but for Node's timer clock (a loop's cached millisecond: at most ~2 ms early)
          expect(all.filter((p, i) => !settledAt.has(i) && (p.expiredAt[0] as number) < p.deadline - 2)).toEqual([]);
          expect(queue.running).toBe(0);
          expect(queue.held).toBe(0);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('keeps the process alive only while an attempt runs, and re-arms for a deadline earlier than the one armed', async () => {
    const queue = new DeadlineQueue();
    const before = timers();
    const long = prazo(10_000);
    queue.add(long);
    expect(timers()).toBe(before + 1); // a running attempt: its deadline holds the process, as a timer of its own did
    queue.settle(long);
    expect(timers()).toBe(before); // none running: the timer still armed for 10 s no longer holds it
    const again = prazo(10_000);
    queue.add(again);
    expect(timers()).toBe(before + 1);
    const sooner = prazo(20); // started inside another's synchronous part, with a shorter timeout
    queue.add(sooner);
    await tick(60);
    expect(sooner.expiredAt).toHaveLength(1);
    expect(again.expiredAt).toEqual([]);
    const running = timers(); // counted again: other timers of this process may have ended meanwhile
    queue.settle(again);
    expect(timers()).toBe(running - 1);
  });

  it('holds no more than its running attempts and a bounded batch of settled ones behind a long one', () => {
    const queue = new DeadlineQueue();
    const hanging = prazo(10_000);
    queue.add(hanging);
    for (let i = 0; i < 100_000; i++) {
      const p = prazo(10_000);
      queue.add(p);
      queue.settle(p);
    }
    expect(queue.running).toBe(1);
    expect(queue.held).toBeLessThanOrEqual(2 * 1024 + 2);
    queue.settle(hanging);
    expect(queue.held).toBe(0);
  });

  it("expires on the timer's word under fake timers that leave performance.now() alone (a colony's tests)", () => {
    jest.useFakeTimers({ doNotFake: ['performance'] });
    try {
      const queue = new DeadlineQueue();
      const hanging = prazo(30_000);
      queue.add(hanging);
      jest.advanceTimersByTime(29_000);
      expect(hanging.expiredAt).toEqual([]);
      jest.advanceTimersByTime(1_000);
      expect(hanging.expiredAt).toHaveLength(1);
      expect(queue.running).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
