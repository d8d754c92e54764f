import type { Admin, ITopicConfig, Kafka } from 'kafkajs';
import { ConfigError, isRetriable } from '../errors';
import { colonyCodeProblem } from './storable';

/** How long topic creation keeps retrying retriable broker errors, in milliseconds. */
const CREATE_TOPICS_PATIENCE_MS = 15_000;

/**
 * Topic names (docs/topics.md). Every name starts with the namespace (default `feromonios`):
 * - `<ns>.evento.<tipo>`        one topic per event type;
 * - `<ns>.dlq.<colonia>`        a colony's dead letters and their outcomes;
 * - `<ns>.reprocessar.<colonia>` events sent back to a colony for reprocessing;
 * - `<ns>.quarentena`           records the bridge could not accept, with the reason.
 * The bridge subscribes by pattern (`eventos`, `dlqs`) and picks up new topics as they appear.
 * Each colony consumes in the consumer group `<ns>.colonia.<colonia>` (`grupo`).
 */
export class TopicNames {
  readonly eventos: RegExp;
  readonly dlqs: RegExp;
  /** What every event topic's name starts with (`<ns>.evento.`). */
  readonly prefixoEventos: string;

  constructor(readonly namespace: string) {
    if (!/^[A-Za-z0-9_-]{1,40}$/.test(namespace)) {
      throw new ConfigError(
        `topics.namespace: expected 1-40 characters of [A-Za-z0-9_-], got ${JSON.stringify(namespace)}`,
        ['topics.namespace'],
      );
    }
    this.prefixoEventos = `${namespace}.evento.`;
    this.eventos = new RegExp(`^${namespace}\\.evento\\.`);
    this.dlqs = new RegExp(`^${namespace}\\.dlq\\.`);
  }

  evento(tipo: string): string {
    return `${this.prefixoEventos}${tipo}`;
  }

  dlq(colonia: string): string {
    return `${this.namespace}.dlq.${checkColonia(colonia)}`;
  }

  reprocessar(colonia: string): string {
    return `${this.namespace}.reprocessar.${checkColonia(colonia)}`;
  }

  /** The consumer group of a colony: every instance of the colony shares it. */
  grupo(colonia: string): string {
    return `${this.namespace}.colonia.${checkColonia(colonia)}`;
  }

  /** The colony of a colony consumer group, or `undefined` for any other group. */
  coloniaDoGrupo(groupId: string): string | undefined {
    const prefix = `${this.namespace}.colonia.`;
    if (!groupId.startsWith(prefix)) return undefined;
    const colonia = groupId.slice(prefix.length);
    return colonyCodeProblem(colonia) === undefined ? colonia : undefined;
  }

  quarentena(): string {
    return `${this.namespace}.quarentena`;
  }

  /** The event type of an event topic, or `undefined` for any other topic. */
  tipoDe(topic: string): string | undefined {
    return this.eventos.test(topic) ? topic.slice(this.prefixoEventos.length) : undefined;
  }

  /** The colony of a DLQ topic, or `undefined`. */
  coloniaDaDlq(topic: string): string | undefined {
    return this.dlqs.test(topic) ? topic.slice(`${this.namespace}.dlq.`.length) : undefined;
  }

  /** Registry subject of a topic's values (TopicNameStrategy). */
  static subject(topic: string): string {
    return `${topic}-value`;
  }
}

function checkColonia(colonia: string): string {
  const problem = colonyCodeProblem(colonia);
  if (problem) throw new ConfigError(`colonia ${problem}, got ${JSON.stringify(colonia)}`, ['colonia']);
  return colonia;
}

export interface TopicSettings {
  /** Partitions of each new topic. */
  partitions: number;
  /** Replicas of each new topic; -1 takes the broker's `default.replication.factor`. */
  replicationFactor: number;
  /** `retention.ms` of new topics, in milliseconds (-1: forever). */
  retentionMs: number;
  /** `min.insync.replicas` of new topics; undefined takes the broker's. */
  minInsyncReplicas?: number;
}

/** Topic-level `max.message.bytes`: the 1 MB payload limit plus room for headers. */
export const MAX_MESSAGE_BYTES = 2 * 1024 * 1024;

export const defaultTopicSettings = {
  partitions: 3,
  replicationFactor: -1,
  retentionMs: 7 * 24 * 3600 * 1000,
} satisfies TopicSettings;

/**
 * Creates the topics that do not exist yet, with explicit settings; existing topics are left
 * as they are. Safe to call concurrently from several processes (a lost creation race is
 * treated as success). Never relies on broker auto-creation.
 */
export async function ensureTopics(admin: Admin, topics: string[], settings: TopicSettings): Promise<string[]> {
  const existing = new Set(await admin.listTopics());
  const missing = [...new Set(topics)].filter((t) => !existing.has(t));
  if (missing.length === 0) return [];
  const configEntries: ITopicConfig['configEntries'] = [
    { name: 'retention.ms', value: String(settings.retentionMs) },
    // Room for a 1 MB payload (the seed's limit) plus headers and record framing.
    { name: 'max.message.bytes', value: String(MAX_MESSAGE_BYTES) },
  ];
  if (settings.minInsyncReplicas !== undefined) {
    configEntries.push({ name: 'min.insync.replicas', value: String(settings.minInsyncReplicas) });
  }
  // Right after a broker restart, leaders and metadata lag behind: retriable errors are retried
  // for a while instead of failing the caller's first publish or subscription.
  const deadline = Date.now() + CREATE_TOPICS_PATIENCE_MS;
  for (;;) {
    try {
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((topic) => ({
          topic,
          numPartitions: settings.partitions,
          replicationFactor: settings.replicationFactor,
          configEntries,
        })),
      });
      // Leaders elected is not yet metadata served: a consumer subscribing now could still be
      // told the broker "does not host this topic-partition" (seen on a freshly started broker).
      await partitionCounts(admin, missing);
      return missing;
    } catch (err) {
      // Another process created some of them between list and create: fine if all exist now.
      const now = new Set(await admin.listTopics().catch(() => [] as string[]));
      if (missing.every((t) => now.has(t))) return missing;
      if (!isRetriable(err) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/**
 * Runs `fn` with a short-lived admin client that is disconnected afterwards — also when
 * `connect()` itself fails, which otherwise leaves a socket to the seed broker open.
 */
export async function withAdmin<T>(kafka: Kafka, fn: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    return await fn(admin);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * Partition count of each topic, retrying retriable errors for a while: right after a topic is
 * created, or a broker restarted, metadata may name a partition the broker does not host yet.
 */
export async function partitionCounts(admin: Admin, topics: string[]): Promise<Map<string, number>> {
  const deadline = Date.now() + CREATE_TOPICS_PATIENCE_MS;
  for (;;) {
    try {
      const meta = await admin.fetchTopicMetadata({ topics });
      return new Map(meta.topics.map((t) => [t.name, t.partitions.length]));
    } catch (err) {
      if (!isRetriable(err) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
