import pg from 'pg';
import { connectionEnv, env, readEnv, type EnvValues } from '../sdk/service';
import { DEFAULT_MEMORY_STAGING_ROWS } from './memory-staging';
import { DEFAULT_ORDER_MAX_IDLE_MS } from './sequencer';

/** Every variable the bridge reads, validated once at start (`loadBridgeConfig`). */
export const bridgeEnv = {
  ...connectionEnv,
  BRIDGE_PORT: env.int({ min: 1, max: 65535, default: 9464, doc: 'HTTP port of /health, /ready and /metrics.' }),
  BRIDGE_GROUP_ID: env.string({ default: 'feromonios-bridge', doc: 'Consumer group shared by every bridge instance.' }),
  BRIDGE_REDACTION_KEY: env.secret({
    minLength: 32,
    doc: 'HMAC key for redacted texts; the bridge refuses to start without it. Keep it secret and stable.',
  }),
  BRIDGE_BATCH_SIZE: env.int({
    min: 1,
    max: 5000,
    default: 500,
    doc: 'Most events staged per transaction (the log is written in chunks of at least 5,000).',
  }),
  BRIDGE_FLUSH_INTERVAL_MS: env.int({
    min: 1,
    max: 60000,
    default: 200,
    unit: 'milliseconds',
    doc: 'Longest wait to fill a batch.',
  }),
  BRIDGE_TOPIC_REFRESH_MS: env.int({
    min: 500,
    max: 600000,
    default: 5000,
    unit: 'milliseconds',
    doc: 'How often new event/DLQ topics are looked for.',
  }),
  BRIDGE_COORDINATE_DECIMALS: env.int({
    min: 0,
    max: 6,
    default: 2,
    doc: 'Decimals kept of redacted coordinates (2 ≈ 1.1 km, the civic-unit level).',
  }),
  BRIDGE_MAX_PAYLOAD_BYTES: env.int({
    min: 1024,
    default: 1048576,
    unit: 'bytes',
    doc: 'Records larger than this are quarantined.',
  }),
  BRIDGE_STALL_AFTER_MS: env.int({
    min: 1000,
    default: 60_000,
    doc: 'A partition with lag and no progress this long is reported stalled (metric, /ready 503), in milliseconds.',
  }),
  BRIDGE_DB_QUERY_TIMEOUT_MS: env.int({
    min: 1000,
    max: 3_600_000,
    default: 60_000,
    unit: 'milliseconds',
    doc: 'Longest wait for PostgreSQL to answer one statement; past it the connection is dropped and the work retried (a blackholed or half-open connection never hangs the bridge).',
  }),
  BRIDGE_GAUGES_INTERVAL_MS: env.int({
    min: 1000,
    max: 3_600_000,
    default: 15_000,
    unit: 'milliseconds',
    doc: 'How often the platform gauges are polled: every colony group lag (feromonios_consumer_group_lag) and DLQ depth (feromonios_dlq_depth).',
  }),
  BRIDGE_PARTITIONS_AHEAD_MONTHS: env.int({
    min: 1,
    max: 24,
    default: 3,
    unit: 'months',
    doc: 'Monthly partitions of core.event_log kept ahead of the current month (created at start and every BRIDGE_PARTITIONS_INTERVAL_MS).',
  }),
  BRIDGE_PARTITIONS_INTERVAL_MS: env.int({
    min: 1000,
    max: 86_400_000,
    default: 3_600_000,
    unit: 'milliseconds',
    doc: 'How often the bridge checks that the months ahead of core.event_log exist.',
  }),
  BRIDGE_CAUSAL_HOLD_MS: env.int({
    min: 0,
    max: 3_600_000,
    default: 30_000,
    unit: 'milliseconds',
    doc: 'Longest hold of an event whose causation_id names an event neither in the log nor staged; past it, it is written anyway. Its effects wait for it (docs/ordering.md).',
  }),
  BRIDGE_ORDER_GAP_MS: env.int({
    min: 0,
    max: 600_000,
    default: 30_000,
    unit: 'milliseconds',
    doc: "Longest wait of a producer's event for an earlier counter of its session still in flight when it was sent (above the settled mark: a send split by a round, an outbox pass sent again for some partitions); gaps the producer settled are skipped at once (docs/ordering.md).",
  }),
  BRIDGE_ORDER_SKEW_MS: env.int({
    min: 0,
    max: 3_600_000,
    default: 2_000,
    unit: 'milliseconds',
    doc: "Largest step back in record timestamps within one partition allowed for when the sequencer moves a backlog's head while its tail is still being staged (docs/ordering.md).",
  }),
  BRIDGE_ORDER_MAX_IDLE_MS: env.int({
    min: 100,
    max: 3_600_000,
    default: DEFAULT_ORDER_MAX_IDLE_MS,
    unit: 'milliseconds',
    doc: "A partition with unstaged records and no progress this long is not waited for when ordering (docs/ordering.md). Keep it above the events consumer's 30 s session: a crashed consumer rejoins only after its old member's session expires.",
  }),
  BRIDGE_STAGING_VACUUM_ROWS: env.int({
    min: 0,
    max: 10_000_000,
    default: 20_000,
    unit: 'rows',
    doc: 'The sequencer VACUUMs core.event_staging after moving this many rows out of it (a queue table: every event is inserted and deleted), whether or not autovacuum runs; 0 leaves it to autovacuum (docs/bridge.md).',
  }),
  BRIDGE_MEMORY_STAGING_ROWS: env.int({
    min: 0,
    max: 1_000_000,
    default: DEFAULT_MEMORY_STAGING_ROWS,
    unit: 'rows',
    doc: "Most events the sequencer's leader holds in memory instead of core.event_staging, their offsets committed after the log's write (ADR 0029); a chunk that does not fit is staged in the table; 0 stages every event in the table (BENCHMARKS.md measures both).",
  }),
  BRIDGE_MEMORY_STAGING_MB: env.int({
    min: 1,
    max: 16_384,
    default: 256,
    unit: 'MiB',
    doc: "Most mebibytes of records the sequencer's leader holds in memory (ADR 0029).",
  }),
  BRIDGE_DECODE_THREAD: env.bool({
    default: true,
    doc: "Decode, check and redact records on a worker thread of the bridge's own, beside the thread that fetches, stages and orders (docs/bridge.md, ADR 0029); false decodes on that thread.",
  }),
  BRIDGE_FAULT_COMMIT_JITTER_MS: env.int({
    min: 0,
    max: 10000,
    default: 0,
    unit: 'milliseconds',
    doc: 'Fault injection for tests: random delay before each COMMIT. Leave 0.',
  }),
  DLQ_MAX_TENTATIVAS: env.int({
    min: 1,
    max: 1000,
    default: 5,
    doc: 'Failures of one (event_id, colonia) before its DLQ row becomes failed_permanent.',
  }),
};

export type BridgeConfig = EnvValues<typeof bridgeEnv>;

export const loadBridgeConfig = (source: Record<string, string | undefined> = process.env): BridgeConfig =>
  readEnv(bridgeEnv, source);

/**
 * The bridge's PostgreSQL pool: its own (the audit API's cannot starve it), TCP keepalive on,
 * and a client-side read timeout per statement — a connection the network silently dropped
 * (blackholed, half-open) fails the statement after `queryTimeoutMs` with a retriable error and
 * is discarded, instead of hanging the bridge (docs/reliability.md, "Network faults").
 */
export function bridgeDatabasePool(url: string, queryTimeoutMs: number, max = 4): pg.Pool {
  return new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 5000,
    query_timeout: queryTimeoutMs,
    keepAlive: true,
  });
}
