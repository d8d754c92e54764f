import type { Admin } from 'kafkajs';
import type { Logger } from '../runtime/logger';

/**
 * Records a consumer never read because retention deleted them first: `[desde, ate)` of one
 * partition (`ate` exclusive — the first offset the consumer read after the gap). Kafka does not
 * say so: the consumer's committed offset falls below the partition's log start, the fetch is
 * "out of range", and kafkajs resets the position without an error — to the log start for the
 * bridge, and for a colony on a topic its group has read before (the subscriber asks for that;
 * kafkajs's default for a colony would be the end, skipping records still there).
 */
export interface LacunaDeRetencao {
  grupo: string;
  topico: string;
  particao: number;
  /** First offset not read (the committed offset, or the next one after the last batch). */
  desde: string;
  /** Exclusive: the first offset read after the gap. */
  ate: string;
  /** The partition's log start offset when the gap was confirmed (records below it are gone). */
  inicio_do_log: string;
  registros: number;
}

export interface RetentionGapDeps {
  groupId: string;
  /** Runs `fn` with an admin client (the bridge's own; a short-lived one for a colony). */
  admin<T>(fn: (admin: Admin) => Promise<T>): Promise<T>;
  /**
   * What a partition without a committed offset expects: `'inicio'` (offset 0: every record
   * must be read — the bridge) or `'nada'` (no expectation — a colony starts at the end by design).
   */
  semCommit: 'inicio' | 'nada';
  onGap(gap: LacunaDeRetencao): void | Promise<void>;
  logger: Logger;
  /**
   * The group's committed offsets read before the consumer started, used at its first join
   * instead of reading them then: kafkajs may already have reset (and committed) an out-of-range
   * position by the time a fresh admin connection answers.
   */
  committedAtStart?: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>;
}

const key = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/**
 * Detects retention gaps from a consumer's batch events (docs/reliability.md, "Retention
 * gaps"): at each join the group's committed offsets are read once; each batch's first offset is
 * compared with the offset expected next on its partition. Offsets may skip for legitimate
 * reasons (transaction markers, aborted records), so a jump is a gap only when the partition's
 * log start has passed the expected offset — checked with one admin request, only on a jump.
 * Detection never blocks consumption: the consumer moves on; the gap is reported through `onGap`.
 */
export class RetentionGapDetector {
  /** Next offset expected per partition: from the committed offsets at the join, then from each batch. */
  private readonly next = new Map<string, bigint | Promise<bigint | undefined>>();
  private generation = 0;

  constructor(private readonly d: RetentionGapDeps) {}

  /** A (re)join: reads the committed offsets of the assigned partitions, forgetting the rest. */
  joined(assignment: Record<string, number[]>): void {
    this.next.clear();
    const generation = ++this.generation;
    const topics = Object.keys(assignment);
    if (topics.length === 0) return;
    const atStart = this.d.committedAtStart;
    this.d.committedAtStart = undefined; // a later rejoin reads the offsets of that moment
    const committed = (
      atStart ? Promise.resolve(atStart) : this.d.admin((a) => a.fetchOffsets({ groupId: this.d.groupId, topics }))
    ).then(
      (offsets) => new Map(offsets.flatMap((t) => t.partitions.map((p) => [key(t.topic, p.partition), p.offset]))),
      (err: unknown) => {
        this.d.logger.warn('retention gap check: committed offsets unavailable', {
          grupo: this.d.groupId,
          error: (err as Error).message,
        });
        return new Map<string, string>();
      },
    );
    for (const [topic, partitions] of Object.entries(assignment))
      for (const partition of partitions) {
        const k = key(topic, partition);
        this.next.set(
          k,
          committed.then((m) => {
            const offset = m.get(k);
            if (offset !== undefined && /^\d+$/.test(offset)) return BigInt(offset);
            return this.d.semCommit === 'inicio' && generation === this.generation ? 0n : undefined;
          }),
        );
      }
  }

  /** A batch starts at `firstOffset`: compared with the offset expected (asynchronously; never throws). */
  batchStarted(topic: string, partition: number, firstOffset: string): void {
    if (!/^\d+$/.test(firstOffset)) return;
    const expected = this.next.get(key(topic, partition));
    const generation = this.generation;
    void Promise.resolve(expected)
      .then((at) =>
        at === undefined ? undefined : this.confirm(topic, partition, at, BigInt(firstOffset), generation),
      )
      .catch((err: unknown) =>
        this.d.logger.warn('retention gap check failed', {
          grupo: this.d.groupId,
          topico: topic,
          particao: partition,
          error: (err as Error).message,
        }),
      );
  }

  /** A batch ended at `lastOffset`: the next one should start right after it. */
  batchEnded(topic: string, partition: number, lastOffset: string): void {
    if (/^\d+$/.test(lastOffset)) this.next.set(key(topic, partition), BigInt(lastOffset) + 1n);
  }

  private async confirm(
    topic: string,
    partition: number,
    expected: bigint,
    first: bigint,
    generation: number,
  ): Promise<void> {
    if (first <= expected) return;
    const ends = await this.d.admin((a) => a.fetchTopicOffsets(topic));
    const low = ends.find((e) => e.partition === partition)?.low;
    if (low === undefined || BigInt(low) <= expected || generation !== this.generation) return; // markers, not a gap
    const gap: LacunaDeRetencao = {
      grupo: this.d.groupId,
      topico: topic,
      particao: partition,
      desde: expected.toString(),
      ate: first.toString(),
      inicio_do_log: low,
      registros: Number(first - expected),
    };
    this.d.logger.error('retention gap: records deleted before they were read', { ...gap });
    await this.d.onGap(gap);
  }
}
