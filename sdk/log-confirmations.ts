import type pg from 'pg';

/** What the log assigned: the sequence, the stored timestamp (2-digit precision), the write time. */
export interface LoggedRow {
  sequence_number: bigint;
  timestamp: string;
  criado_em: string;
}

interface Waiter {
  resolve(row: LoggedRow | null): void;
  deadline: number;
}

/**
 * Waits for event_ids to appear in `core.event_log` (confirmed publishing). All waiters of a
 * bus share one polling loop: one `event_id = ANY(...)` query every `intervaloMs` while anyone
 * waits, so 64 confirmations in flight cost one query per interval, not 64.
 */
export class LogConfirmations {
  private readonly waiters = new Map<string, Waiter[]>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly intervaloMs = 20,
  ) {}

  /** Resolves with the row's sequence and write time, or `null` when `timeoutMs` passes first. */
  aguardar(eventId: string, timeoutMs: number): Promise<LoggedRow | null> {
    return new Promise((resolve) => {
      const list = this.waiters.get(eventId) ?? [];
      list.push({ resolve, deadline: Date.now() + timeoutMs });
      this.waiters.set(eventId, list);
      this.schedule(0);
    });
  }

  /** Resolves every waiter with `null` (the bus is closing). */
  encerrar(): void {
    clearTimeout(this.timer);
    for (const list of this.waiters.values()) list.forEach((w) => w.resolve(null));
    this.waiters.clear();
  }

  private schedule(ms: number): void {
    if (this.timer || this.polling) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll();
    }, ms);
  }

  private async poll(): Promise<void> {
    this.polling = true;
    try {
      const ids = [...this.waiters.keys()];
      if (ids.length === 0) return;
      const found = new Map<string, LoggedRow>();
      try {
        const { rows } = await this.pool.query<{ event_id: string; s: string; timestamp: Date; criado_em: Date }>(
          'SELECT event_id::text, sequence_number::text AS s, timestamp, criado_em FROM core.event_log WHERE event_id = ANY($1::uuid[])',
          [ids],
        );
        for (const r of rows)
          found.set(r.event_id, {
            sequence_number: BigInt(r.s),
            timestamp: r.timestamp.toISOString(),
            criado_em: r.criado_em.toISOString(),
          });
      } catch {
        // the database is briefly unreachable: keep waiting until the deadlines
      }
      const now = Date.now();
      for (const [id, list] of this.waiters) {
        const row = found.get(id);
        const keep = list.filter((w) => {
          if (row) w.resolve(row);
          else if (now >= w.deadline) w.resolve(null);
          else return true;
          return false;
        });
        if (keep.length > 0) this.waiters.set(id, keep);
        else this.waiters.delete(id);
      }
    } finally {
      this.polling = false;
      if (this.waiters.size > 0) this.schedule(this.intervaloMs);
    }
  }
}
