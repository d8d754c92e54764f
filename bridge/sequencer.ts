import type { Admin } from 'kafkajs';
import type pg from 'pg';
import type { Logger } from '../sdk';
import { backoffDelay, setNewest, sleep } from '../sdk/service';
import { orderRound, type RoundOrder, type StagedRef } from './causal-order';
import {
  prepareLogChunk,
  STAGING_CHANNEL,
  writeEventLog,
  type LogRun,
  type PreparedChunk,
  type WriteResult,
} from './event-log-writer';
import { mergeHeld, type CommitPoint, type MemoryRow, type MemoryStaging } from './memory-staging';
import { writeIsolatingRefused } from './refused-rows';
import { frontierOf } from './staging-frontier';
import type { BridgeMetrics } from './metrics';

export interface OpcoesSequencer {
  pool: pg.Pool;
  /** The bridge's admin client (high watermarks, committed offsets, topic list). */
  admin: () => Admin | undefined;
  /** The events lane's consumer group: its committed offsets say how far each partition is staged. */
  groupId: string;
  /** Event topics (`TopicNames.eventos`). */
  pattern: RegExp;
  /**
   * What the event topics' names start with (`TopicNames.prefixoEventos`): one sequencer per
   * namespace, and it orders only that namespace's staged events.
   */
  topicPrefix: string;
  /** Longest hold of an event whose cause is neither in the log nor staged, in milliseconds (default 30 s); its effects wait for it. */
  causalHoldMs: number;
  /**
   * A partition with unstaged records and no progress this long is not waited for, in
   * milliseconds. Keep it above the events consumer's session (`DEFAULT_ORDER_MAX_IDLE_MS`).
   */
  maxIdleMs: number;
  /** Longest wait of an event for an earlier counter of its producer session not staged yet, in milliseconds. */
  orderGapMs: number;
  /**
   * Largest step back in record timestamps within one partition the sequencer allows for, in
   * milliseconds, when it moves the head of a backlog while its tail is still being staged (a
   * cut by publish time below every lagging partition's staged frontier, docs/ordering.md).
   */
  orderSkewMs: number;
  /**
   * Rows moved (or dropped) out of `core.event_staging` after which the leader VACUUMs it; 0
   * never does. Staging is a queue table — every event is inserted, then deleted — so its dead
   * rows pile up as fast as events flow; left to autovacuum (off on some servers, late on a
   * busy one), every round's scan of it grows with them and publish → log latency with it.
   */
  vacuumEveryRows: number;
  /** Most events ordered per round. */
  roundLimit: number;
  /** Most events per staging transaction; the log is written in chunks of at least 5,000. */
  batchSize: number;
  /** How often staging is looked at without a signal, in milliseconds. */
  pollMs: number;
  commitJitterMs?: number;
  /** A staged event PostgreSQL refuses to write to the log: quarantine it (it is then dropped from staging). */
  onRefused(row: StagedRef, sqlstate: string): Promise<void>;
  /**
   * The leader's staging in memory (ADR 0029): opened when this instance takes the lock, closed
   * when it loses it; its events are ordered with the table's and written by `COPY`. Absent:
   * every event goes through `core.event_staging` (ADR 0009).
   */
  memory?: MemoryStaging;
  /**
   * Commits the events lane's offsets that held events no longer keep back, after their write:
   * called in order, behind the next chunk's write, and awaited at the round's end. It should not
   * reject — a failed commit is the bridge's to log (its events are redelivered and dropped as
   * duplicates); a rejection would fail the round only once its writes are done.
   */
  commitStaged?(points: CommitPoint[]): Promise<void>;
  /**
   * Leadership lost while events staged in memory were not committed: the events lane must
   * start again from its committed offsets (those events then reach whoever leads next).
   */
  onMemoryDropped?(): void;
  logger: Logger;
  metrics: BridgeMetrics;
}

/**
 * The events lane's consumer session timeout (bridge.ts): how long the group keeps a member that
 * died without leaving — a consumer that crashed because its broker went away, say.
 */
export const EVENTS_SESSION_TIMEOUT_MS = 30_000;

/**
 * Default of `maxIdleMs` (`BRIDGE_ORDER_MAX_IDLE_MS`): twice the session timeout. A lane whose
 * consumer crashed rejoins only once the group has waited out its old member's session (~30 s),
 * and the partitions it held make no progress meanwhile. With a budget equal to the session (the
 * default before 2026-12-07) the sequencer gave those partitions up about as often as it waited
 * for them, and a producer's order broke across them (fault scenario 7, docs/ordering.md).
 */
export const DEFAULT_ORDER_MAX_IDLE_MS = 2 * EVENTS_SESSION_TIMEOUT_MS;

/** Session advisory lock (keyed `hashtext(<this>:<topic prefix>)`) held by the one active sequencer of a namespace. */
export const SEQUENCER_LOCK_NAME = 'feromonios-sequencer';

/** Consecutive failed rounds after which the sequencer reports itself failing. */
const FAILING_AFTER = 3;

/**
 * How long a round waits for the barrier before it considers a cut by publish time, and how often
 * it looks again. A round right after a cut that wrote something looks at once: the backlog is
 * still being staged, and waiting would only idle the log's writer.
 */
const CUT_AFTER_MS = 250;

/**
 * How often a round planned ahead, after a cut that wrote something, looks for its cut: it starts
 * while the round before writes its last chunk, when little past that chunk is staged yet.
 */
const CUT_AHEAD_MS = 25;

/** How often, at most, the leader counts staging for its depth gauge. */
const DEPTH_EVERY_MS = 5000;

type Snapshot = Array<{ topic: string; partition: number; high: bigint }>;

