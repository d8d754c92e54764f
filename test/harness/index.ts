/**
 * Test harness for tests against the real services. Each helper registers its own teardown,
 * run after the file's own hooks by the leak-checking environment, so a test only asks for
 * what it needs (helpers may be called inside tests):
 *
 *   const db = await createTestDatabase();          // clone of the migrated template
 *   const ns = randomNamespace();                   // topic namespace of this file
 *   await waitFor(() => received.length === 3);     // no fixed sleeps
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, type Admin, type Consumer, type KafkaMessage, type Producer } from 'kafkajs';
import pg from 'pg';
import type { Registry } from 'prom-client';
import { kafkaNodes } from '../../infra/kafka';
import { testPki } from '../../infra/tls';
import { partitionCounts, withAdmin } from '../../sdk/wire';

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

/** A value as a failure message shows it: short, one line. */
export function describeValue(v: unknown): string {
  let text: string;
  try {
    text = typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  } catch {
    text = String(v);
  }
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/**
 * Resolves once `condition` is truthy, polling; fails after `timeoutMs`. The failure names what
 * was waited for (`message`, or a function evaluated when the wait gives up, so it can say how
 * far things got) and always the last value the condition returned or the last error it threw.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  {
    timeoutMs = 30_000,
    intervalMs = 50,
    message = 'condition',
  }: { timeoutMs?: number; intervalMs?: number; message?: string | (() => string | Promise<string>) } = {},
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: { value: unknown } | { error: unknown } | undefined;
  for (;;) {
    try {
      const v = await condition();
      if (v) return v as Truthy<T>;
      last = { value: v };
    } catch (err) {
      last = { error: err };
    }
    if (Date.now() > deadline) {
      let what: string;
      try {
        what = typeof message === 'function' ? await message() : message;
      } catch (err) {
        what = `(the failure message itself failed: ${(err as Error).message})`;
      }
      const observed =
        last === undefined
          ? 'never evaluated'
          : 'error' in last
            ? `last error: ${last.error instanceof Error ? last.error.message : describeValue(last.error)}`
            : `last value: ${describeValue(last.value)}`;
      throw new Error(`waitFor timed out after ${timeoutMs} ms: ${what} (${observed})`);
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
  const started = Date.now();
  // topics may be created lazily (a colony's DLQ topic appears at its first dead letter)
  await waitFor(() => withAdmin(kafka, async (a) => (await a.listTopics()).includes(topic)), {
    timeoutMs,
    message: `topic ${topic} to exist`,
  });
  await withAdmin(kafka, (a) => partitionCounts(a, [topic])); // and its metadata served (leaders elected)
  timeoutMs = Math.max(1000, timeoutMs - (Date.now() - started));
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
      message: () => `${count} messages on ${topic} (got ${out.length})`,
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

/**
 * Records of `topic` a consumer group has not committed yet (sum over partitions of the high
 * watermark minus the committed offset). 0 = everything was handled and committed: nothing can
 * be redelivered short of a rebalance with uncommitted work — the condition to wait on instead
 * of sleeping before asserting that something did not happen twice.
 */
export async function groupLag(groupId: string, topic: string): Promise<number> {
  const kafka = new Kafka({ clientId: 'test-lag', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
  return withAdmin(kafka, async (admin) => {
    const [ends, [committed]] = await Promise.all([
      admin.fetchTopicOffsets(topic),
      admin.fetchOffsets({ groupId, topics: [topic] }),
    ]);
    const at = new Map((committed?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    return ends.reduce((n, e) => {
      const c = at.get(e.partition) ?? -1;
      return n + Number(e.high) - (c < 0 ? Number(e.low) : c);
    }, 0);
  });
}

/**
 * The value of a metric in a prom-client registry: the sum of its series whose labels include
 * `labels` (all series when none are given), or `undefined` when no series matches — a gauge at
 * 0 and a series never exported are different answers.
 */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`${name} is not registered`);
  const matching = (await metric.get()).values.filter((v) =>
    Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l),
  );
  return matching.length === 0 ? undefined : matching.reduce((n, v) => n + v.value, 0);
}

/**
 * The local brokers' secure listeners (infra/kafka.ts) and the test PKI and SASL users
 * (infra/tls.ts): SASL_SSL (SCRAM-SHA-256/512, PLAIN) and SSL with a required client certificate.
 */
export function secureKafka(): {
  saslSsl: string[];
  mtls: string[];
  pki: ReturnType<typeof testPki>;
  pem(file: string): string;
} {
  const topology = process.env.FEROMONIOS_KAFKA_TOPOLOGY === 'cluster' ? 'cluster' : 'single';
  const nodes = kafkaNodes(topology);
  const local = nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
  if (serviceEnv().brokers.join(',') !== local)
    throw new Error(
      `the secure listeners are the local ${topology} brokers' (${local}); KAFKA_BROKERS points elsewhere`,
    );
  return {
    saslSsl: nodes.map((n) => `127.0.0.1:${n.securePort}`),
    mtls: nodes.map((n) => `127.0.0.1:${n.mtlsPort}`),
    pki: testPki(),
    pem: (file) => fs.readFileSync(file, 'utf8'),
  };
}
