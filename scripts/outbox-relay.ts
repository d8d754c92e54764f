/**
 * The outbox relay as a process of its own (a sidecar next to a colony that would rather not run
 * it in-process): `npx tsx scripts/outbox-relay.ts`, configured by the variables below
 * (.env.example). Most colonies call `bus.iniciarRelayOutbox()` instead (docs/outbox.md).
 */
import pg from 'pg';
import { COLONY_SCHEMA_RE } from '../sdk/wire';
import { connectionEnv, env, readEnv, onShutdown, runMain } from '../sdk/service';
import { EventBus, busSecurityFromEnv, jsonLogger } from '../sdk';

/** Every variable the relay process reads (`DATABASE_URL` is the colony's database here). */
export const outboxRelayEnv = {
  ...connectionEnv,
  OUTBOX_SCHEMA: env.string({
    pattern: COLONY_SCHEMA_RE,
    form: 'a lowercase PostgreSQL identifier',
    doc: "The colony's schema holding feromonios_outbox (DATABASE_URL is the colony's database).",
  }),
  OUTBOX_INTERVAL_MS: env.int({ min: 10, max: 60000, default: 250, unit: 'milliseconds', doc: 'Polling interval.' }),
  OUTBOX_BATCH_SIZE: env.int({ min: 1, max: 5000, default: 500, doc: 'Rows published per batch.' }),
  OUTBOX_RETENTION_MS: env.int({
    min: 0,
    default: 86_400_000,
    unit: 'milliseconds',
    doc: 'How long published rows are kept before deletion.',
  }),
};

async function main(): Promise<void> {
  const cfg = readEnv(outboxRelayEnv, process.env);
  const logger = jsonLogger('outbox-relay', cfg.LOG_LEVEL);
  const pool = new pg.Pool({ connectionString: cfg.DATABASE_URL, max: 3 });
  pool.on('error', (err) => logger.warn('idle database connection failed', { error: err.message }));
  const bus = new EventBus({
    brokers: cfg.KAFKA_BROKERS,
    ...busSecurityFromEnv(cfg),
    registryUrl: cfg.SCHEMA_REGISTRY_URL,
    namespace: cfg.FEROMONIOS_TOPIC_NAMESPACE,
    clientId: `feromonios-outbox-relay-${cfg.OUTBOX_SCHEMA}`,
    logger,
    outbox: { schema: cfg.OUTBOX_SCHEMA, pool },
  });
  await bus.iniciarRelayOutbox({
    intervaloMs: cfg.OUTBOX_INTERVAL_MS,
    lote: cfg.OUTBOX_BATCH_SIZE,
    retencaoMs: cfg.OUTBOX_RETENTION_MS,
  });
  logger.info('outbox relay running', { schema: cfg.OUTBOX_SCHEMA });
  onShutdown(logger, async () => {
    await bus.encerrar();
    await pool.end();
  });
}

if (require.main === module) runMain('outbox-relay', main);
