import fc from 'fast-check';
import { HandlerTimeoutError } from '../errors';
import { withHandlerTimeout, type Tentativa } from './handler-timeout';

const never = new Promise<never>(() => undefined);
const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** The deadline of attempts that never end: long past every check, short enough that no timer outlives the file. */
const HANG_MS = 300;

afterAll(() => tick(HANG_MS + 50));

describe('withHandlerTimeout', () => {
  it("resolves with the handler's value; a synchronous throw and a rejection both reject with the handler's error", async () => {
    const closing = new AbortController().signal;
    await expect(withHandlerTimeout('h', 1000, closing, () => 42)).resolves.toBe(42);
    await expect(withHandlerTimeout('h', 1000, closing, () => Promise.resolve('x'))).resolves.toBe('x');
    const boom = new Error('boom');
    await expect(
      withHandlerTimeout('h', 1000, closing, () => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    await expect(withHandlerTimeout('h', 1000, closing, () => Promise.reject(boom))).rejects.toBe(boom);
  });

  it('rejects with HandlerTimeoutError at the deadline and aborts the signal, whether read before or only after it', async () => {
    const closing = new AbortController().signal;
    let early: AbortSignal | undefined;
    let late: Tentativa | undefined;
    const a = withHandlerTimeout('cedo', 20, closing, (t) => {
      early = t.signal;
      expect(early.aborted).toBe(false);
      return never;
    });
    const b = withHandlerTimeout('tarde', 20, closing, (t) => {
      late = t;
      return never;
    });
    await expect(a).rejects.toBeInstanceOf(HandlerTimeoutError);
    await expect(b).rejects.toThrow(/tarde/);
    expect(early?.aborted).toBe(true);
    expect(late?.signal.aborted).toBe(true); // created after the deadline: born aborted
  });

  it('aborts the running attempts when the bus closes — read before or after — and leaves finished ones alone', async () => {
    const bus = new AbortController();
    let finished: Tentativa | undefined;
    await withHandlerTimeout('feito', 1000, bus.signal, (t) => void (finished = t));
    let before: AbortSignal | undefined;
    let after: Tentativa | undefined;
    void withHandlerTimeout('antes', HANG_MS, bus.signal, (t) => {
      before = t.signal;
      return never;
    }).catch(() => undefined);
    void withHandlerTimeout('depois', HANG_MS, bus.signal, (t) => {
      after = t;
      return never;
    }).catch(() => undefined);
    await tick();
    expect(before?.aborted).toBe(false);
    bus.abort();
    expect(before?.aborted).toBe(true);
    expect(after?.signal.aborted).toBe(true);
    expect(finished?.signal.aborted).toBe(false);
  });

  it('an attempt started after the bus closed gets an aborted signal', async () => {
    const bus = new AbortController();
    bus.abort();
    let seen: boolean | undefined;
    await withHandlerTimeout('h', 1000, bus.signal, (t) => void (seen = t.signal.aborted));
    expect(seen).toBe(true);
  });

  // Any mix of attempts on one bus: each ends as its handler says (value, error or timeout);
  // closing the bus aborts exactly those still running, and the signal read at any time tells
  // the truth about it. The shared listener must neither miss a running attempt nor keep a
  // finished one.
  it('property: a signal is aborted exactly when its attempt timed out or was running when the bus closed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom('ok', 'throw', 'hang', 'timeout'), { minLength: 1, maxLength: 8 }),
        fc.boolean(),
        async (kinds, closeAtEnd) => {
          const bus = new AbortController();
          const tentativas: Tentativa[] = [];
          const results = kinds.map((k, i) =>
            withHandlerTimeout(`h${i}`, k === 'timeout' ? 5 : HANG_MS, bus.signal, (t) => {
              tentativas[i] = t;
              if (k === 'ok') return i;
              if (k === 'throw') throw new Error(`e${i}`);
              return never;
            }).then(
              (v) => ({ v }),
              (e: unknown) => ({ e }),
            ),
          );
          await tick(15);
          if (closeAtEnd) bus.abort();
          kinds.forEach((k, i) => {
            const t = tentativas[i] as Tentativa;
            const expected = k === 'timeout' || (k === 'hang' && closeAtEnd);
            expect(t.signal.aborted).toBe(expected);
          });
          const settled = await Promise.race([Promise.all(results.filter((_, i) => kinds[i] !== 'hang')), tick(100)]);
          expect(settled).toBeDefined();
          bus.abort();
        },
      ),
      { numRuns: 30 },
    );
  });
});
