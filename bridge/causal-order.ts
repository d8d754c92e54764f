/**
 * The order of one sequencer round (docs/ordering.md): which staged events are written to
 * `core.event_log` now, in which order, and which wait for their cause. Pure: the sequencer
 * (bridge/sequencer.ts) reads the round from PostgreSQL and writes what this returns.
 *
 * Rules, in priority order:
 * 1. **Cause before effect.** An event whose `causation_id` names an event neither in the log
 *    nor staged (nor written earlier in this round) is held until the cause is written or the
 *    event has waited `holdMs` since it was staged; then it is released (written anyway, reported
 *    by the caller). A causation cycle (forged ids) counts as a missing cause. An event whose
 *    cause is staged and held waits for it, however long it has waited itself — it may have been
 *    staged first, its cause's partition being staged later — and is written after it.
 * 2. **Publish order of one producer.** Events of one SDK producer session (`ordem_sessao`)
 *    are written in its counter order (`ordem_contador`), whatever their topics.
 * 3. **Publish time.** Everything else by the Kafka record timestamp (`publicado_em`), then
 *    session, counter, topic, partition and offset, so the result is deterministic.
 */

/** What the sequencer knows of a staged event (its payload stays in PostgreSQL). */
export interface StagedRef {
  event_id: string;
  causation_id: string | null;
  /** Kafka record timestamp (the publish time), in milliseconds since the epoch. */
  publicado_em: number;
  /** The SDK producer session that published it (`feromonios_ordem` header), if any. */
  ordem_sessao: string | null;
  /** Its place in that session's publish order. */
  ordem_contador: number | null;
  /**
   * The session's settled mark when it was sent: every counter below it was acknowledged or
   * given up by the producer, so a gap below it never fills (`null`/absent: unknown).
   */
  ordem_firme?: number | null;
  kafka_topic: string;
  kafka_partition: number;
  kafka_offset: string;
  /** When it was staged (database clock), in milliseconds since the epoch: holds count from here. */
  recebido_em: number;
}

export interface RoundContext {
  /** Which of the round's causes are already in `core.event_log`. */
  inLog: Pick<ReadonlySet<string>, 'has'>;
  /** The database clock now, in milliseconds since the epoch. */
  now: number;
  /** Longest hold of an event whose cause is missing, in milliseconds. */
  holdMs: number;
  /**
   * Rule 2 across rounds: the last counter written per producer session, the highest settled
   * mark staged per session (earlier rounds; this round's rows count too), and how long an event
   * waits for a missing predecessor. A session's events after a gap in its counters (the
   * predecessor not staged yet — the records of one send reach the broker's partitions one
   * after another, so a round can take some and not the others; a send written for some
   * partitions is sent again for the rest) are held until the gap fills, the whole gap is below
   * the session's settled mark (its producer gave up those counters, or Kafka acknowledged them
   * — and a round that waited for every partition's snapshot has staged what Kafka acknowledged:
   * they never come), or the first of them has waited `esperaMs`.
   */
  sessoes?: {
    ultimo: Pick<ReadonlyMap<string, number>, 'get'>;
    firme?: ReadonlyMap<string, number>;
    esperaMs: number;
    /**
     * The round goes on without some partition staged up to its snapshot (one given up for
     * making no progress): a counter below a settled mark may then be acknowledged and not
     * staged yet, in that partition, so marks settle nothing this round and every gap waits
     * `esperaMs`.
     */
    incompleto?: boolean;
  };
}

export interface HeldEvent {
  row: StagedRef;
  /** The cause it waits for (itself held, or not in the log). */
  cause: string;
}

export interface RoundOrder {
  /** To write now, in this order. */
  write: StagedRef[];
  /** Waiting for their cause; they stay staged for the next round. */
  held: HeldEvent[];
  /** Written (they are in `write`) although their cause is not before them: the hold ran out. */
  released: HeldEvent[];
  /**
   * Gaps in a producer session's counters that waited `esperaMs` without filling nor being
   * settled by a mark: the events after them are written now (`desde`..`ate`, both included, are
   * missing; one that arrives later is written when it does, after them).
   */
  gapsExpired: Array<{ sessao: string; desde: number; ate: number }>;
}