/** A partition's committed offset and the publish time of the last record staged below it, when known. */
interface Committed {
  offset: bigint;
  frontier: number | undefined;
}

/** What a round's cut did: none taken, it wrote events, or it wrote nothing (every event below it held). */
type LastCut = 'none' | 'wrote' | 'empty';

/** A round planned (`Sequencer.plan`): what it writes, in order, and what it needs to write it. */
interface Plan {
  started: bigint;
  /** The memory's epoch and the leadership term it was planned in. */
  epoch: number;
  term: number;
  cut: number | undefined;
  incompleto: boolean;
  order: RoundOrder;
  fromMemory: Map<StagedRef, MemoryRow>;
  /** `order.write` in write chunks. */
  chunks: StagedRef[][];
  /** The first chunk's held events probed and their lines joined, started with the plan. */
  first: Promise<PreparedChunk> | undefined;
}

/**
 * The events of a round's last chunk, written while the next round is planned: that plan leaves
 * them out and counts on them as written.
 */
interface InFlight {
  ids: ReadonlySet<string>;
  /** Per producer session, the highest counter among them. */
  counters: ReadonlyMap<string, number>;
  /** Those staged in the table (not held in memory): a cut's count of the table finds them too. */
  fromTable: readonly StagedRef[];
  /** Their write failed: the plan counting on them stops where it is (`Sequencer.dropAhead`). */
  dropped?: boolean;
}

/** The next round's plan, made while the last chunk of the round before is written. */
interface Ahead {
  plan: Promise<Plan | undefined>;
  inFlight: InFlight;
  /**
   * Set when that chunk's write ends: whether every one of its events was written or found in
   * the log (none refused). Not set, or false: the plan is made again.
   */
  whole?: boolean;
}

function inFlightOf(chunk: readonly StagedRef[], fromMemory: ReadonlyMap<StagedRef, MemoryRow>): InFlight {
  const ids = new Set<string>();
  const counters = new Map<string, number>();
  const fromTable: StagedRef[] = [];
  for (const r of chunk) {
    ids.add(r.event_id);
    if (!fromMemory.has(r)) fromTable.push(r);
    if (r.ordem_sessao === null || r.ordem_contador === null) continue;
    const c = counters.get(r.ordem_sessao);
    if (c === undefined || r.ordem_contador > c) counters.set(r.ordem_sessao, r.ordem_contador);
  }
  return { ids, counters, fromTable };
}

/** The sessions' last counters written, with those of a chunk in flight counted as written. */
function lastCounters(
  written: ReadonlyMap<string, number>,
  inFlight: ReadonlyMap<string, number>,
): Pick<ReadonlyMap<string, number>, 'get'> {
  return {
    get(sessao) {
      const a = written.get(sessao);
      const b = inFlight.get(sessao);
      return a === undefined ? b : b === undefined ? a : Math.max(a, b);
    },
  };
}

/**
 * Moves staged events into `core.event_log` in causal and publish order (docs/ordering.md).
 * Every bridge instance runs one; the one holding the namespace's advisory lock works, the others stand
 * by and take over within `pollMs` of its connection closing.
 *
 * A round is a barrier, as stream processors merge inputs: it snapshots every event
 * partition's high watermark, waits until the bridge has staged each partition up to it
 * (committed offsets; a partition making no progress for `maxIdleMs` is not waited for), then
 * orders everything staged below the snapshot (bridge/causal-order.ts) and writes it. An event
 * acknowledged before another was sent is below any snapshot the later one is below, so the
 * two always meet in one round (or the earlier one in an earlier round).
 */
export class Sequencer {
  private stopping = false;
  private loop: Promise<void> | undefined;
  private client: pg.PoolClient | undefined;
  private wakeUp: (() => void) | undefined;
  private signalled = false;
  /** Partitions given up on: not waited for until their committed offset moves. */
  private readonly idle = new Map<string, bigint>();
  /**
   * The last counter written per producer session (rule 2 across rounds, bridge/causal-order.ts),
   * the most recently written sessions kept. Cleared when leadership is taken after another
   * leader wrote: a new leader starts without it (a session first seen is checked only for gaps
   * between its staged counters).
   */
  private readonly ultimoContador = new Map<string, number>();
  /** The highest settled mark of `feromonios_ordem` staged per producer session (docs/ordering.md). */
  private readonly marcaFirme = new Map<string, number>();
  /** The last sequence number this instance wrote: whether another leader wrote since (see acquireLeadership). */
  private ultimaSequencia: string | null = null;
  private failures = 0;
  /** What the last round's cut did. */
  private lastCut: LastCut = 'none';
  /** The next round's plan, made while the last round wrote its last chunk (ADR 0029, "Rounds planned ahead"). */
  private ahead: Ahead | undefined;
  /** Counts leadership taken and lost: a plan made in an earlier term is made again. */
  private term = 0;
  /** The queue of the events lane's commits (`queueCommit`). */
  private commits: Promise<void> = Promise.resolve();
  /** Plans made ahead and dropped, until they settle (`stop()` waits for them). */
  private dropped: Promise<void> = Promise.resolve();
  /** The VACUUM of staging under way, if any: it runs beside the rounds, one at a time. */
  private vacuuming: Promise<void> | undefined;
  /** The count of staging for its depth gauge under way, if any, and when the last one started. */
  private counting: Promise<void> | undefined;
  private countedAt = 0;
  /** Rows that left staging since it was last vacuumed (this leader's count). */
  private leftStaging = 0;
  /**
   * Events in a round's first `core.event_log` transaction (rows come from PostgreSQL itself, so
   * larger chunks than staging's), and the least a cut moves. Small, so the log's writes start at
   * once: the first chunk's preparation is the only one no write overlaps — unless the round was
   * planned ahead, beside the write before it (its first chunk is then `laterChunk`).
   */
  private readonly moveChunk: number;
  /**
   * Events in each of a round's transactions after the first: 4× larger. A transaction's `BEGIN`,
   * lock and `COMMIT` (the WAL flushed) cost ~25 ms under a backlog's load: 1.0–1.1 s of a
   * 200,000-event drain in 5,000-event chunks, 0.6–0.7 s in 20,000-event ones (ADR 0029).
   */
  private readonly laterChunk: number;

