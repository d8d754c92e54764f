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
  since: number;
}

interface Row {
  event_id: string;
  s: string;
  timestamp: Date;
  criado_em: Date;
}

/** Waiters older than this are also looked up by event_id (rows written before the cursor). */
const LOOKUP_AFTER_MS = 500;
const LOOKUP_EVERY_MS = 250;
const TAIL_BATCH = 5_000;

/**
 * Waits for event_ids to appear in `core.event_log` (confirmed publishing). All waiters of a bus
 * share one loop that tails the log by sequence — `sequence_number > cursor`, which never skips
 * a committed row (ADR 0004) — so each poll costs the rows written since the last one, however
 * many confirmations are in flight. Call `preparar()` before producing: rows of events produced
 * afterwards are then past the cursor. A waiter not found by the tail after 500 ms (its row was
 * written before the cursor, e.g. by a concurrent re-publish) is also looked up by event_id.
 */
export class LogConfirmations {
  private readonly waiters = new Map<string, Waiter[]>();
  private cursor: bigint | undefined;
  private preparing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private lastLookup = 0;

  constructor(
    private readonly pool: pg.Pool,
    /** The log's current end (`EventLogReader.obterMaiorSequence`). */
    private readonly maiorSequence: () => Promise<bigint>,
    private readonly intervaloMs = 20,
  ) {}

  /** Fixes the tail's starting point (the log's current end) once per bus. */
  preparar(): Promise<void> {
    this.preparing ??= this.maiorSequence()
      .then((s) => void (this.cursor ??= s))
      .catch((err: unknown) => {
        this.preparing = undefined;
        throw err;
      });
    return this.preparing;
  }

  /** Resolves with the row's sequence and times, or `null` when `timeoutMs` passes first. */
  aguardar(eventId: string, timeoutMs: number): Promise<LoggedRow | null> {
    return new Promise((resolve) => {
      const list = this.waiters.get(eventId) ?? [];
      const t = Date.now();
      list.push({ resolve, deadline: t + timeoutMs, since: t });
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
    let more = false;
    try {
      if (this.waiters.size === 0) return;
      const found = new Map<string, LoggedRow>();
      try {
        await this.preparar();
        const { rows } = await this.pool.query<Row>(
          `SELECT event_id::text, sequence_number::text AS s, timestamp, criado_em FROM core.event_log
            WHERE sequence_number > $1 ORDER BY event_log.sequence_number LIMIT ${TAIL_BATCH}`,
          [String(this.cursor ?? 0n)],
        );
        for (const r of rows) if (this.waiters.has(r.event_id)) found.set(r.event_id, toLogged(r));
        if (rows.length > 0) this.cursor = BigInt((rows.at(-1) as Row).s);
        more = rows.length === TAIL_BATCH;
        const now = Date.now();
        if (now - this.lastLookup >= LOOKUP_EVERY_MS) {
          this.lastLookup = now;
          const old = [...this.waiters].filter(
            ([id, l]) => !found.has(id) && l.some((w) => now - w.since >= LOOKUP_AFTER_MS),
          );
          if (old.length > 0) {
            const byId = await this.pool.query<Row>(
              'SELECT event_id::text, sequence_number::text AS s, timestamp, criado_em FROM core.event_log WHERE event_id = ANY($1::uuid[])',
              [old.map(([id]) => id)],
            );
            for (const r of byId.rows) found.set(r.event_id, toLogged(r));
          }
        }
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
      if (this.waiters.size > 0) this.schedule(more ? 0 : this.intervaloMs);
    }
  }
}

const toLogged = (r: Row): LoggedRow => ({
  sequence_number: BigInt(r.s),
  timestamp: r.timestamp.toISOString(),
  criado_em: r.criado_em.toISOString(),
});
