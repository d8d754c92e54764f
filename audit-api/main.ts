/**
 * The audit API process: `npx tsx audit-api/main.ts` (configuration: audit-api/config.ts,
 * .env.example). Applies pending migrations, then serves the `/api/events` routes until SIGTERM.
 */
import { Registry } from 'prom-client';
import { migrateLatest } from '../migrations';
import { EventBus, busSecurityFromEnv, jsonLogger } from '../sdk';
import { onShutdown, runMain } from '../sdk/service';
import { createAuditApp } from './app';
import { auditDatabasePool, loadAuditConfig } from './config';
import { AuditMetrics } from './metrics';
import { RunningRequests } from './running-requests';
import { listenAuditServer } from './server';

async function main(): Promise<void> {
  const cfg = loadAuditConfig();
  const logger = jsonLogger('audit-api', cfg.LOG_LEVEL);
  await migrateLatest(cfg.DATABASE_URL);
  const pool = auditDatabasePool(cfg);
  pool.on('error', (err) => logger.warn('idle database connection failed', { error: err.message }));
  const registry = new Registry();
  const bus = new EventBus({
    brokers: cfg.KAFKA_BROKERS,
    ...busSecurityFromEnv(cfg),
    registryUrl: cfg.SCHEMA_REGISTRY_URL,
    clientId: 'feromonios-audit-api',
    namespace: cfg.FEROMONIOS_TOPIC_NAMESPACE,
    pool,
    logger,
    metricsRegistry: registry,
  });
  const metrics = new AuditMetrics(registry);
  const requests = new RunningRequests(logger);
  const app = createAuditApp({ bus, pool, config: cfg, logger, metrics, requests });
  const server = await listenAuditServer(app, logger, metrics, cfg.AUDIT_API_PORT, '0.0.0.0');
  logger.info('audit API listening', { port: cfg.AUDIT_API_PORT });

  onShutdown(logger, async () => {
    server.close();
    server.closeIdleConnections();
    await requests.stopAll(); // paced reprocessing: unsent entries back to pendente
    await bus.encerrar();
    await pool.end();
  });
}

runMain('audit-api', main);
