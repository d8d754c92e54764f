import { HandlerTimeoutError } from '../errors';
import { DeadlineQueue, type Prazo } from './deadline-queue';

/** What `run` gets: the attempt's signal, created the first time a handler reads it. */
export interface Tentativa {
  /** Aborts when the deadline passes or the bus closes (already aborted if read after either). */
  readonly signal: AbortSignal;
}

/**
 * One attempt: its signal, made on the first read, and its abort. A class, not closures: every
 * delivered event makes one, and a closure per event and per member showed in the profile.
 */
class Attempt implements Tentativa {
  private ctl: AbortController | undefined;
  private aborted = false;

  get signal(): AbortSignal {
    if (!this.ctl) {
      this.ctl = new AbortController();
      if (this.aborted) this.ctl.abort();
    }
    return this.ctl.signal;
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.ctl?.abort();
  }
}

/** A running attempt's deadline: the queue expires it, or the bus closing aborts it. */
interface PrazoDaTentativa extends Prazo {
  readonly attempt: Attempt;
}

/**
 * Per closing signal, the attempts running under it: their deadlines, one queue per timeout
 * length (one timer each). The queues are also what the bus closing aborts — one `abort` listener
 * per bus, not one per attempt (an `EventTarget` listener added and removed for every delivered
 * event cost ~1.2 µs).
 */
const deadlines = new WeakMap<AbortSignal, Map<number, DeadlineQueue<PrazoDaTentativa>>>();

function deadlinesUnder(closing: AbortSignal, timeoutMs: number): DeadlineQueue<PrazoDaTentativa> {
  let byLength = deadlines.get(closing);
  if (!byLength) {
    const queues = new Map<number, DeadlineQueue<PrazoDaTentativa>>();
    closing.addEventListener(
      'abort',
      () => [...queues.values()].flatMap((q) => q.runningNow()).forEach((p) => p.attempt.abort()),
      { once: true },
    );
    deadlines.set(closing, (byLength = queues));
  }
  let queue = byLength.get(timeoutMs);
  if (!queue) byLength.set(timeoutMs, (queue = new DeadlineQueue<PrazoDaTentativa>()));
  return queue;
}

/**
 * Runs one handler attempt under its deadline — the one protected call both buses use
 * (`EventBus`'s subscriber and `InMemoryEventBus`). `run` gets a `Tentativa` whose signal aborts
 * when `timeoutMs` passes (the attempt then rejects with `HandlerTimeoutError`) or when
 * `closing` aborts (the bus is shutting down). A synchronous throw in `run` rejects like an
 * async one. Nothing outlives the attempt: its deadline is dropped when it settles, and the timer
 * the deadlines share keeps the process alive only while an attempt runs (`DeadlineQueue`).
 *
 * `run` is called on the next microtask; `comPrazo` is the same attempt called at once.
 */
export function withHandlerTimeout<T>(
  nome: string,
  timeoutMs: number,
  closing: AbortSignal,
  run: (tentativa: Tentativa) => PromiseLike<T> | T,
): Promise<T> {
  return Promise.resolve().then(() => comPrazo(nome, timeoutMs, closing, run));
}

/**
 * One handler attempt under its deadline, called at once: what `run` returns when it is not a
 * promise (a handler that returned at once: no timer, no promise — a synchronous handler cannot
 * be interrupted anyway), else a promise of its result that rejects with `HandlerTimeoutError`
 * `timeoutMs` after `run` was called (one timer per timeout length for all the attempts running:
 * `DeadlineQueue`), or with the handler's own error. A synchronous throw in
 * `run` is thrown here. The colony subscriber delivers through this, so an event whose handler
 * returns at once costs no promise and no timer (docs/consuming.md).
 *
 * The `AbortController` is made only when the handler reads `signal` (most never do): creating
 * one costs ~3.4 µs in Node 20, more than a tenth of what a delivered event costs the SDK.
 */
export function comPrazo<T>(
  nome: string,
  timeoutMs: number,
  closing: AbortSignal,
  run: (tentativa: Tentativa) => PromiseLike<T> | T,
): Promise<T> | T {
  const attempt = new Attempt();
  if (closing.aborted) attempt.abort();
  const started = performance.now();
  const result = run(attempt);
  if (!isThenable(result)) return result;
  // still running: from here the bus closing aborts it (it could not while `run` ran synchronously)
  if (closing.aborted) attempt.abort();
  const queue = deadlinesUnder(closing, timeoutMs);
  return new Promise<T>((resolve, reject) => {
    const prazo: PrazoDaTentativa = {
      deadline: started + timeoutMs,
      attempt,
      expire: () => {
        attempt.abort();
        reject(new HandlerTimeoutError(nome, timeoutMs));
      },
    };
    queue.add(prazo);
    result.then(
      (v) => {
        queue.settle(prazo);
        resolve(v);
      },
      (err: unknown) => {
        queue.settle(prazo);
        // the handler's own rejection reason, passed on as it is (it may not be an Error)
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
        reject(err);
      },
    );
  });
}

/** A promise or anything else with a `then` method (what `await` would wait for). */
export const isThenable = (v: unknown): v is PromiseLike<unknown> =>
  (typeof v === 'object' || typeof v === 'function') &&
  v !== null &&
  typeof (v as { then?: unknown }).then === 'function';
