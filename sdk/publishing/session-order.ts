import { randomUUID } from 'node:crypto';
import { setNewest } from '../runtime/bounded-map';

/** Failed publishes whose counters a session remembers for a retry of the same event. */
const FAILED_COUNTERS_KEPT = 100_000;

/**
 * One producer session's publish order, as `feromonios_ordem` carries it
 * (`<session>:<counter>:<settled>`, docs/wire-format.md; what the bridge does with it:
 * docs/ordering.md).
 *
 * - **Counters.** Each event planned takes the next counter — unless its publish failed before:
 *   publishing the same `event_id` again (the outbox relay's next pass, a caller retrying) takes
 *   the counter of the failed attempt (the most recent 100,000 failures are remembered). A send
 *   that failed may have been written for some partitions and not others; with the same
 *   counters, the copies it wrote and the ones sent again are ordered as one batch.
 * - **The settled mark.** The lowest counter still open — sent and not acknowledged, or failed
 *   less than `failedHoldMs` ago with a retriable error (a retry may still come) — or the next
 *   counter when none is.
 *   Every counter below it is settled: in Kafka, or never coming. A record carries the mark of
 *   the moment it was planned, so the bridge's sequencer skips a gap below the mark at once and
 *   waits (up to `BRIDGE_ORDER_GAP_MS`) only for counters that were still open.
 *
 * Pure bookkeeping; `now` is injectable for tests.
 */
export class SessionOrder {
  /** This session's id in `feromonios_ordem`. */
  readonly session = randomUUID();
  private planned = 0;
  /** Open counters: `Infinity` while sent, else when their failure stops holding the mark back. */
  private readonly open = new Map<number, number>();
  /** Counters of failed publishes, by event_id, for a retry of the same event. */
  private readonly failedCounters = new Map<string, number>();
  /** The lowest open counter, or `undefined` when it must be found again. */
  private low: number | undefined;

  constructor(
    private readonly failedHoldMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The event's counter, now open: the one of its failed publish if it had one, else the next. */
  take(eventId: string): number {
    const failed = this.failedCounters.get(eventId);
    let counter: number;
    if (failed === undefined) counter = ++this.planned;
    else {
      this.failedCounters.delete(eventId);
      counter = failed;
    }
    this.open.set(counter, Infinity);
    if (this.low !== undefined && counter < this.low) this.low = counter;
    return counter;
  }

  /** `feromonios_ordem` for a counter taken and not settled yet. */
  header(counter: number): string {
    return `${this.session}:${counter}:${this.settledMark()}`;
  }

  /** Every counter below the returned one is settled (acknowledged, or failed and not held). */
  settledMark(): number {
    const now = this.now();
    if (this.low !== undefined) {
      const until = this.open.get(this.low);
      if (until === undefined || until <= now) {
        this.open.delete(this.low);
        this.low = undefined;
      }
    }
    if (this.low === undefined) {
      let min = this.planned + 1;
      for (const [counter, until] of this.open) {
        if (until <= now) this.open.delete(counter);
        else if (counter < min) min = counter;
      }
      this.low = min;
    }
    return this.low;
  }

  /** Kafka acknowledged these counters' records. */
  acknowledged(counters: readonly number[]): void {
    for (const c of counters) {
      this.open.delete(c);
      if (c === this.low) this.low = undefined;
    }
  }

  /**
   * These events' publish failed: their counters are kept for a retry of the same event_id (which
   * opens them again). A retriable failure holds the mark back for `failedHoldMs` — a retry may
   * come, and what the failed send did write waits for it; a refusal for good (`retriable`
   * false: a record too large, say) settles them at once, as a retry would be refused too.
   */
  failed(events: ReadonlyArray<{ eventId: string; counter: number }>, retriable: boolean): void {
    const until = this.now() + this.failedHoldMs;
    for (const { eventId, counter } of events) {
      setNewest(this.failedCounters, eventId, counter, FAILED_COUNTERS_KEPT);
      if (retriable) this.open.set(counter, until);
      else {
        this.open.delete(counter);
        if (counter === this.low) this.low = undefined;
      }
    }
  }
}
