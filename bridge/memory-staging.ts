/**
 * The sequencer leader's staging in memory (ADR 0029), on by default (`BRIDGE_MEMORY_STAGING_ROWS`,
 * 250,000; 0 turns it off).
 *
 * With it on, the bridge instance that holds its namespace's sequencer lock keeps the events it stages for
 * its own partitions here instead of writing them to `core.event_staging`; the sequencer orders
 * them with the table's rows and writes them to `core.event_log` by one `COPY` per chunk. Their
 * Kafka offsets are committed only after that write, at the lowest offset still held here (or
 * after the last record staged, when none is), so an event here is one Kafka still redelivers:
 * a crash loses nothing, and `core.event_ids` drops what was logged already.
 *
 * Everything here is kept per *epoch*: leadership taken or lost, or a rejoin of the events
 * lane's group (kafkajs then resumes every partition at its committed offset), starts a new
 * epoch with nothing held, and a batch or a round that began in an earlier one gives its work up
 * instead of adding to it or committing for it.
 *
 * A partition's state also counts what the bridge staged into the table meanwhile (a chunk that
 * did not fit here): its commit then stops at the lowest offset still held here, never past it.
 */

import { compareStaged, type StagedRef } from './causal-order';
import type { HeldLine } from './log-lines';
import { frontierMetadata } from './staging-frontier';

/** `BRIDGE_MEMORY_STAGING_ROWS`'s default: a 200,000-event backlog fits (BENCHMARKS.md, ADR 0029). */
export const DEFAULT_MEMORY_STAGING_ROWS = 250_000;

/** An event held in memory: what the sequencer orders by, the log's `COPY` line it writes, its size. */
export interface MemoryRow {
  readonly ref: StagedRef;
  readonly held: HeldLine;
  /** Its record's size in bytes (what the memory bound counts). */
  readonly bytes: number;
  /** The partition's frontier before it (ADR 0027): committed with an offset that stops at this row. */
  readonly frontierBefore: number | undefined;
  /** Written to the log, found there already, or quarantined: no longer holds its offset back. */
  settled: boolean;
}

/** An offset to commit for the events lane, with ADR 0027's frontier as its metadata. */
export interface CommitPoint {
  topic: string;
  partition: number;
  offset: string;
  metadata: string | null;
}

interface PartitionState {
  topic: string;
  partition: number;
  /** Held rows in offset order; those before `head` are settled. */
  rows: MemoryRow[];
  head: number;
  /** The offset after the last record staged (here or in the table) in this epoch. */
  stagedUpTo: bigint;
  /** The publish time of the last record staged in this epoch, if any. */
  frontier: number | undefined;
  /** The last offset committed for it in this epoch (`-1`: none). */
  committed: bigint;
}

export interface MemoryLimits {
  /** Most events held (0: staging in memory off). */
  maxRows: number;
  /** Most bytes of records held. */
  maxBytes: number;
}

const key = (topic: string, partition: number) => `${topic}\u0000${partition}`;

export class MemoryStaging {
  private epochNo = 0;
  private isOpen = false;
  private readonly byId = new Map<string, MemoryRow>();
  private readonly parts = new Map<string, PartitionState>();
  private heldBytes = 0;

  constructor(private readonly limits: MemoryLimits) {}

  /** The current epoch: a batch or round compares it with the one it started in. */
  get epoch(): number {
    return this.epochNo;
  }

  /** Events held (not yet settled). */
  get size(): number {
    return this.byId.size;
  }

  /** Bytes of the records held. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Whether staging in memory is on (this instance leads) for a batch of `epoch`. */
  accepting(epoch: number): boolean {
    return this.isOpen && epoch === this.epochNo && this.limits.maxRows > 0;
  }

  /** Whether `rows` more events of `bytes` fit. */
  hasRoom(rows: number, bytes: number): boolean {
    return this.byId.size + rows <= this.limits.maxRows && this.heldBytes + bytes <= this.limits.maxBytes;
  }

  /** Leadership taken: a new epoch that stages here. */
  open(): void {
    this.newEpoch();
    this.isOpen = true;
  }

  /**
   * Leadership lost: a new epoch that stages nothing here. Returns whether anything staged in
   * the ending epoch was not committed (held events, or the table's chunks committed only up to
   * them): the events lane must then start again from its committed offsets, or those events
   * would reach nobody.
   */
  close(): boolean {
    const uncommitted = [...this.parts.values()].some((p) => p.stagedUpTo > p.committed);
    this.newEpoch();
    this.isOpen = false;
    return uncommitted;
  }

