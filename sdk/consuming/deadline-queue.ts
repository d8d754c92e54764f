/** One running attempt's deadline, watched by a `DeadlineQueue`. */
export interface Prazo {
  /** The `performance.now()` past which the attempt has timed out. */
  readonly deadline: number;
  /** Called once, when the deadline passes before the attempt was settled. */
  expire(): void;
  /** Set by the queue: settled or expired (the deadline no longer matters). */
  done?: boolean;
}

/** Settled deadlines a queue keeps behind a running one before it drops them (bounds its memory). */
const SETTLED_KEPT = 1024;

/**
 * The deadlines of the attempts run with one timeout length under one closing signal. They
 * start one after another, so they expire in about the order they were added, and one timer —
 * armed for the earliest deadline still running — serves them all: an attempt that settles in
 * time costs a push and a flag, not a `setTimeout` and a `clearTimeout` (~1.2 µs per event
 * delivered to an async handler, ~6 % of what such an event cost).
 *
 * The timer keeps the process alive only while an attempt runs (it is unref'd when none does,
 * and fires later only to find nothing due), as a timer per attempt did. Memory is bounded by
 * the running attempts: settled ones behind a long-running one are dropped in batches.
 */
export class DeadlineQueue<P extends Prazo = Prazo> {
  private items: P[] = [];
  private head = 0;
  /** Attempts added and neither settled nor expired. */
  private live = 0;
  /** Settled entries still in `items` after `head`. */
  private settledKept = 0;
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;

  /** Starts watching `prazo` until `settle(prazo)` or its deadline, whichever comes first. */
  add(prazo: P): void {
    prazo.done = false;
    this.items.push(prazo);
    this.live++;
    if (this.timer && prazo.deadline >= this.armedFor) {
      if (this.live === 1) this.timer.ref();
      return;
    }
    // no timer, or this deadline comes before the one armed (an attempt started inside another's synchronous part)
    if (this.timer) clearTimeout(this.timer);
    this.arm(prazo.deadline);
  }

  /** The attempt ended in time: its deadline no longer matters (a no-op once it expired). */
  settle(prazo: P): void {
    if (prazo.done) return;
    prazo.done = true;
    this.live--;
    this.settledKept++;
    while (this.head < this.items.length && (this.items[this.head] as P).done) {
      this.head++;
      this.settledKept--;
    }
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.settledKept > SETTLED_KEPT && this.settledKept * 2 > this.items.length - this.head) {
      this.items = this.items.slice(this.head).filter((p) => !p.done);
      this.head = 0;
      this.settledKept = 0;
    }
    if (this.live === 0) this.timer?.unref();
  }

  /** How many attempts it watches (running, not expired). */
  get running(): number {
    return this.live;
  }

  /** The attempts running now (neither settled nor expired), oldest first: what a closing bus aborts. */
  runningNow(): P[] {
    return this.items.slice(this.head).filter((p) => !p.done);
  }

  /** How many entries it holds, running or settled behind a running one (its memory). */
  get held(): number {
    return this.items.length - this.head;
  }

  private arm(deadline: number): void {
    this.armedFor = deadline;
    // rounded up: Node's timers count whole milliseconds (libuv's loop clock), so one set for the
    // remaining time could fire over a millisecond before `performance.now()` reaches the deadline
    // (seen under load); rounded up, it is early by a fraction of one at most
    this.timer = setTimeout(() => this.fire(), Math.max(1, Math.ceil(deadline - performance.now())));
    if (this.live === 0) this.timer.unref();
  }

  /** Expires every running attempt past its deadline, keeps the others, and arms for the earliest of them. */
  private fire(): void {
    // the timer's own word that the deadline it was armed for has come, as a timer per attempt's
    // firing was: fake timers (a colony's tests) may not move `performance.now()` at all
    const now = Math.max(performance.now(), this.armedFor);
    this.timer = undefined;
    this.armedFor = Infinity;
    const kept: P[] = [];
    const expired: P[] = [];
    let next = Infinity;
    for (let i = this.head; i < this.items.length; i++) {
      const p = this.items[i] as P;
      if (p.done) continue;
      if (p.deadline <= now) {
        p.done = true;
        this.live--;
        expired.push(p);
      } else {
        kept.push(p);
        if (p.deadline < next) next = p.deadline;
      }
    }
    this.items = kept;
    this.head = 0;
    this.settledKept = 0;
    if (next !== Infinity) this.arm(next);
    for (const p of expired) p.expire();
  }
}
