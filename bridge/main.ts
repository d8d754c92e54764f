/**
 * The bridge process: `npx tsx bridge/main.ts` (configuration: bridge/config.ts, .env.example).
 * Applies pending migrations, then mirrors every event topic into core.event_log until SIGTERM.
 */
import { migrateLatest } from '../migrations';
import { jsonLogger, securityFromEnv } from '../sdk';
import { onShutdown, runMain } from '../sdk/service';
import { ConfluentSchemaRegistry, SchemaCatalog, TopicNames, defaultTopicSettings } from '../sdk/wire';
import { Bridge } from './bridge';
import { bridgeDatabasePool, loadBridgeConfig } from './config';
import { BridgeMetrics } from './metrics';
import { startOpsServer } from './ops-server';

async function main(): Promise<void> {
  const cfg = loadBridgeConfig();
  const logger = jsonLogger('bridge', cfg.LOG_LEVEL);
  await migrateLatest(cfg.DATABASE_URL);
  const pool = bridgeDatabasePool(cfg.DATABASE_URL, cfg.BRIDGE_DB_QUERY_TIMEOUT_MS);
  pool.on('error', (err) => logger.warn('idle database connection failed', { error: err.message }));
  const metrics = new BridgeMetrics();
  const security = securityFromEnv(cfg);
  const bridge = new Bridge({
    brokers: cfg.KAFKA_BROKERS,
    seguranca: security.kafka,
    clientId: `feromonios-bridge-${process.pid}`,
    groupId: cfg.BRIDGE_GROUP_ID,
    pool,
    registry: new ConfluentSchemaRegistry({ url: cfg.SCHEMA_REGISTRY_URL, auth: security.registry }),
    catalog: SchemaCatalog.load(),
    topics: new TopicNames(cfg.FEROMONIOS_TOPIC_NAMESPACE),
    topicSettings: defaultTopicSettings,
    redaction: { key: cfg.BRIDGE_REDACTION_KEY, coordinateDecimals: cfg.BRIDGE_COORDINATE_DECIMALS },
    batchSize: cfg.BRIDGE_BATCH_SIZE,
    flushIntervalMs: cfg.BRIDGE_FLUSH_INTERVAL_MS,
    topicRefreshMs: cfg.BRIDGE_TOPIC_REFRESH_MS,
    maxPayloadBytes: cfg.BRIDGE_MAX_PAYLOAD_BYTES,
    commitJitterMs: cfg.BRIDGE_FAULT_COMMIT_JITTER_MS,
    causalHoldMs: cfg.BRIDGE_CAUSAL_HOLD_MS,
    orderMaxIdleMs: cfg.BRIDGE_ORDER_MAX_IDLE_MS,
    orderGapMs: cfg.BRIDGE_ORDER_GAP_MS,
    orderSkewMs: cfg.BRIDGE_ORDER_SKEW_MS,
    stagingVacuumRows: cfg.BRIDGE_STAGING_VACUUM_ROWS,
    memoryStagingRows: cfg.BRIDGE_MEMORY_STAGING_ROWS,
    memoryStagingBytes: cfg.BRIDGE_MEMORY_STAGING_MB * 1024 * 1024,
    decodeThread: cfg.BRIDGE_DECODE_THREAD,
    stallAfterMs: cfg.BRIDGE_STALL_AFTER_MS,
    gaugesIntervalMs: cfg.BRIDGE_GAUGES_INTERVAL_MS,
    partitionsAheadMonths: cfg.BRIDGE_PARTITIONS_AHEAD_MONTHS,
    partitionsIntervalMs: cfg.BRIDGE_PARTITIONS_INTERVAL_MS,
    dlqMaxTentativas: cfg.DLQ_MAX_TENTATIVAS,
    logger,
    metrics,
  });
  const server = await startOpsServer(cfg.BRIDGE_PORT, metrics.registry, () => bridge.health());
  await bridge.start();
  logger.info('bridge listening', { port: cfg.BRIDGE_PORT });

  onShutdown(logger, async () => {
    await bridge.stop();
    await pool.end();
    server.close();
  });
}

runMain('bridge', main);