  /** The events lane's group rejoined (every partition resumes at its committed offset): nothing held any more. */
  reset(): void {
    this.newEpoch();
  }

  private newEpoch(): void {
    this.epochNo++;
    this.byId.clear();
    this.parts.clear();
    this.heldBytes = 0;
  }

  /**
   * Holds a staged chunk of one partition (its records in offset order, `upTo` the offset after
   * its last record, `frontier` the publish time of its last staged record). An event held
   * already is a duplicate — of a copy sent again by the same producer session, its higher
   * settled mark is kept, as staging's table does. `previous` is the partition's frontier before
   * the chunk, as the bridge last knew it (the first chunk of an epoch commits with it). Returns
   * the ids held and the duplicates, or `undefined` when `epoch` ended (the chunk is redelivered).
   */
  add(
    epoch: number,
    topic: string,
    partition: number,
    rows: ReadonlyArray<{ ref: StagedRef; held: HeldLine; bytes: number }>,
    upTo: bigint,
    frontier: number | undefined,
    previous?: number,
  ): { held: string[]; duplicates: string[] } | undefined {
    if (!this.accepting(epoch)) return undefined;
    const p = this.state(topic, partition);
    // a partition's first chunk of the epoch: what lies below it is committed or staged in the
    // table already, so its first commit worth making is past its first event
    const first = rows[0];
    if (p.stagedUpTo < 0n && first) p.committed = BigInt(first.ref.kafka_offset);
    const held: string[] = [];
    const duplicates: string[] = [];
    let before = p.frontier ?? previous;
    for (const r of rows) {
      const kept = this.byId.get(r.ref.event_id);
      if (kept) {
        duplicates.push(r.ref.event_id);
        // (the log's line has no settled mark: the ref is what the sequencer orders by)
        if (kept.ref.ordem_sessao === r.ref.ordem_sessao && (r.ref.ordem_firme ?? 0) > (kept.ref.ordem_firme ?? 0))
          kept.ref.ordem_firme = r.ref.ordem_firme ?? null;
      } else {
        // a literal rather than a spread of `r` (a held backlog is 100,000s of these): one shape, no copy loop
        const m: MemoryRow = { ref: r.ref, held: r.held, bytes: r.bytes, frontierBefore: before, settled: false };
        this.byId.set(r.ref.event_id, m);
        this.heldBytes += r.bytes;
        p.rows.push(m);
        held.push(r.ref.event_id);
      }
      before = r.ref.publicado_em;
    }
    if (upTo > p.stagedUpTo) p.stagedUpTo = upTo;
    if (frontier !== undefined) p.frontier = frontier;
    return { held, duplicates };
  }

  /**
   * A chunk of a partition staged into the table (or a stretch with nothing to stage) up to
   * `upTo`: where its commit may go — the lowest offset still held here, if any, else `upTo` —
   * or `undefined` when that is not past what was committed. Outside staging in memory (not
   * leading, or `epoch` ended) it is `upTo` itself, as ADR 0009 commits.
   */
  passed(epoch: number, topic: string, partition: number, upTo: bigint, frontier: number | undefined): CommitPoint {
    if (!this.isOpen || epoch !== this.epochNo) return point(topic, partition, upTo, frontier);
    const p = this.state(topic, partition);
    if (upTo > p.stagedUpTo) p.stagedUpTo = upTo;
    if (frontier !== undefined) p.frontier = frontier;
    const c = this.commitPoint(p);
    if (c.offset > p.committed) p.committed = c.offset;
    return point(topic, partition, c.offset, c.frontier);
  }

  /** How far a partition is staged in this epoch (here or in the table), and its frontier; `undefined` if not at all. */
  staged(topic: string, partition: number): { upTo: bigint; frontier: number | undefined } | undefined {
    const p = this.parts.get(key(topic, partition));
    return p && p.stagedUpTo >= 0n ? { upTo: p.stagedUpTo, frontier: p.frontier } : undefined;
  }

