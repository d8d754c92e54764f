import type { Admin } from 'kafkajs';
import type { Gauge } from 'prom-client';
import type { TopicNames } from '../sdk/wire';

/** One partition of one colony group: records between its committed offset and the partition's end. */
export interface GroupPartitionLag {
  colonia: string;
  topic: string;
  partition: number;
  lag: number;
}

/**
 * The lag of every colony consumer group of the namespace (`<ns>.colonia.<colonia>`), by
 * committed offsets, seen from outside the colonies: it keeps growing while a colony is stopped,
 * crashed or stuck in a handler, when the colony's own `feromonios_consumer_lag` cannot say
 * so. A partition the group never committed on counts from the partition's start (what a new
 * member reading from the beginning would have to read). Topics that no longer exist are
 * skipped. Three requests per group and one per topic, every `BRIDGE_GAUGES_INTERVAL_MS`.
 */
export async function colonyGroupLags(admin: Admin, topics: TopicNames): Promise<GroupPartitionLag[]> {
  const { groups } = await admin.listGroups();
  const colonies = groups
    .map((g) => ({ groupId: g.groupId, colonia: topics.coloniaDoGrupo(g.groupId) }))
    .filter((g): g is { groupId: string; colonia: string } => g.colonia !== undefined);
  if (colonies.length === 0) return [];
  const existing = new Set(await admin.listTopics());
  const ends = new Map<string, Promise<Map<number, { high: bigint; low: bigint }>>>();
  const endsOf = (topic: string) => {
    let e = ends.get(topic);
    if (!e) {
      e = admin
        .fetchTopicOffsets(topic)
        .then((ps) => new Map(ps.map((p) => [p.partition, { high: BigInt(p.high), low: BigInt(p.low) }])));
      ends.set(topic, e);
    }
    return e;
  };
  const out: GroupPartitionLag[] = [];
  for (const g of colonies) {
    const committed = await admin.fetchOffsets({ groupId: g.groupId });
    for (const t of committed) {
      if (!existing.has(t.topic)) continue;
      const end = await endsOf(t.topic);
      for (const p of t.partitions) {
        const e = end.get(p.partition);
        if (!e) continue;
        const at = /^\d+$/.test(p.offset) ? BigInt(p.offset) : e.low; // -1: never committed
        const lag = e.high - (at < e.low ? e.low : at);
        out.push({ colonia: g.colonia, topic: t.topic, partition: p.partition, lag: Number(lag < 0n ? 0n : lag) });
      }
    }
  }
  return out;
}

/**
 * Sets `gauge` to exactly these series: a partition (or colony) that disappeared is removed, so
 * the exported set stays the current one — bounded by colonies × topics × partitions.
 */
export function publishGroupLags(gauge: Gauge<'colonia' | 'topic' | 'partition'>, lags: GroupPartitionLag[]): void {
  gauge.reset();
  for (const l of lags) gauge.set({ colonia: l.colonia, topic: l.topic, partition: String(l.partition) }, l.lag);
}
