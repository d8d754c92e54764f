import type { Pool } from 'pg';
import type { Registry } from 'prom-client';
import { COLONY_SCHEMA_RE } from './catalog/colony-schema';
import { ConfigError } from './errors';
import type { Logger } from './runtime/logger';
import type { SegurancaKafka, SegurancaRegistry } from './runtime/connection-security';
import type { SchemaRegistry } from './catalog/registry';
import { defaultTopicSettings, type TopicSettings } from './wire/topics';

/** Options of an `EventBus`. Every duration is in milliseconds. */
export interface OpcoesEventBus {
  /** Kafka/Redpanda bootstrap brokers, `host:port`. */
  brokers: string[];
  /** Confluent-compatible registry base URL (ignored when `registry` is given). */
  registryUrl?: string;
  /** A registry port of your own (tests, other registries). */
  registry?: SchemaRegistry;
  /**
   * TLS and SASL towards the brokers (docs/security.md): `{ tls: { ca }, sasl: { mechanism:
   * 'scram-sha-512', username, password } }`. Absent: plaintext, no credentials.
   */
  seguranca?: SegurancaKafka;
  /** Basic-auth credentials of the schema registry (ignored when `registry` is given). */
  registryAuth?: SegurancaRegistry;
  /** Kafka client id, shown in broker logs and quotas. */
  clientId: string;
  /** Prefix of every topic name (docs/topics.md). */
  namespace: string;
  /** Folder of the schema catalog. */
  schemasDir?: string;
  logger?: Logger;
  /** Prometheus registry the bus registers its metrics in (a new one by default). */
  metricsRegistry?: Registry;
  /** Settings of the topics the bus creates. */
  topics: TopicSettings;
  /** Longest a `publicar`/`publicarLote` call waits for the broker before a `BrokerError`, in milliseconds. */
  publishTimeoutMs: number;
  /** Per-request timeout of registry calls, in milliseconds. */
  registryTimeoutMs: number;
  /** Retries of a retriable registry failure. */
  registryRetries: number;
  /** PostgreSQL holding `core` (the reads: `consultarEventos`, `replayDeSequence`…). */
  databaseUrl?: string;
  /** Or a pool of your own (not closed by `encerrar`). */
  pool?: Pool;
  /**
   * The colony's transactional outbox (docs/outbox.md): the schema of its `feromonios_outbox`
   * table, and the pool of the colony's database the relay reads it from.
   */
  outbox?: { schema: string; pool?: Pool };
  /** Confirmed publishing (`publicar(dto, { confirmar: true })`): how long to wait for the log, in milliseconds. */
  timeoutConfirmacaoMs: number;
  /** Consuming (`inscrever`). */
  consumo: {
    /** Partitions a colony handles in parallel (order within each partition is kept). */
    particoesEmParalelo: number;
    /** Recent event_ids each colony remembers to drop duplicate deliveries. */
    janelaDeduplicacao: number;
    /** Where a colony's new group starts: `false` = new events only (the seed's cursor seed). */
    desdeOInicio: boolean;
    /** Group session timeout, in milliseconds (handlers may run longer: heartbeats continue). */
    sessionTimeoutMs: number;
  };
}

export const defaultOpcoesEventBus = {
  clientId: 'feromonios',
  namespace: 'feromonios',
  topics: defaultTopicSettings,
  publishTimeoutMs: 10_000,
  timeoutConfirmacaoMs: 10_000,
  registryTimeoutMs: 2_000,
  registryRetries: 1,
  consumo: { particoesEmParalelo: 3, janelaDeduplicacao: 10_000, desdeOInicio: false, sessionTimeoutMs: 30_000 },
} satisfies Partial<OpcoesEventBus>;

export type OpcoesEventBusEntrada = Partial<OpcoesEventBus> & Pick<OpcoesEventBus, 'brokers'>;

/** Merges defaults and validates once; a bad option throws naming its path. */
export function resolveOptions(input: OpcoesEventBusEntrada): OpcoesEventBus {
  const o: OpcoesEventBus = {
    ...defaultOpcoesEventBus,
    ...input,
    topics: { ...defaultOpcoesEventBus.topics, ...input.topics },
    consumo: { ...defaultOpcoesEventBus.consumo, ...input.consumo },
  };
  const problems: string[] = [];
  if (
    !Array.isArray(o.brokers) ||
    o.brokers.length === 0 ||
    !o.brokers.every((b) => typeof b === 'string' && /^[^\s:]+:\d{1,5}$/.test(b))
  ) {
    problems.push(`brokers: expected a non-empty list of host:port, got ${JSON.stringify(o.brokers)}`);
  }
  if (!o.registry && (typeof o.registryUrl !== 'string' || !/^https?:\/\//.test(o.registryUrl))) {
    problems.push(`registryUrl: expected an http(s) URL (or give registry), got ${JSON.stringify(o.registryUrl)}`);
  }
  if (!/^[A-Za-z0-9_-]{1,40}$/.test(o.namespace))
    problems.push(`namespace: expected 1-40 characters of [A-Za-z0-9_-], got ${JSON.stringify(o.namespace)}`);
  const positive = (path: string, v: unknown, min = 1): void => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min)
      problems.push(`${path}: expected an integer >= ${min}, got ${JSON.stringify(v)}`);
  };
  positive('publishTimeoutMs', o.publishTimeoutMs);
  positive('timeoutConfirmacaoMs', o.timeoutConfirmacaoMs);
  if (o.outbox !== undefined && !COLONY_SCHEMA_RE.test(String(o.outbox?.schema)))
    problems.push(`outbox.schema: expected a lowercase PostgreSQL identifier, got ${JSON.stringify(o.outbox?.schema)}`);
  positive('registryTimeoutMs', o.registryTimeoutMs);
  positive('registryRetries', o.registryRetries, 0);
  positive('topics.partitions', o.topics.partitions);
  if (
    !Number.isInteger(o.topics.replicationFactor) ||
    (o.topics.replicationFactor < 1 && o.topics.replicationFactor !== -1)
  ) {
    problems.push(
      `topics.replicationFactor: expected an integer >= 1 or -1 (broker default), got ${JSON.stringify(o.topics.replicationFactor)}`,
    );
  }
  if (!Number.isInteger(o.topics.retentionMs) || (o.topics.retentionMs < 1 && o.topics.retentionMs !== -1)) {
    problems.push(
      `topics.retentionMs: expected a duration in milliseconds or -1, got ${JSON.stringify(o.topics.retentionMs)}`,
    );
  }
  positive('consumo.particoesEmParalelo', o.consumo.particoesEmParalelo);
  positive('consumo.janelaDeduplicacao', o.consumo.janelaDeduplicacao, 0);
  positive('consumo.sessionTimeoutMs', o.consumo.sessionTimeoutMs, 6000);
  if (o.topics.minInsyncReplicas !== undefined) positive('topics.minInsyncReplicas', o.topics.minInsyncReplicas);
  if (problems.length > 0) throw new ConfigError(`invalid EventBus options: ${problems.join('; ')}`, problems);
  return o;
}

/** @deprecated since 0.2: renamed `OpcoesEventBus` (docs/adr/0008-sdk-package-and-layout.md). */
export type EventBusOptions = OpcoesEventBus;
/** @deprecated since 0.2: renamed `OpcoesEventBusEntrada`. */
export type EventBusInput = OpcoesEventBusEntrada;
/** @deprecated since 0.2: renamed `defaultOpcoesEventBus`. */
export const defaultEventBusOptions = defaultOpcoesEventBus;
