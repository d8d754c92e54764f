import { randomUUID } from 'node:crypto';
import type { IHeaders, Kafka } from 'kafkajs';
import { BrokerError } from '../errors';
import { DLQ_OUTCOME_HEADER, REPROCESS_HEADERS } from '../wire/headers';
import { withAdmin } from '../wire/topics';
import { HEADER, headerString } from '../wire/wire-format';

/** The original message of a dead-lettered event, as its DLQ record still holds it. */
export interface OriginalMessage {
  value: Buffer;
  headers: IHeaders;
}

/**
 * Reads a colony's DLQ topic from its start up to the end it has now, and returns for each
 * wanted event_id the value and headers of its first failure record that carries the full
 * payload (outcome records and records of redacted reprocessing are skipped). Events whose
 * records the topic no longer retains are simply absent: the caller falls back to the log copy.
 *
 * Uses a throw-away consumer group (kafkajs has no group-less consumer) that is deleted after.
 */
export async function readDeadLetterOriginals(
  kafka: Kafka,
  topic: string,
  eventIds: ReadonlySet<string>,
  timeoutMs = 30_000,
): Promise<Map<string, OriginalMessage>> {
  const found = new Map<string, OriginalMessage>();
  if (eventIds.size === 0) return found;
  const ends = await withAdmin(kafka, async (admin) => {
    if (!(await admin.listTopics()).includes(topic)) return [];
    return (await admin.fetchTopicOffsets(topic))
      .filter((p) => BigInt(p.high) > BigInt(p.low))
      .map((p) => ({ partition: p.partition, last: BigInt(p.high) - 1n }));
  });
  if (ends.length === 0) return found;

  const groupId = `${topic}.leitor-auditoria.${randomUUID()}`;
  const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false, maxWaitTimeInMs: 100 });
  const pending = new Set(ends.map((e) => e.partition));
  const last = new Map(ends.map((e) => [e.partition, e.last]));
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new BrokerError(`reading ${topic} did not reach its end within ${timeoutMs} ms`)),
        timeoutMs,
      );
      consumer
        .run({
          autoCommit: false,
          eachMessage: ({ partition, message }) => {
            const id = headerString(message.headers, HEADER.id);
            const isOutcome = headerString(message.headers, DLQ_OUTCOME_HEADER) !== undefined;
            const isRedacted = headerString(message.headers, REPROCESS_HEADERS.redacted) === 'true';
            if (id && eventIds.has(id) && !found.has(id) && !isOutcome && !isRedacted && message.value)
              found.set(id, { value: message.value, headers: message.headers ?? {} });
            if (BigInt(message.offset) >= (last.get(partition) ?? -1n)) {
              pending.delete(partition);
              if (pending.size === 0) {
                clearTimeout(timer);
                resolve();
              }
            }
            return Promise.resolve();
          },
        })
        .catch((err: unknown) => {
          clearTimeout(timer);
          reject(err instanceof Error ? err : new Error(String(err)));
        });
    });
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await withAdmin(kafka, (admin) => admin.deleteGroups([groupId])).catch(() => undefined);
  }
  return found;
}