/** The round's tie-breaking order (rule 3); also the order `write` starts from. */
export function compareStaged(a: StagedRef, b: StagedRef): number {
  return (
    a.publicado_em - b.publicado_em ||
    cmp(a.ordem_sessao ?? '', b.ordem_sessao ?? '') ||
    (a.ordem_contador ?? 0) - (b.ordem_contador ?? 0) ||
    cmp(a.kafka_topic, b.kafka_topic) ||
    a.kafka_partition - b.kafka_partition ||
    cmpOffset(a.kafka_offset, b.kafka_offset) ||
    cmp(a.event_id, b.event_id)
  );
}

export function orderRound(rows: readonly StagedRef[], ctx: RoundContext): RoundOrder {
  const sorted = [...rows].sort(compareStaged);
  // each event id's first place, built at the first cause looked up in the round: a round whose
  // causes are all in the log, or that has none (a backlog's usual round), needs none
  let index: Map<string, number> | undefined;
  const indexOf = (id: string): number | undefined => {
    if (index === undefined) {
      index = new Map();
      for (let i = 0; i < sorted.length; i++) {
        const eventId = (sorted[i] as StagedRef).event_id;
        if (!index.has(eventId)) index.set(eventId, i);
      }
    }
    return index.get(id);
  };

  // 1. holds: walk up each causation chain (iteratively: a forged chain may be long); a cycle
  // (forged ids) counts as a missing cause
  const state = new Array<'free' | 'held' | 'released' | 'visiting' | undefined>(sorted.length);
  const causeIndex = new Array<number | undefined>(sorted.length);
  const held: HeldEvent[] = [];
  const released: HeldEvent[] = [];
  const gapsExpired: RoundOrder['gapsExpired'] = [];
  const ownCauseFree = (r: StagedRef): boolean =>
    r.causation_id === null || r.causation_id === r.event_id || ctx.inLog.has(r.causation_id);
  for (let start = 0; start < sorted.length; start++) {
    if (state[start] !== undefined) continue;
    if (ownCauseFree(sorted[start] as StagedRef)) {
      state[start] = 'free'; // the usual event: no walk
      continue;
    }
    const path: number[] = [];
    // the cause of path's last element: written (in the log, or free or released in this round),
    // held in this round, or missing (not staged, or a causation cycle)
    let causeIs: 'free' | 'held' | 'missing' = 'free';
    for (let j = start; ;) {
      const r = sorted[j] as StagedRef;
      if (ownCauseFree(r)) {
        state[j] = 'free';
        break;
      }
      path.push(j);
      state[j] = 'visiting';
      const ci = indexOf(r.causation_id as string);
      const s = ci === undefined ? undefined : state[ci];
      if (ci === undefined || ci === j || s === 'visiting') {
        causeIs = 'missing';
        break;
      }
      if (s !== undefined) {
        causeIs = s === 'held' ? 'held' : 'free';
        break;
      }
      j = ci;
    }
    for (let k = path.length - 1; k >= 0; k--) {
      const i = path[k] as number;
      const r = sorted[i] as StagedRef;
      const cause = r.causation_id as string;
      if (causeIs === 'free') {
        causeIndex[i] = indexOf(cause); // written in this round: before its effect
        state[i] = 'free';
      } else if (causeIs === 'missing' && ctx.now - r.recebido_em >= ctx.holdMs) {
        released.push({ row: r, cause });
        state[i] = 'released';
      } else {
        // a missing cause not waited for long enough, or a held cause of this round: that one is
        // written within its own hold and this one after it, however long this one has waited
        // (it may have been staged before its cause)
        held.push({ row: r, cause });
        state[i] = 'held';
      }
      causeIs = state[i] === 'held' ? 'held' : 'free';
    }
  }

  // 1b. gaps in a session's counters since the last written one: hold from the gap on, and
  // every event caused by a held one with it
  // each session's events not held, in counter order (step 2 takes them again, less those held here)
  let bySession: Map<string, number[]> | undefined;
  if (ctx.sessoes) {
    bySession = sessionLists(sorted, state);
    // the highest settled mark per session in this round, held rows' included (a producer's claim)
    const marks = new Map<string, number>();
    for (const r of sorted)
      if (r.ordem_sessao !== null && r.ordem_firme)
        marks.set(r.ordem_sessao, Math.max(marks.get(r.ordem_sessao) ?? 0, r.ordem_firme));
    const newlyHeld: number[] = [];
    for (const [sessao, list] of bySession) {
      // a session first seen now (its earlier events written before this sequencer led, or not
      // at all yet): nothing before its lowest staged counter is waited for, but a gap between
      // its staged counters is — fault scenario 7 caught a first round after an outage writing a
      // pass's copies on two partitions while the third's were still on their way
      const last =
        ctx.sessoes.ultimo.get(sessao) ?? ((sorted[list[0] as number] as StagedRef).ordem_contador as number) - 1;
      const settled = ctx.sessoes.incompleto
        ? 0
        : Math.max(ctx.sessoes.firme?.get(sessao) ?? 0, marks.get(sessao) ?? 0);
      let expected = last + 1;
      let gapAt = -1;
      for (let k = 0; k < list.length; k++) {
        const c = (sorted[list[k] as number] as StagedRef).ordem_contador as number;
        if (c < expected) continue; // an older or repeated counter: nothing missing before it
        if (c === expected || c <= settled) {
          // next in line, or every counter missing before it settled by its producer (a send
          // that failed and was given up, or one acknowledged and staged already)
          expected = c + 1;
          continue;
        }
        if (ctx.now - (sorted[list[k] as number] as StagedRef).recebido_em >= ctx.sessoes.esperaMs) {
          // the gap waited long enough (unknown: never coming)
          gapsExpired.push({ sessao, desde: expected, ate: c - 1 });
          expected = c + 1;
          continue;
        }
        gapAt = k;
        break;
      }
      if (gapAt < 0) continue;
      for (let k = gapAt; k < list.length; k++) {
        const i = list[k] as number;
        if (state[i] === 'released')
          released.splice(
            released.findIndex((h) => h.row === sorted[i]),
            1,
          );
        state[i] = 'held';
        held.push({ row: sorted[i] as StagedRef, cause: `${sessao}:${expected}` });
        newlyHeld.push(i);
      }
    }
    if (newlyHeld.length > 0) {
      const effects = new Map<number, number[]>();
      sorted.forEach((_, i) => {
        const ci = causeIndex[i];
        if (ci !== undefined) effects.set(ci, [...(effects.get(ci) ?? []), i]);
      });
      for (let q = newlyHeld.pop(); q !== undefined; q = newlyHeld.pop())
        for (const e of effects.get(q) ?? []) {
          if (state[e] === 'held') continue;
          state[e] = 'held';
          held.push({ row: sorted[e] as StagedRef, cause: (sorted[q] as StagedRef).event_id });
          newlyHeld.push(e);
        }
    }
  }

  // 2. edges among what is written: cause → effect, and each session's counter order
  const writable = sorted.map((_, i) => i).filter((i) => state[i] !== 'held');
  const edges: Array<{ from: number; to: number; causal: boolean }> = [];
  // whether every edge goes forward in rule-3 order (the usual round): then that order is the answer
  let forward = true;
  const edge = (from: number, to: number, causal: boolean) => {
    edges.push({ from, to, causal });
    if (from > to) forward = false;
  };
  for (const i of writable) {
    const ci = causeIndex[i];
    if (ci !== undefined && state[ci] !== 'held') edge(ci, i, true);
  }
  // a stable sort's order, less some elements, is the stable sort of the rest: step 1b's lists serve
  for (const all of (bySession ?? sessionLists(sorted, state)).values()) {
    const list = bySession ? all.filter((i) => state[i] !== 'held') : all;
    for (let k = 1; k < list.length; k++) edge(list[k - 1] as number, list[k] as number, false);
  }

  // 3. Kahn's algorithm, always taking the earliest ready event in rule-3 order. Causal edges
  // form no cycle (cycles are held above); a session order contradicting a causation (forged
  // ids: a producer's event caused by one it published later) yields to the causation.
  // When every edge goes forward, the earliest event not written yet is always ready (whatever
  // precedes it is earlier, so written): Kahn's order is rule-3 order itself, with no heap.
  const write = forward ? writable : kahn(sorted.length, writable, edges);
  return { write: write.map((i) => sorted[i] as StagedRef), held, released, gapsExpired };
}

