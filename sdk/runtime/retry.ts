/** Exponential backoff: `initialMs` doubling per attempt, at most `maxMs`. */
export interface Backoff {
  initialMs: number;
  maxMs: number;
  /**
   * Fraction of each delay drawn at random (0 = none, 1 = anywhere from 0 to the full delay).
   * Default 0.5: processes that failed together (a broker restart) do not retry in step.
   */
  jitter?: number;
}

/**
 * The delay before retry number `attempt` (1 = the first retry): `initialMs · 2^(attempt−1)`,
 * capped at `maxMs`, then reduced by up to `jitter` of itself at random. Never negative, never
 * above `maxMs`. The project's one backoff formula (publisher, subscriber, bridge, outbox relay,
 * registry client).
 */
export function backoffDelay(attempt: number, b: Backoff, random: () => number = Math.random): number {
  const n = Math.max(1, Math.floor(Number.isFinite(attempt) ? attempt : 1));
  const capped = Math.min(b.maxMs, b.initialMs * 2 ** Math.min(n - 1, 30));
  const jitter = Math.min(1, Math.max(0, b.jitter ?? 0.5));
  return Math.max(0, Math.round(capped * (1 - jitter * random())));
}

/**
 * The wait before retry `attempt` when the failed attempt itself took `elapsedMs`: the backoff
 * counted from the attempt's start — an attempt that spent its own deadline retrying (a publish
 * refused until `publishTimeoutMs`) has waited already — and never below `floorMs`.
 */
export function backoffAfter(
  attempt: number,
  b: Backoff,
  elapsedMs: number,
  floorMs = 0,
  random: () => number = Math.random,
): number {
  return Math.max(floorMs, backoffDelay(attempt, b, random) - Math.max(0, elapsedMs));
}

/** Resolves after `ms`, or as soon as `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
