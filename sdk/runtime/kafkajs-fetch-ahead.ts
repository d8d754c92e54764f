/**
 * kafkajs 2.2.4's consumer, made to fetch the next batches while the current ones are handled
 * (docs/adr/0028-kafkajs-fetch-ahead.md).
 *
 * kafkajs's fetcher (`consumer/fetcher.js`) fetches, hands the batches to its workers and waits
 * until every one is handled before it asks the broker again; the next fetch starts from the
 * resolved offsets, so it cannot start sooner. A colony reading a backlog sat ~15 % idle between
 * fetches; the bridge's consumers wait the same way.
 *
 * The patch wraps `ConsumerGroup.prototype.fetch`. When a fetch returns batches, it at once starts
 * the next one for the same broker, asking each partition of those batches from the offset after
 * the batch's last (what kafkajs resolves once the batch is handled whole) and every other
 * partition from where it is. The next call takes that fetch's batches, **keeping only those a
 * fetch started now would return**: the same group generation and offset bookkeeping, the
 * partition still assigned, not paused, no seek waiting for it, and its resolved offset exactly
 * the one the batch was fetched from — a batch handled only in part, a seek, a pause, an error or
 * a rebalance in between make it fail that test, and it is dropped (fetched again next time, from
 * where the consumer really is). So the records handed to the workers are the ones kafkajs would
 * hand them, in the same order per partition, never a record twice nor one skipped; only the
 * fetch happened earlier. A fetch that fails ahead is not recovered from there (kafkajs's
 * recovery rejoins the group or resets offsets): the next call fetches as kafkajs does, and
 * recovers or throws there. A fetch that returned nothing starts nothing ahead: an idle consumer
 * waits on the broker as before.
 *
 * Shared by the process (kafkajs's class): a colony's own kafkajs consumers fetch ahead too.
 * Applied only to kafkajs {@link KAFKAJS_FETCH_AHEAD_VERSION}; any other is left as it is.
 */

import { kafkajsPrototypeWrap } from './kafkajs-prototype-wrap';

/** The kafkajs version the patch was written and tested against. */
export const KAFKAJS_FETCH_AHEAD_VERSION = '2.2.4';

/** The parts of a kafkajs `Batch` the patch reads. */
export interface FetchedBatch {
  topic: string;
  partition: number;
  fetchedOffset: string;
  /** Messages at or past the fetched offset, control records included. */
  messagesWithinOffset: ReadonlyArray<{ offset: string }>;
}

/** Offsets as kafkajs's `Long` gives them (only `toString` is read). */
interface OffsetLike {
  toString(): string;
}

/** The parts of kafkajs's `OffsetManager` the patch reads. */
export interface OffsetBookkeeping {
  nextOffset(topic: string, partition: number): OffsetLike;
  committedOffsets(): Record<string, Record<number, unknown> | undefined>;
  resolveOffsets(): Promise<unknown>;
}

/** The parts of kafkajs's `ConsumerGroup` (`kafkajs/src/consumer/consumerGroup`) the patch reads. */
export interface FetchingGroup {
  generationId: number | null;
  offsetManager: OffsetBookkeeping | null;
  seekOffset: { has(topic: string, partition: number): boolean; size: number };
  subscriptionState: {
    isPaused(topic: string, partition: number): boolean;
    assigned(): ReadonlyArray<{ topic: string; partitions: number[] }>;
  };
  fetch: (this: FetchingGroup, nodeId: number) => Promise<FetchedBatch[]>;
}

type Fetch = FetchingGroup['fetch'];

/** A fetch started ahead for one broker, and what it was started under. */
export interface Ahead {
  generationId: number | null;
  offsetManager: OffsetBookkeeping;
  /** The batches, or undefined when the fetch failed (a fetch of kafkajs's own then runs in its place). */
  batches: Promise<FetchedBatch[] | undefined>;
}

const AHEAD = Symbol('feromonios.kafkajsFetchAhead');

type Patched = FetchingGroup & { [AHEAD]?: Map<number, Ahead> };

const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** The offset after a batch's last record (control records included), or undefined when it holds none. */
export function offsetAfter(batch: FetchedBatch): string | undefined {
  const last = batch.messagesWithinOffset.at(-1);
  return last === undefined ? undefined : (BigInt(last.offset) + 1n).toString();
}

/**
 * Whether a batch fetched ahead is one a fetch started now would return: the same generation and
 * bookkeeping as when it was asked, the partition still assigned, not paused, no seek waiting, and
 * the consumer's next offset for it the one it was fetched from.
 */
