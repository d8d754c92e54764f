/**
 * Test harness for tests against the real services. Each helper registers its own teardown,
 * run after the file's own hooks by the leak-checking environment, so a test only asks for
 * what it needs (helpers may be called inside tests):
 *
 *   const db = await createTestDatabase();          // clone of the migrated template
 *   const ns = randomNamespace();                   // topic namespace of this file
 *   await waitFor(() => received.length === 3);     // no fixed sleeps
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Admin, type Consumer, type KafkaMessage, type Producer } from 'kafkajs';
import pg from 'pg';
import { withAdmin } from '../../sdk/topics';

export interface ServiceEnv {
  brokers: string[];
  registryUrl: string;
  databaseUrl: string;
}

export function serviceEnv(): ServiceEnv {
  const { KAFKA_BROKERS, SCHEMA_REGISTRY_URL, DATABASE_URL } = process.env;
  if (!KAFKA_BROKERS || !SCHEMA_REGISTRY_URL || !DATABASE_URL) {
    throw new Error('service variables missing: run tests through jest (global setup) or set them');
  }
  return { brokers: KAFKA_BROKERS.split(','), registryUrl: SCHEMA_REGISTRY_URL, databaseUrl: DATABASE_URL };
}

export const randomSuffix = (bytes = 4): string => randomBytes(bytes).toString('hex');

/** A topic namespace unique to the caller, so files share the broker without seeing each other. */
export const randomNamespace = (): string => `t${randomSuffix()}`;

/** Registers a teardown the harness runs when the file ends (after every `afterAll`). */
export function registerCleanup(fn: () => Promise<void>): void {
  ((globalThis as { __feromoniosCleanups?: Array<() => Promise<void>> }).__feromoniosCleanups ??= []).push(fn);
}

function openClients(): Map<string, unknown> {
  const g = globalThis as { __feromoniosOpenClients?: Map<string, unknown> };
  g.__feromoniosOpenClients ??= new Map<string, unknown>();
  return g.__feromoniosOpenClients;
}

/**
 * Records a client the test itself must close; call the returned function when it is. A
 * client still recorded when the file ends fails the file.
 */
export function trackClient(label: string): () => void {
  const key = `${label}#${randomSuffix(3)}`;
  openClients().set(key, true);
  return () => openClients().delete(key);
}

type Truthy<T> = Exclude<T, false | null | undefined | 0 | ''>;

/** Resolves once `condition` is truthy, polling; fails with `message` after `timeoutMs`. */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  {
    timeoutMs = 30_000,
    intervalMs = 50,
    message = 'condition',
  }: { timeoutMs?: number; intervalMs?: number; message?: string } = {},
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await condition();
      if (v) return v as Truthy<T>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `waitFor timed out after ${timeoutMs} ms: ${message}${lastError instanceof Error ? ` (last error: ${lastError.message})` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export interface TestDatabase {
  name: string;
  url: string;
  pool: pg.Pool;
}

/** A fresh database cloned from the run's migrated template, dropped after the file. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const { databaseUrl } = serviceEnv();
  const template = process.env.FEROMONIOS_TEST_TEMPLATE_DB;
  const runId = process.env.FEROMONIOS_TEST_RUN_ID;
  if (!template || !runId) throw new Error('no template database: the global setup did not run');
  const name = `fero_t_${runId}_${randomSuffix()}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  } finally {
    await admin.end();
  }
  const u = new URL(databaseUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  const pool = new pg.Pool({ connectionString: url, max: 5 });
  pool.on('error', () => undefined); // idle clients die when a test restarts PostgreSQL
  registerCleanup(async () => {
    await pool.end();
    const a = new pg.Client({ connectionString: databaseUrl });
    await a.connect();
    await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => a.end());
  });
  return { name, url, pool };
}

/** A kafkajs client whose producers, consumers and admins are tracked and closed after the file. */
export function testKafka(clientId = `test-${randomSuffix()}`): {
  kafka: Kafka;
  producer: () => Promise<Producer>;
  consumer: (groupId: string) => Consumer;
  admin: () => Promise<Admin>;
} {
  const kafka = new Kafka({ clientId, brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
  const track = <C extends { disconnect(): Promise<void> }>(_label: string, c: C): C => {
    registerCleanup(() => c.disconnect());
    return c;
  };
  return {
    kafka,
    producer: async () => {
      const p = track('kafkajs producer', kafka.producer());
      await p.connect();
      return p;
    },
    consumer: (groupId) => track(`kafkajs consumer ${groupId}`, kafka.consumer({ groupId })),
    admin: async () => {
      const a = track('kafkajs admin', kafka.admin());
      await a.connect();
      return a;
    },
  };
}

/**
 * Reads `count` messages of a topic from the beginning with a throwaway consumer group
 * (fails after `timeoutMs` naming how many arrived).
 */
export async function readTopic(
  topic: string,
  count: number,
  { timeoutMs = 30_000 }: { timeoutMs?: number } = {},
): Promise<KafkaMessageWithPosition[]> {
  const kafka = new Kafka({ clientId: 'test-reader', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `reader-${randomSuffix()}` });
  const out: KafkaMessageWithPosition[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: ({ message, partition }) => {
        out.push({ ...message, partition, topic });
        return Promise.resolve();
      },
    });
    await waitFor(() => out.length >= count, {
      timeoutMs,
      message: `${count} messages on ${topic} (got ${out.length})`,
    });
    return out;
  } finally {
    await consumer.disconnect();
  }
}

export type KafkaMessageWithPosition = KafkaMessage & { partition: number; topic: string };

/** Total messages ever written to a topic (sum of high watermarks), 0 if it does not exist. */
export async function topicMessageCount(topic: string): Promise<number> {
  const kafka = new Kafka({ clientId: 'test-count', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
  return withAdmin(kafka, async (admin) => {
    if (!(await admin.listTopics()).includes(topic)) return 0;
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
  });
}