  constructor(private readonly o: OpcoesSequencer) {
    this.moveChunk = Math.max(o.batchSize, 5000);
    this.laterChunk = 4 * this.moveChunk;
  }

  start(): void {
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.loop;
    this.dropAhead();
    await this.dropped;
    await this.vacuuming;
    await this.counting;
    this.releaseLeadership();
  }

  /** Whether this instance is the active sequencer. */
  get leader(): boolean {
    return this.client !== undefined;
  }

  /** Whether the last rounds kept failing (3 in a row): `/ready` says so while it lasts. */
  get failing(): boolean {
    return this.failures >= FAILING_AFTER;
  }

  /** Something was staged: start a round soon. */
  wake(): void {
    this.signalled = true;
    this.wakeUp?.();
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      try {
        if (!this.client && !(await this.acquireLeadership())) {
          await this.pause(Math.max(this.o.pollMs, 1000));
          continue;
        }
        const wrote = await this.round();
        this.failures = 0;
        if (!wrote) await this.pause(this.o.pollMs);
      } catch (err) {
        if (this.stopping) break;
        this.failures++;
        this.o.metrics.sequencerFailures.inc();
        const delay = backoffDelay(this.failures, { initialMs: 200, maxMs: 5000 });
        this.o.logger.warn('sequencer round failed, retrying', { error: (err as Error).message, delay_ms: delay });
        this.releaseLeadership(); // the connection may be the broken part: take the lock anew
        await sleep(delay);
      }
    }
  }

  private async acquireLeadership(): Promise<boolean> {
    const client = await this.o.pool.connect();
    try {
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [
        `${SEQUENCER_LOCK_NAME}:${this.o.topicPrefix}`,
      ]);
      if (!rows[0]?.ok) {
        client.release();
        return false;
      }
      client.on('error', () => this.releaseLeadership());
      client.on('notification', () => this.wake());
      await client.query(`LISTEN ${STAGING_CHANNEL}`);
      this.client = client;
      this.term++;
      // another leader may have written since this one last led: what it remembers is then stale.
      // Kept when the log's last sequence number is still the last one this instance wrote: a
      // round that failed (Kafka unavailable, say) lets go of the lock, and forgetting the
      // sessions' counters there let a send's first copies be written before its retry (fault
      // scenario 7, CI 2026-12-04). The settled marks are the producers' own claims: never stale.
      if (this.ultimoContador.size > 0) {
        const { rows } = await client.query<{ s: string | null }>(
          'SELECT max(sequence_number)::text AS s FROM core.event_log',
        );
        if ((rows[0]?.s ?? null) !== this.ultimaSequencia) this.ultimoContador.clear();
      }
      this.o.memory?.open();
      this.o.metrics.sequencerLeader.set(1);
      this.o.logger.info('sequencer active');
      return true;
    } catch (err) {
      client.release(true);
      throw err;
    }
  }

  private releaseLeadership(): void {
    const client = this.client;
    if (!client) return;
    this.client = undefined;
    this.term++;
    this.dropAhead(); // a plan made ahead belongs to the term that ends
    this.o.metrics.sequencerLeader.set(0);
    // what it held in memory was never committed: Kafka gives it to whoever stages it next
    if (this.o.memory?.close()) this.o.onMemoryDropped?.();
    client.removeAllListeners('notification');
    // destroying the connection ends the session: the lock is released and LISTEN forgotten
    client.release(true);
  }

  /** Waits `ms` or until woken (a staging signal, or stop). */
  private async pause(ms: number): Promise<void> {
    if (this.signalled || this.stopping) {
      this.signalled = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
    this.wakeUp = undefined;
    this.signalled = false;
  }

  /**
   * One round; whether it wrote anything. Its plan — what it writes, in order — was made while
   * the round before wrote its last chunk, when that one left one (`ahead`), else it is made now.
   */
  private async round(): Promise<boolean> {
    const ahead = this.ahead;
    this.ahead = undefined;
    let plan = ahead ? await ahead.plan : await this.plan(this.lastCut);
    // a plan made ahead counted on the round before's last chunk being written whole: one of its
    // events refused (quarantined, not in the log) or leadership changed meanwhile, it is made again
    if (ahead && (!ahead.whole || (plan && (plan.term !== this.term || (this.o.memory?.epoch ?? 0) !== plan.epoch))))
      plan = await this.plan(this.lastCut);
    if (!plan) return false;
    return this.write(plan);
  }

  /**
   * Plans a round: waits for its barrier or a cut (`waitForStaging`), reads what is staged below
   * it and orders it (bridge/causal-order.ts). `undefined` when nothing is staged, the sequencer
   * stops, the memory's epoch ended meanwhile, or the plan (made ahead) was dropped.
   *
   * `inFlight`: the events of the round before's last chunk, written meanwhile (a plan made
   * ahead). They are left out of the plan, and the plan counts on them as written: as causes in
   * the log, as their sessions' last counters (rule 2), not as events below its cut.
   */
  private async plan(lastCut: LastCut, inFlight?: InFlight): Promise<Plan | undefined> {
    const { rows: looked } = await this.o.pool.query<{ staged: boolean }>(
      'SELECT EXISTS (SELECT 1 FROM core.event_staging WHERE starts_with(kafka_topic, $1)) AS staged',
      [this.o.topicPrefix],
    );
    const memory = this.o.memory;
    if (!looked[0]?.staged && !memory?.size) {
      this.o.metrics.stagingDepth.set(0);
      this.o.metrics.causalHeld.set(0);
      return undefined;
    }
    this.countStaging();
    const started = process.hrtime.bigint();
    // the memory's epoch the round's barrier counts on: if it ends before the round has read its
    // events (leadership lost, the events lane rejoined), they come again from Kafka — the round
    // gives up rather than write later events without them
    const epoch = memory?.epoch ?? 0;
    const term = this.term;
    const snapshot = await this.snapshot();
    const { cut, incompleto } = await this.waitForStaging(snapshot, lastCut, inFlight);
    if (this.stopping || inFlight?.dropped) return undefined;
    const read = await this.readRound(snapshot, cut, epoch, inFlight);
    if (memory && memory.epoch !== epoch) return undefined;
    const { refs, now, fromMemory } = read;
    const causes = [
      ...new Set(refs.map((r) => r.causation_id).filter((c): c is string => c !== null && !inFlight?.ids.has(c))),
    ];
    const found = new Set(
      causes.length === 0
        ? []
        : (
            await this.o.pool.query<{ event_id: string }>(
              'SELECT event_id::text FROM core.event_ids WHERE event_id = ANY($1::uuid[])',
              [causes],
            )
          ).rows.map((r) => r.event_id),
    );
    const order = orderRound(refs, {
      inLog: inFlight ? { has: (id) => found.has(id) || inFlight.ids.has(id) } : found,
      now,
      holdMs: this.o.causalHoldMs,
      sessoes: {
        ultimo: inFlight ? lastCounters(this.ultimoContador, inFlight.counters) : this.ultimoContador,
        firme: this.lembrarMarcas(refs),
        esperaMs: this.o.orderGapMs,
        // a partition given up may hold acknowledged counters not staged yet: marks prove nothing
        incompleto,
      },
    });
    // a plan made ahead has its first chunk prepared beside the write before it: no reason to keep
    // that chunk small (a round of 5,500 events is one transaction, not 5,000 and 500)
    const chunks: StagedRef[][] = [];
    const firstSize = inFlight ? this.laterChunk : this.moveChunk;
    for (let i = 0, size = firstSize; i < order.write.length; i += size, size = this.laterChunk)
      chunks.push(order.write.slice(i, i + size));
    const first = this.prepare(chunks[0], fromMemory);
    return { started, epoch, term, cut, incompleto, order, fromMemory, chunks, first };
  }

  /**
   * The held events of a chunk probed and their lines joined (ADR 0029), started now: while the
   * chunk before commits, or while a plan is made ahead.
   */
  private prepare(
    chunk: StagedRef[] | undefined,
    fromMemory: ReadonlyMap<StagedRef, MemoryRow>,
  ): Promise<PreparedChunk> | undefined {
    if (!chunk || fromMemory.size === 0) return undefined;
    const p = prepareLogChunk(this.o.pool, this.runsOf(chunk, fromMemory));
    p.catch(() => undefined); // awaited when written; a chunk never written (stopping, a failure, a plan dropped) must not be an unhandled rejection
    return p;
  }

  /**
   * Writes a planned round, chunk after chunk; once its last chunk is being written (and the
   * round wrote something), the next round is planned beside it (`ahead`), so the log's writer
   * does not wait for the next round's snapshot, read and order (ADR 0029, "Rounds planned
   * ahead"). Returns whether it wrote anything.
   */
  private async write(plan: Plan): Promise<boolean> {
    const { epoch, cut, incompleto, order, fromMemory, chunks } = plan;
    const memory = this.o.memory;
    if (cut !== undefined) this.o.metrics.sequencerCuts.inc();
    for (const r of order.released) {
      this.o.metrics.causalHoldExpired.inc();
      this.o.logger.warn('cause did not reach the log in time: effect written without it', {
        event_id: r.row.event_id,
        causation_id: r.cause,
        hold_ms: this.o.causalHoldMs,
      });
    }
    for (const g of order.gapsExpired) {
      this.o.metrics.orderGapExpired.inc();
      this.o.logger.warn(
        "a producer's missing counters did not arrive in time: its later events written without them",
        {
          ordem_sessao: g.sessao,
          desde: g.desde,
          ate: g.ate,
          wait_ms: this.o.orderGapMs,
          incompleto,
        },
      );
    }
    this.o.metrics.causalHeld.set(order.held.length);
    // a cut whose events were all held (causes or predecessors missing) moved nothing: the next
    // round waits for its barrier instead, so held events never keep rounds short of it
    const lastCut: LastCut = cut === undefined ? 'none' : order.write.length === 0 ? 'empty' : 'wrote';
    // the next chunk's held events are probed and their lines joined while this one commits (ADR 0029)
    let next = plan.first;
    // a chunk's write, once the one before it is written: the next chunk's preparation starts with it
    const write = (k: number) => {
      const p = (async () => {
        const prepared = await next;
        next = this.prepare(chunks[k + 1], fromMemory);
        const t0 = process.hrtime.bigint();
        const result = await this.move(chunks[k] as StagedRef[], prepared, fromMemory);
        this.o.metrics.insertDuration.observe(Number(process.hrtime.bigint() - t0) / 1e9);
        return result;
      })();
      p.catch(() => undefined); // awaited below; a failure then fails the round
      return p;
    };
    // the next round is planned while the last chunk is written, counting on it
    const planAhead = (k: number) => {
      if (k !== chunks.length - 1 || this.stopping) return;
      const chunk = chunks[k] as StagedRef[];
      const inFlight = inFlightOf(chunk, fromMemory);
      const ahead: Ahead = { plan: this.plan(lastCut, inFlight), inFlight };
      ahead.plan.catch(() => undefined); // awaited by the next round, or dropped with a failed one
      this.ahead = ahead;
    };
    let writing = chunks.length > 0 ? write(0) : undefined;
    planAhead(0);
    // the events lane's offsets are committed behind the writes, in order: the next chunk is
    // written meanwhile (a commit never fails a round: the bridge logs it, ADR 0029)
    let committing = Promise.resolve();
    try {
      for (const [k, chunk] of chunks.entries()) {
        if (!writing) break; // stopping: what is left stays staged (or in Kafka) for the next leader
        const result = await writing;
        // the next chunk is written while this one's bookkeeping runs (~10 ms per 5,000 events,
        // PostgreSQL idle meanwhile): the log's lock is free, this chunk is committed
        writing = k + 1 < chunks.length && !this.stopping ? write(k + 1) : undefined;
        if (k === chunks.length - 1 && this.ahead)
          this.ahead.whole = result.inserted.length + result.duplicates.length === chunk.length;
        this.o.metrics.batchSize.observe(result.inserted.length);
        this.o.metrics.duplicates.inc(result.duplicates.length);
        const porTipo = new Map<string, number>();
        for (const r of result.inserted) porTipo.set(r.tipo, (porTipo.get(r.tipo) ?? 0) + 1);
        for (const [tipo, n] of porTipo) this.o.metrics.inserted.inc({ tipo }, n);
        if (result.lastSequence !== null) {
          this.o.metrics.highestSequence.set(Number(result.lastSequence));
          this.ultimaSequencia = result.lastSequence;
        }
        this.lembrarContadores(chunk);
        const held = chunk.flatMap((r) => fromMemory.get(r) ?? []);
        this.leftStaging += chunk.length - held.length;
        // their offsets no longer wait for them (ADR 0029, rule 1)
        if (memory && held.length > 0) {
          const points = memory.settle(epoch, held);
          committing = this.queueCommit(points);
          committing.catch(() => undefined); // awaited after the loop; a round failing first must not leave it unhandled
        }
        this.o.logger.debug('batch written', {
          inserted: result.inserted.length,
          duplicates: result.duplicates.length,
        });
        // (after the bookkeeping: the plan ahead reads memory with this chunk settled)
        if (writing) planAhead(k + 1);
      }
      await committing;
    } catch (err) {
      this.dropAhead();
      throw err;
    }
    this.lastCut = lastCut;
    this.vacuumStaging();
    this.o.metrics.rounds.observe(Number(process.hrtime.bigint() - plan.started) / 1e9);
    return order.write.length > 0;
  }

  /**
   * Drops the plan made ahead, if any (a failed round, leadership lost, a stop: the next round
   * plans anew): it stops at its next look at the partitions, and `stop()` waits for it.
   */
  private dropAhead(): void {
    const ahead = this.ahead;
    if (!ahead) return;
    this.ahead = undefined;
    ahead.inFlight.dropped = true;
    const dropped = ahead.plan.then(
      () => undefined,
      () => undefined,
    );
    this.dropped = Promise.all([this.dropped, dropped]).then(() => undefined);
  }

  /**
   * Starts a VACUUM of `core.event_staging` once `vacuumEveryRows` rows left it, unless one is
   * under way. It runs beside the next rounds, not inside them (it takes a lock that neither
   * staging nor the moves conflict with): a drain's rounds would otherwise wait ~0.3 s for each.
   * A failure is logged and retried after as many rows again; it never fails a round (the events
   * are in the log).
   */
  private vacuumStaging(): void {
    if (this.o.vacuumEveryRows <= 0 || this.leftStaging < this.o.vacuumEveryRows) return;
    if (this.stopping || this.vacuuming) return;
    this.leftStaging = 0;
    const t0 = process.hrtime.bigint();
    this.vacuuming = this.o.pool
      .query('VACUUM (ANALYZE) core.event_staging')
      .then(
        () => this.o.metrics.stagingVacuums.observe(Number(process.hrtime.bigint() - t0) / 1e9),
        (err: Error) =>
          this.o.logger.warn('VACUUM of core.event_staging failed; retried later', { error: err.message }),
      )
      .finally(() => {
        this.vacuuming = undefined;
      });
  }

  /**
   * Records the highest settled mark staged per session (this round's rows, held ones included;
   * at most 100,000 sessions, the oldest forgotten) and returns them all.
   */
  private lembrarMarcas(rows: StagedRef[]): ReadonlyMap<string, number> {
    for (const r of rows) {
      if (r.ordem_sessao === null || !r.ordem_firme) continue;
      const prev = this.marcaFirme.get(r.ordem_sessao) ?? 0;
      if (r.ordem_firme > prev) setNewest(this.marcaFirme, r.ordem_sessao, r.ordem_firme, 100_000);
    }
    return this.marcaFirme;
  }

  /** Records the sessions' last written counters (at most 100,000 sessions, the oldest forgotten). */
  private lembrarContadores(rows: StagedRef[]): void {
    for (const r of rows) {
      if (r.ordem_sessao === null || r.ordem_contador === null) continue;
      const prev = this.ultimoContador.get(r.ordem_sessao) ?? 0;
      setNewest(this.ultimoContador, r.ordem_sessao, Math.max(prev, r.ordem_contador), 100_000);
    }
  }

  /**
   * Writes a chunk in one transaction (`prepared`: made ready while the chunk before committed);
   * if PostgreSQL refuses it for a row's content, its halves are written the same way, in the
   * same order, down to single rows (`writeIsolatingRefused`), and each refused one is
   * quarantined and dropped from staging (or from memory: its offset is then committed with the
   * chunk's), so it cannot block the log.
   */
  private async move(
    chunk: StagedRef[],
    prepared: PreparedChunk | undefined,
    fromMemory: ReadonlyMap<StagedRef, MemoryRow>,
  ): Promise<WriteResult> {
    const results = await writeIsolatingRefused(
      chunk,
      async (rows) =>
        writeEventLog(
          this.o.pool,
          rows === chunk && prepared ? prepared : await prepareLogChunk(this.o.pool, this.runsOf(rows, fromMemory)),
          this.o.commitJitterMs,
        ),
      async (row, sqlstate) => {
        await this.o.onRefused(row, sqlstate);
        if (!fromMemory.has(row))
          await this.o.pool.query('DELETE FROM core.event_staging WHERE event_id = $1', [row.event_id]);
      },
    );
    return {
      inserted: results.flatMap((r) => r.inserted),
      duplicates: results.flatMap((r) => r.duplicates),
      lastSequence: results.reduce<string | null>((last, r) => r.lastSequence ?? last, null),
    };
  }

  /** A chunk as runs of one source each, in its order: staged in the table, or held in memory. */
  private runsOf(chunk: StagedRef[], fromMemory: ReadonlyMap<StagedRef, MemoryRow>): LogRun[] {
    const runs: LogRun[] = [];
    for (const r of chunk) {
      const m = fromMemory.get(r);
      const last = runs.at(-1);
      if (m) {
        if (last?.from === 'memory') last.rows.push(m.held);
        else runs.push({ from: 'memory', rows: [m.held] });
      } else if (last?.from === 'staging') last.ids.push(r.event_id);
      else runs.push({ from: 'staging', ids: [r.event_id] });
    }
    return runs;
  }

  /** Commits the events lane's offsets held events kept back (the bridge's consumer; a failure is its to log). */
  private async commit(points: CommitPoint[]): Promise<void> {
    if (points.length > 0) await this.o.commitStaged?.(points);
  }

  /**
   * `commit`, after every commit queued before it: a round's commits run behind its writes, and
   * a plan made ahead may settle duplicates meanwhile — in one queue, a partition's offsets reach
   * Kafka in the order they were settled, never a lower one after a higher one.
   */
  private queueCommit(points: CommitPoint[]): Promise<void> {
    const p = this.commits.then(() => this.commit(points));
    this.commits = p.catch(() => undefined);
    return p;
  }

  /**
   * Counts staging for `feromonios_bridge_staging_depth` (at most 100,000 rows), beside the
   * rounds and at most every `DEPTH_EVERY_MS`: a count of a deep backlog takes ~50–200 ms of
   * PostgreSQL, which a round waited for before each of its reads.
   */
  private countStaging(): void {
    if (this.counting || Date.now() - this.countedAt < DEPTH_EVERY_MS) return;
    this.countedAt = Date.now();
    this.counting = this.o.pool
      .query<{ n: string }>(
        `SELECT count(*)::text AS n
           FROM (SELECT 1 FROM core.event_staging WHERE starts_with(kafka_topic, $1) LIMIT 100000) s`,
        [this.o.topicPrefix],
      )
      .then(
        ({ rows }) => this.o.metrics.stagingDepth.set(Number(rows[0]?.n ?? 0) + (this.o.memory?.size ?? 0)),
        (err: Error) => this.o.logger.warn('count of core.event_staging failed', { error: err.message }),
      )
      .finally(() => {
        this.counting = undefined;
      });
  }

  /** Every event partition's high watermark, now. */
  private async snapshot(): Promise<Snapshot> {
    const admin = this.admin();
    const topics = (await admin.listTopics()).filter((t) => this.o.pattern.test(t));
    const offsets = await Promise.all(
      topics.map(async (topic) => (await admin.fetchTopicOffsets(topic)).map((p) => ({ topic, ...p }))),
    );
    return offsets.flat().map((p) => ({ topic: p.topic, partition: p.partition, high: BigInt(p.high) }));
  }

  /**
   * Until every partition of the snapshot is staged up to its high watermark (the events
   * lane's committed offset), except partitions that make no progress for `maxIdleMs`: those
   * are counted, logged, and not waited for again until their committed offset moves.
   *
   * While partitions still lag (a backlog being staged), the round may instead take a cut: an
   * instant below which every event of the snapshot is staged already — `orderSkewMs` before the
   * publish time of the last record staged of the furthest-behind lagging partition. An event not
   * staged yet comes after that record in its partition, so its publish time is at least that
   * record's minus the step back its producers' clocks may take: below the cut, nothing is
   * missing (ADR 0021). No cut after a cut that wrote nothing (its events are held: the round
   * waits for its barrier); the first look is at once after a cut that wrote something (a backlog
   * is being staged), else after `CUT_AFTER_MS`. Returns the cut (milliseconds since the epoch),
   * or `undefined` when the barrier was reached; and whether a partition given up is still short
   * of the snapshot (`incompleto`: what Kafka acknowledged is then not all staged, so a producer's
   * settled mark does not prove a missing counter is not coming — bridge/causal-order.ts).
   *
   * For a plan made ahead (`inFlight`), the events being written count for nothing below a cut,
   * after a cut that wrote something a cut is looked for every `CUT_AHEAD_MS`, and the wait ends
   * when the plan is dropped.
   */
  private async waitForStaging(
    snapshot: Snapshot,
    lastCut: LastCut,
    inFlight?: InFlight,
  ): Promise<{ cut: number | undefined; incompleto: boolean }> {
    const key = (t: string, p: number) => `${t}\u0000${p}`;
    const lastMove = new Map<string, { offset: bigint; at: number }>();
    const mayCut = lastCut !== 'empty';
    let cutLookedAt = lastCut === 'wrote' ? 0 : Date.now();
    const lookEvery = inFlight && lastCut === 'wrote' ? CUT_AHEAD_MS : CUT_AFTER_MS;
    for (let first = true; !this.stopping && !inFlight?.dropped; first = false) {
      const committed = await this.stagedOffsets(snapshot);
      const now = Date.now();
      let incompleto = false;
      const lagging = snapshot.filter((s) => {
        const k = key(s.topic, s.partition);
        const c = committed.get(k)?.offset ?? -1n;
        const idleAt = this.idle.get(k);
        if (idleAt !== undefined) {
          if (c === idleAt) {
            // given up on, and still not moving
            if (s.high > 0n && c < s.high) incompleto = true;
            return false;
          }
          this.idle.delete(k);
        }
        return s.high > 0n && c < s.high;
      });
      if (lagging.length === 0) return { cut: undefined, incompleto };
      if (mayCut && now - cutLookedAt >= lookEvery) {
        cutLookedAt = now;
        const cut = await this.cutBelow(
          lagging,
          lagging.map((l) => committed.get(key(l.topic, l.partition))?.frontier),
          inFlight,
        );
        if (cut !== undefined) return { cut, incompleto };
      }
      for (const s of lagging) {
        const k = key(s.topic, s.partition);
        const c = committed.get(k)?.offset ?? -1n;
        const seen = lastMove.get(k);
        if (!seen || seen.offset !== c) lastMove.set(k, { offset: c, at: now });
        else if (now - seen.at >= this.o.maxIdleMs) {
          this.idle.set(k, c);
          this.o.metrics.idlePartitions.inc();
          this.o.logger.warn('partition not staged in time: ordering goes on without waiting for it', {
            topic: s.topic,
            partition: s.partition,
            committed: c.toString(),
            high: s.high.toString(),
            idle_ms: this.o.maxIdleMs,
          });
        }
      }
      await sleep(first ? 2 : 10);
    }
    return { cut: undefined, incompleto: true };
  }

  /**
   * The cut by publish time for a round whose `lagging` partitions are still being staged:
   * `orderSkewMs` before the earliest of their frontiers — the publish time of the last record
   * staged, by offset (not the latest time: one record dated ahead in the middle of a partition
   * does not move its frontier) — if every one of them has staged something and at least a write
   * chunk of staged events is below it (a backlog; a few events below it are held ones, which a
   * cut would not move); else `undefined` (wait on).
   *
   * `committed` are the lagging partitions' frontiers as their committed offsets carry them (ADR
   * 0027), in `lagging`'s order; when one is unknown, all are found in staging instead.
   */
  private async cutBelow(
    lagging: Snapshot,
    committed: Array<number | undefined>,
    inFlight: InFlight | undefined,
  ): Promise<number | undefined> {
    const frontiers = committed.every((f): f is number => f !== undefined)
      ? committed
      : await this.frontiersInStaging(lagging);
    if (frontiers === undefined) return undefined;
    const cut = Math.min(...frontiers) - this.o.orderSkewMs;
    const held = this.o.memory?.countBefore(cut, this.moveChunk, inFlight?.ids) ?? 0;
    if (held >= this.moveChunk) return cut;
    // the table's events being written count for nothing (the plan leaves them out)
    let writing = 0;
    for (const r of inFlight?.fromTable ?? []) if (r.publicado_em < cut) writing++;
    const { rows } = await this.o.pool.query<{ below: number }>(
      `SELECT count(*)::int AS below
         FROM (SELECT 1 FROM core.event_staging s
                WHERE starts_with(s.kafka_topic, $1) AND s.publicado_em < to_timestamp($2::float8 / 1000)
                LIMIT $3) b`,
      [this.o.topicPrefix, cut, this.moveChunk - held + writing],
    );
    return (rows[0]?.below ?? 0) - writing + held >= this.moveChunk ? cut : undefined;
  }

  /**
   * The `lagging` partitions' frontiers found in staging — per partition, the publish time of its
   * row of highest offset (milliseconds since the epoch): a scan of the table; `undefined` when
   * one of them has nothing staged.
   */
  private async frontiersInStaging(lagging: Snapshot): Promise<number[] | undefined> {
    const { rows } = await this.o.pool.query<{ ts: number | null }>(
      `WITH l AS (SELECT kafka_topic AS t, kafka_partition AS p, max(kafka_offset) AS o
                    FROM core.event_staging WHERE starts_with(kafka_topic, $1) GROUP BY 1, 2),
            f AS (SELECT l.t, l.p, min(s.publicado_em) AS ts
                    FROM l JOIN core.event_staging s
                      ON s.kafka_topic = l.t AND s.kafka_partition = l.p AND s.kafka_offset = l.o
                   GROUP BY 1, 2)
       SELECT (extract(epoch FROM f.ts) * 1000)::float8 AS ts
         FROM unnest($2::text[], $3::int[]) AS q(t, p) LEFT JOIN f ON f.t = q.t AND f.p = q.p`,
      [this.o.topicPrefix, lagging.map((l) => l.topic), lagging.map((l) => l.partition)],
    );
    const ts = rows.map((r) => r.ts);
    return ts.length === lagging.length && ts.every((t): t is number => t !== null) ? ts : undefined;
  }

  /**
   * How far each partition of the snapshot is staged: its committed offset, or further where
   * this leader holds events in memory staged beyond it (ADR 0029, rule 2), with the frontier.
   */
  private async stagedOffsets(snapshot: Snapshot): Promise<Map<string, Committed>> {
    const committed = await this.committedOffsets([...new Set(snapshot.map((s) => s.topic))]);
    const memory = this.o.memory;
    if (memory)
      for (const s of snapshot) {
        const m = memory.staged(s.topic, s.partition);
        if (!m) continue;
        const k = `${s.topic}\u0000${s.partition}`;
        const c = committed.get(k);
        if (!c || m.upTo > c.offset) committed.set(k, { offset: m.upTo, frontier: m.frontier ?? c?.frontier });
      }
    return committed;
  }

  /**
   * The events lane's committed offsets (`-1` when none), per topic and partition, with the
   * staged frontier each carries, if any (ADR 0027).
   */
  private async committedOffsets(topics: string[]): Promise<Map<string, Committed>> {
    const out = new Map<string, Committed>();
    if (topics.length === 0) return out;
    const groups = await this.admin().fetchOffsets({ groupId: this.o.groupId, topics });
    for (const t of groups)
      for (const p of t.partitions)
        out.set(`${t.topic}\u0000${p.partition}`, {
          offset: /^\d+$/.test(p.offset) ? BigInt(p.offset) : -1n,
          frontier: frontierOf(p.metadata),
        });
    return out;
  }

  /**
   * The staged events below the snapshot (and of partitions it does not know), earliest first;
   * with a cut, only those published before it: the table's (at most `roundLimit`), then the
   * ones held in memory (ADR 0029) — all of them when the table's fit, else those before the
   * table's last, so a round never writes a later event before an earlier one it left for the
   * next. A held event staged in the table too (a redelivery staged while this instance did not
   * lead) is settled at once as a duplicate: the table's copy is written. The events of
   * `inFlight` (a plan made ahead) are left out.
   */
  private async readRound(
    snapshot: Snapshot,
    cut: number | undefined,
    epoch: number,
    inFlight?: InFlight,
  ): Promise<{ refs: StagedRef[]; now: number; fromMemory: Map<StagedRef, MemoryRow> }> {
    // the table's events being written are still there until their chunk commits: read past them
    const read = await this.readStaging(snapshot, cut, inFlight?.fromTable.length ?? 0);
    const { now } = read;
    const refs = inFlight
      ? read.refs.filter((r) => !inFlight.ids.has(r.event_id)).slice(0, this.o.roundLimit)
      : read.refs;
    const memory = this.o.memory;
    if (!memory || memory.size === 0) return { refs, now, fromMemory: new Map() };
    const high = new Map(snapshot.map((s) => [`${s.topic}\u0000${s.partition}`, s.high]));
    const { fromMemory, twice } = mergeHeld(refs, memory.below(high, cut, inFlight?.ids), this.o.roundLimit);
    if (twice.length > 0) {
      this.o.metrics.duplicates.inc(twice.length);
      await this.queueCommit(memory.settle(epoch, twice));
    }
    return { refs, now: refs.length === fromMemory.size ? Date.now() : now, fromMemory };
  }

  /** The table's part of `readRound`: at most `roundLimit` rows, and `more`. */
  private async readStaging(
    snapshot: Snapshot,
    cut: number | undefined,
    more = 0,
  ): Promise<{ refs: StagedRef[]; now: number }> {
    // one text field per row (tab-separated; every field is a uuid, a number or a topic name,
    // none holds a tab): a round is up to 50,000 rows, and node-pg's cost is per field
    const { rows } = await this.o.pool.query<{ r: string }>(
      `SELECT concat_ws(E'\t', (extract(epoch FROM clock_timestamp()) * 1000)::float8, s.event_id,
                        coalesce(s.causation_id::text, ''), (extract(epoch FROM s.publicado_em) * 1000)::float8,
                        coalesce(s.ordem_sessao::text, ''), coalesce(s.ordem_contador::text, ''), s.kafka_partition,
                        s.kafka_offset, (extract(epoch FROM s.recebido_em) * 1000)::float8,
                        coalesce(s.ordem_firme::text, ''), s.kafka_topic) AS r
         FROM core.event_staging s
         LEFT JOIN unnest($1::text[], $2::int[], $3::bigint[]) AS h(t, p, hw)
                ON h.t = s.kafka_topic AND h.p = s.kafka_partition
        WHERE starts_with(s.kafka_topic, $5) AND (h.hw IS NULL OR s.kafka_offset < h.hw)
          AND ($6::float8 IS NULL OR s.publicado_em < to_timestamp($6::float8 / 1000))
        ORDER BY s.publicado_em, s.ordem_sessao, s.ordem_contador, s.kafka_topic, s.kafka_partition, s.kafka_offset
        LIMIT $4`,
      [
        snapshot.map((s) => s.topic),
        snapshot.map((s) => s.partition),
        snapshot.map((s) => s.high.toString()),
        this.o.roundLimit + more,
        this.o.topicPrefix,
        cut ?? null,
      ],
    );
    let now = Date.now();
    const refs = rows.map(({ r }, i): StagedRef => {
      const f = r.split('\t');
      if (i === 0) now = Number(f[0]);
      return {
        event_id: f[1] as string,
        causation_id: f[2] || null,
        publicado_em: Number(f[3]),
        ordem_sessao: f[4] || null,
        ordem_contador: f[5] ? Number(f[5]) : null,
        kafka_partition: Number(f[6]),
        kafka_offset: f[7] as string,
        recebido_em: Number(f[8]),
        ordem_firme: f[9] ? Number(f[9]) : null,
        // last: a topic name holds no tab (Kafka allows [a-zA-Z0-9._-]), but nothing is lost if it did
        kafka_topic: f.slice(10).join('\t'),
      };
    });
    return { refs, now };
  }

  private admin(): Admin {
    const admin = this.o.admin();
    if (!admin) throw new Error('the bridge has no admin client yet');
    return admin;
  }
}
