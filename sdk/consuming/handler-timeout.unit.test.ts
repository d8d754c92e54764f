import fc from 'fast-check';
import { HandlerTimeoutError } from '../errors';
import { comPrazo, withHandlerTimeout, type Tentativa } from './handler-timeout';
import { ContextoDaTentativa } from './subscriber';

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

describe('comPrazo (the same attempt, called at once)', () => {
  const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

  it('gives back what a handler that returned at once returned — no promise, no timer — and throws its synchronous throw', () => {
    const closing = new AbortController().signal;
    const before = timers();
    let calledAt: 'now' | 'later' | undefined;
    const value = comPrazo('h', 1000, closing, () => {
      calledAt ??= 'now';
      return { n: 42 };
    });
    calledAt ??= 'later';
    expect(calledAt).toBe('now');
    expect(value).toEqual({ n: 42 }); // the value itself, not a promise of it
    expect(timers()).toBe(before);
    const boom = new Error('boom');
    expect(() =>
      comPrazo('h', 1000, closing, () => {
        throw boom;
      }),
    ).toThrow(boom);
    expect(timers()).toBe(before);
  });

  it("a handler that returns a promise gets its deadline counted from the call, its synchronous part included, and the bus's close", async () => {
    const closing = new AbortController();
    const started = performance.now();
    let seen: Tentativa | undefined;
    const slow = comPrazo('lento', 500, closing.signal, (t) => {
      seen = t;
      while (performance.now() - started < 300); // 300 ms of synchronous work before its first await
      return never;
    });
    const returnedAt = performance.now();
    expect(slow).toBeInstanceOf(Promise);
    await expect(slow).rejects.toBeInstanceOf(HandlerTimeoutError);
    const now = performance.now();
    expect(now - started).toBeGreaterThanOrEqual(499); // never before the deadline
    expect(now - returnedAt).toBeLessThan(450); // ~200 ms after the return, not 500: the synchronous part counted
    expect(seen?.signal.aborted).toBe(true);
    // still running when the bus closes: aborted, even if the handler closed the bus itself before returning
    let closed: Tentativa | undefined;
    const closesBus = comPrazo('fecha', HANG_MS, closing.signal, (t) => {
      closed = t;
      return never;
    });
    void Promise.resolve(closesBus).catch(() => undefined);
    const own = new AbortController();
    let self: Tentativa | undefined;
    void Promise.resolve(
      comPrazo('proprio', HANG_MS, own.signal, (t) => {
        self = t;
        own.abort(); // the handler ends the bus synchronously (encerrar from inside a handler)
        return never;
      }),
    ).catch(() => undefined);
    expect(closed?.signal.aborted).toBe(false);
    closing.abort();
    expect(closed?.signal.aborted).toBe(true);
    expect(self?.signal.aborted).toBe(true);
  });
});

describe('ContextoDaTentativa (what a handler gets beside the event)', () => {
  it("makes the attempt's signal only when read, and shows a handler only the contract's fields", () => {
    let reads = 0;
    const controller = new AbortController();
    const tentativa: Tentativa = {
      get signal() {
        reads++;
        return controller.signal;
      },
    };
    const reprocessamento = { pedido: 'p-1', redigido: true };
    const contexto = new ContextoDaTentativa(2, tentativa, undefined, reprocessamento);
    expect(reads).toBe(0); // a handler that never reads it costs no AbortController
    expect(contexto).toMatchObject({ tentativa: 2, transacao: undefined, reprocessamento });
    expect(Object.keys(contexto).sort()).toEqual(['reprocessamento', 'tentativa', 'transacao']);
    expect(JSON.parse(JSON.stringify(contexto))).toEqual({ tentativa: 2, reprocessamento });
    expect(contexto.signal).toBe(controller.signal);
    expect(reads).toBe(1);
  });

  it('aborts with the attempt it belongs to: a deadline passed before the first read gives a signal born aborted', async () => {
    const closing = new AbortController().signal;
    let contexto: ContextoDaTentativa | undefined;
    const attempt = withHandlerTimeout('ctx', 10, closing, (t) => {
      contexto = new ContextoDaTentativa(1, t);
      return never;
    });
    await expect(attempt).rejects.toBeInstanceOf(HandlerTimeoutError);
    expect(contexto?.signal.aborted).toBe(true);
  });
});
