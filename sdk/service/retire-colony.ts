import type { Admin } from 'kafkajs';
import { FeromoniosError } from '../errors';
import type { TopicNames } from '../wire/topics';

/** What `retirarColonia` removed. */
export interface ColoniaRetirada {
  colonia: string;
  /** The colony's topics that existed and were deleted (its DLQ and reprocessing topics). */
  topicosRemovidos: string[];
  /** Its consumer group (`<ns>.colonia.<colonia>`), when it existed. */
  grupoRemovido: string | null;
}

/**
 * Removes what Kafka holds for a retired colony: `<ns>.dlq.<colonia>`, `<ns>.reprocessar.<colonia>`
 * and the consumer group `<ns>.colonia.<colonia>`. Refuses (`BAD_REQUEST`, nothing deleted) while
 * the group has members: stop every instance of the colony first. Event topics are shared by
 * every colony and are never touched; `core.dead_letter_queue` keeps the colony's DLQ history
 * (the audit trail outlives the colony). Idempotent: a second call removes nothing.
 */
export async function retirarColonia(admin: Admin, topics: TopicNames, colonia: string): Promise<ColoniaRetirada> {
  const owned = [topics.dlq(colonia), topics.reprocessar(colonia)]; // validates the colony code
  const group = topics.grupo(colonia);
  const { groups } = await admin.describeGroups([group]);
  const g = groups[0];
  if (g && g.members.length > 0)
    throw new FeromoniosError(
      'BAD_REQUEST',
      `colony ${colonia} is still consuming (${g.members.length} member(s) in group ${group}, state ${g.state}): stop every instance first`,
    );
  const existing = new Set(await admin.listTopics());
  const topicosRemovidos = owned.filter((t) => existing.has(t));
  if (topicosRemovidos.length > 0) await admin.deleteTopics({ topics: topicosRemovidos });
  const known = g !== undefined && g.state !== 'Dead';
  if (known) await admin.deleteGroups([group]);
  return { colonia, topicosRemovidos, grupoRemovido: known ? group : null };
}