export function stillNext(group: FetchingGroup, ahead: Ahead, batch: FetchedBatch): boolean {
  const om = group.offsetManager;
  if (om !== ahead.offsetManager || group.generationId !== ahead.generationId) return false;
  const { topic, partition } = batch;
  if (group.seekOffset.has(topic, partition) || group.subscriptionState.isPaused(topic, partition)) return false;
  if (!group.subscriptionState.assigned().some((a) => a.topic === topic && a.partitions.includes(partition))) {
    return false;
  }
  if (om.committedOffsets()[topic]?.[partition] == null) return false;
  return om.nextOffset(topic, partition).toString() === String(batch.fetchedOffset);
}

/**
 * kafkajs's own `fetch`, run ahead on a view of the group that changes nothing the workers
 * handling the current batches read: each partition of `from` is asked from the offset given
 * there (the next offset once its batch is handled); a seek waiting is left for the next fetch
 * of kafkajs's own (it would move an offset under a worker that has not seen it yet — the batch
 * would then not be stale to it); and a failure is not recovered from here (kafkajs's recovery
 * resets offsets and rejoins the group) but reported, so that the next call fetches as kafkajs
 * does and recovers there.
 */
function fetchAhead(group: FetchingGroup, original: Fetch, nodeId: number, from: Map<string, string>): Ahead {
  const om = group.offsetManager as OffsetBookkeeping;
  const offsets = new Proxy(om, {
    get(target, prop) {
      if (prop === 'nextOffset') {
        return (topic: string, partition: number): OffsetLike =>
          from.get(key(topic, partition)) ?? target.nextOffset(topic, partition);
      }
      return Reflect.get(target, prop, target) as unknown;
    },
  });
  const view = new Proxy(group, {
    get(target, prop) {
      if (prop === 'offsetManager') return offsets;
      if (prop === 'seekOffsets') return () => om.resolveOffsets();
      if (prop === 'recoverFromFetch') {
        return (error: unknown) => Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
      return Reflect.get(target, prop, target) as unknown;
    },
  });
  const batches = original.call(view, nodeId).then(
    (b) => b,
    () => undefined,
  );
  return { generationId: group.generationId, offsetManager: om, batches };
}

const fetchAheadWrap = kafkajsPrototypeWrap<FetchingGroup, 'fetch'>({
  version: KAFKAJS_FETCH_AHEAD_VERSION,
  module: 'kafkajs/src/consumer/consumerGroup',
  member: 'fetch',
  wrapper: (original: Fetch): Fetch =>
    async function fetch(this: Patched, nodeId: number): Promise<FetchedBatch[]> {
      let pending = this[AHEAD];
      if (!pending) {
        pending = new Map();
        this[AHEAD] = pending;
      }
      const ahead = pending.get(nodeId);
      pending.delete(nodeId);
      let batches: FetchedBatch[] | undefined;
      if (ahead && ahead.offsetManager === this.offsetManager && ahead.generationId === this.generationId) {
        batches = (await ahead.batches)?.filter((b) => stillNext(this, ahead, b));
      }
      batches ??= await original.call(this, nodeId);
      // nothing fetched (idle) or a seek waiting (only kafkajs's own fetch applies it): nothing ahead
      if (batches.length > 0 && this.offsetManager && this.seekOffset.size === 0) {
        const from = new Map<string, string>();
        for (const b of batches) {
          const after = offsetAfter(b);
          if (after !== undefined) from.set(key(b.topic, b.partition), after);
        }
        pending.set(nodeId, fetchAhead(this, original, nodeId, from));
      }
      return batches;
    },
});

/**
 * Wraps `fetch` of `proto` (a `ConsumerGroup.prototype`, or a class shaped like it); a second call
 * does nothing. Exported for the tests, which wrap a group of their own.
 */
export const patchFetch = (proto: FetchingGroup): void => fetchAheadWrap.wrap(proto);

/** Puts back the `fetch` that {@link patchFetch} wrapped. */
export const restoreFetch = (proto: FetchingGroup): void => fetchAheadWrap.unwrap(proto);

/**
 * Makes kafkajs's consumers fetch ahead (see the module's description). Called by
 * `kafkaConnection` when a Feromônios client is created; a second call does nothing. Returns
 * whether kafkajs's consumers now run with it.
 */
export function patchKafkajsFetchAhead(): boolean {
  return fetchAheadWrap.patch();
}

/**
 * kafkajs's own `fetch` back, until the next {@link patchKafkajsFetchAhead}. For the consume
 * benchmark, which measures plain kafkajs as released beside the SDK in one process.
 */
export function restoreKafkajsFetchAhead(): void {
  fetchAheadWrap.restore();
}