  /**
   * The held events below `high` of their partition (every partition's high watermark of a
   * round's snapshot; a partition it does not know is taken whole) and, with a cut, published
   * before it; those in `except` left out.
   */
  below(high: ReadonlyMap<string, bigint>, cut: number | undefined, except?: ReadonlySet<string>): MemoryRow[] {
    const out: MemoryRow[] = [];
    for (const p of this.parts.values()) {
      const hw = high.get(key(p.topic, p.partition));
      for (let i = p.head; i < p.rows.length; i++) {
        const m = p.rows[i] as MemoryRow;
        if (m.settled) continue;
        if (hw !== undefined && BigInt(m.ref.kafka_offset) >= hw) break;
        if ((cut === undefined || m.ref.publicado_em < cut) && !except?.has(m.ref.event_id)) out.push(m);
      }
    }
    return out;
  }

  /** How many held events were published before `cut` (counting stops at `limit`), those in `except` left out. */
  countBefore(cut: number, limit: number, except?: ReadonlySet<string>): number {
    let n = 0;
    for (const m of this.byId.values())
      if (m.ref.publicado_em < cut && !except?.has(m.ref.event_id) && ++n >= limit) break;
    return n;
  }

  /**
   * Events of `epoch` written to the log, found there, or quarantined: they hold their offsets
   * back no more. Returns the commit points that moved (none when `epoch` ended).
   */
  settle(epoch: number, rows: readonly MemoryRow[]): CommitPoint[] {
    if (epoch !== this.epochNo) return [];
    const touched = new Set<PartitionState>();
    for (const m of rows) {
      if (m.settled || this.byId.get(m.ref.event_id) !== m) continue;
      m.settled = true;
      this.byId.delete(m.ref.event_id);
      this.heldBytes -= m.bytes;
      const p = this.parts.get(key(m.ref.kafka_topic, m.ref.kafka_partition));
      if (p) touched.add(p);
    }
    const out: CommitPoint[] = [];
    for (const p of touched) {
      while (p.head < p.rows.length && (p.rows[p.head] as MemoryRow).settled) p.head++;
      if (p.head > 1024 && p.head * 2 > p.rows.length) {
        p.rows.splice(0, p.head);
        p.head = 0;
      }
      const c = this.commitPoint(p);
      if (c.offset > p.committed) {
        p.committed = c.offset;
        out.push(point(p.topic, p.partition, c.offset, c.frontier));
      }
    }
    return out;
  }

  /** Whether a held event is this exact row (not settled, not of an ended epoch). */
  holds(m: MemoryRow): boolean {
    return this.byId.get(m.ref.event_id) === m;
  }

  private commitPoint(p: PartitionState): { offset: bigint; frontier: number | undefined } {
    const first = p.rows[p.head];
    return first
      ? { offset: BigInt(first.ref.kafka_offset), frontier: first.frontierBefore }
      : { offset: p.stagedUpTo, frontier: p.frontier };
  }

  private state(topic: string, partition: number): PartitionState {
    const k = key(topic, partition);
    let p = this.parts.get(k);
    if (!p) {
      p = { topic, partition, rows: [], head: 0, stagedUpTo: -1n, frontier: undefined, committed: -1n };
      this.parts.set(k, p);
    }
    return p;
  }
}

/**
 * Adds a round's held events (`held`, from `below`) to the events it read from the table
 * (`table`, earliest first, at most `roundLimit`), in place: all of them when the table's fit,
 * else those before the table's last, so a round never writes a later event before an earlier
 * one it left for the next. A held event the table has too (a redelivery staged while this
 * instance did not lead) is not added but returned in `twice`: the table's copy is written, and
 * the caller settles the held one as a duplicate. Returns the held events added, by their refs.
 * Any number of them: a backlog's worth is added one by one (a spread into `push` overflows the
 * stack at ~120,000 arguments, which failed every round of a deep backlog).
 */
export function mergeHeld(
  table: StagedRef[],
  held: readonly MemoryRow[],
  roundLimit: number,
): { fromMemory: Map<StagedRef, MemoryRow>; twice: MemoryRow[] } {
  const inTable = new Set(table.map((r) => r.event_id));
  const last = table.length >= roundLimit ? table.at(-1) : undefined;
  const fromMemory = new Map<StagedRef, MemoryRow>();
  const twice: MemoryRow[] = [];
  for (const m of held) {
    if (inTable.has(m.ref.event_id)) twice.push(m);
    else if (!last || compareStaged(m.ref, last) < 0) fromMemory.set(m.ref, m);
  }
  for (const r of fromMemory.keys()) table.push(r);
  return { fromMemory, twice };
}

function point(topic: string, partition: number, offset: bigint, frontier: number | undefined): CommitPoint {
  return {
    topic,
    partition,
    offset: offset.toString(),
    metadata: frontier === undefined ? null : frontierMetadata(frontier),
  };
}