/**
 * The events of `sorted` (rule-3 order) not held, by producer session, each session's in counter
 * order (a stable sort: repeated counters keep rule-3 order).
 */
function sessionLists(sorted: readonly StagedRef[], state: ReadonlyArray<string | undefined>): Map<string, number[]> {
  const bySession = new Map<string, number[]>();
  for (let i = 0; i < sorted.length; i++) {
    const r = sorted[i] as StagedRef;
    if (state[i] === 'held' || r.ordem_sessao === null || r.ordem_contador === null) continue;
    const list = bySession.get(r.ordem_sessao);
    if (list) list.push(i);
    else bySession.set(r.ordem_sessao, [i]);
  }
  for (const list of bySession.values())
    list.sort(
      (a, b) => ((sorted[a] as StagedRef).ordem_contador ?? 0) - ((sorted[b] as StagedRef).ordem_contador ?? 0),
    );
  return bySession;
}

/**
 * Kahn's algorithm over the events `writable` (indices in rule-3 order) and their `edges`,
 * always taking the earliest ready event; causal edges win over session ones (step 3 above).
 */
export function kahn(
  n: number,
  writable: number[],
  edges: ReadonlyArray<{ from: number; to: number; causal: boolean }>,
) {
  // each event's outgoing edges, adjacent in flat arrays (a backlog's round has ~100,000 edges:
  // an array of objects per event was most of this function's time and garbage)
  const first = new Int32Array(n + 1);
  for (const { from } of edges) first[from + 1] = (first[from + 1] as number) + 1;
  for (let i = 0; i < n; i++) first[i + 1] = (first[i + 1] as number) + (first[i] as number);
  const fill = first.slice(0, n);
  const target = new Int32Array(edges.length);
  const causalEdge = new Uint8Array(edges.length);
  const causes = new Int32Array(n); // unmet causal edges
  const preceding = new Int32Array(n); // unmet session edges
  for (const { from, to, causal } of edges) {
    const at = fill[from] as number;
    fill[from] = at + 1;
    target[at] = to;
    causalEdge[at] = causal ? 1 : 0;
    if (causal) causes[to] = (causes[to] as number) + 1;
    else preceding[to] = (preceding[to] as number) + 1;
  }
  const heap = new MinHeap();
  const queued = new Uint8Array(n);
  const enqueue = (i: number) => {
    if (queued[i] === 0) {
      queued[i] = 1;
      heap.push(i);
    }
  };
  // events whose causes are all written, waiting only for their session's order: where a stuck
  // session order is broken, earliest first (each pushed once: O(n log n) even for forged input)
  const causeFree = new MinHeap();
  for (const i of writable) {
    if (causes[i] !== 0) continue;
    if (preceding[i] === 0) enqueue(i);
    else causeFree.push(i);
  }
  const out: number[] = [];
  while (out.length < writable.length) {
    while (heap.size === 0) {
      // cannot happen: causal edges form no cycle (a cycle is held above)
      if (causeFree.size === 0)
        throw new Error('causal order: no event left to write (a causation cycle was not held)');
      enqueue(causeFree.pop());
    }
    const i = heap.pop();
    out.push(i);
    for (let e = first[i] as number, end = first[i + 1] as number; e < end; e++) {
      const to = target[e] as number;
      const causal = causalEdge[e] === 1;
      if (causal) causes[to] = (causes[to] as number) - 1;
      else preceding[to] = (preceding[to] as number) - 1;
      if (causes[to] !== 0) continue;
      if (preceding[to] === 0) enqueue(to);
      else if (causal) causeFree.push(to);
    }
  }
  return out;
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const cmpOffset = (a: string, b: string): number => a.length - b.length || cmp(a, b);

/** A binary min-heap of indices (smaller index = earlier in rule-3 order). */
class MinHeap {
  private readonly a: number[] = [];
  get size(): number {
    return this.a.length;
  }
  push(v: number): void {
    const a = this.a;
    a.push(v);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((a[p] as number) <= v) break;
      a[i] = a[p] as number;
      i = p;
    }
    a[i] = v;
  }
  pop(): number {
    const a = this.a;
    const top = a[0] as number;
    const last = a.pop() as number;
    if (a.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= a.length) break;
        const r = l + 1;
        const c = r < a.length && (a[r] as number) < (a[l] as number) ? r : l;
        if ((a[c] as number) >= last) break;
        a[i] = a[c] as number;
        i = c;
      }
      a[i] = last;
    }
    return top;
  }
}
