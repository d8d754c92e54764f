/**
 * Per-key token bucket: `perMinute` requests a minute with bursts up to `perMinute`. In memory,
 * per process (each audit API instance limits on its own); idle buckets are forgotten.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly perMs: number;
  private lastSweep = 0;

  constructor(
    readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {
    this.perMs = perMinute / 60_000;
  }

  /** Takes one token for `key`: `ok` false with `retryAfterMs` when the bucket is empty. */
  take(key: string): { ok: boolean; remaining: number; retryAfterMs: number } {
    const t = this.now();
    this.sweep(t);
    const b = this.buckets.get(key) ?? { tokens: this.perMinute, at: t };
    b.tokens = Math.min(this.perMinute, b.tokens + (t - b.at) * this.perMs);
    b.at = t;
    this.buckets.set(key, b);
    if (b.tokens < 1) return { ok: false, remaining: 0, retryAfterMs: Math.ceil((1 - b.tokens) / this.perMs) };
    b.tokens -= 1;
    return { ok: true, remaining: Math.floor(b.tokens), retryAfterMs: 0 };
  }

  private sweep(t: number): void {
    if (t - this.lastSweep < 60_000) return;
    this.lastSweep = t;
    for (const [k, b] of this.buckets) if (b.tokens + (t - b.at) * this.perMs >= this.perMinute) this.buckets.delete(k);
  }
}
