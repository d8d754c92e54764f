/**
 * `npm start`: the main job on a fresh machine. Brings the services up, prepares the database,
 * syncs the schemas, runs the bridge, publishes the seed's sample flow as a demo colony, shows
 * it in core.event_log (redacted), serves the audit API and asks it for the flow's trace, and
 * keeps the bridge and the audit API running until Ctrl-C.
 * `npm start -- --once` exits after the demo (used by test/quickstart.e2e.test.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { Registry } from 'prom-client';
import { createAuditApp } from '../audit-api/app';
import { listenAuditServer } from '../audit-api/server';
import { loadAuditConfig, tokenOptions } from '../audit-api/config';
import { signOperatorToken } from '../audit-api/operator-auth';
import { AuditMetrics } from '../audit-api/metrics';
import { Bridge } from '../bridge/bridge';
import { BridgeMetrics } from '../bridge/metrics';
import { startOpsServer } from '../bridge/ops-server';
import { up } from '../infra/services';
import { migrateLatest } from '../migrations';
import { EventBus, silentLogger, jsonLogger } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';

const log = (msg: string): void => console.log(`[start] ${msg}`);
const once = process.argv.includes('--once');
const namespace = process.env.FEROMONIOS_TOPIC_NAMESPACE ?? 'feromonios';
const demoDb = process.env.FEROMONIOS_DEMO_DB ?? 'feromonios';
const bridgePort = Number(process.env.BRIDGE_PORT ?? 9464);
const auditPort = Number(process.env.AUDIT_API_PORT ?? 8080);

async function ensureDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

async function main(): Promise<void> {
  log('starting Kafka, the schema registry and PostgreSQL (the first run downloads the jars)…');
  const { endpoints, started } = await up();
  log(`services ready (${started.length ? `started ${started.join(', ')}` : 'already running'})`);
  const databaseUrl = await ensureDatabase(endpoints.DATABASE_URL, demoDb);
  const applied = await migrateLatest(databaseUrl);
  log(`database ${databaseUrl}: ${applied.length ? `applied ${applied.join(', ')}` : 'schema up to date'}`);

  const brokers = endpoints.KAFKA_BROKERS.split(',');
  const bus = new EventBus({
    brokers,
    registryUrl: endpoints.SCHEMA_REGISTRY_URL,
    namespace,
    clientId: 'demo-colony',
    logger: silentLogger,
  });
  const synced = await bus.sincronizarSchemas();
  log(`schemas synced: ${synced.map((s) => `${s.tipo}@${s.versao}=${s.id ?? '?'}`).join(', ')}`);

  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  pool.on('error', () => undefined);
  const metrics = new BridgeMetrics();
  const redactionKey = process.env.BRIDGE_REDACTION_KEY ?? `demo-only-key-${randomUUID()}`;
  const bridge = new Bridge({
    brokers,
    clientId: 'feromonios-bridge-demo',
    groupId: `${namespace}-bridge`,
    pool,
    registry: bus.registry,
    catalog: bus.catalog,
    topics: bus.topics,
    topicSettings: bus.options.topics,
    redaction: { key: redactionKey, coordinateDecimals: 2 },
    batchSize: 500,
    flushIntervalMs: 100,
    topicRefreshMs: 1000,
    maxPayloadBytes: 1024 * 1024,
    dlqMaxTentativas: 5,
    logger: jsonLogger('bridge', 'warn'),
    metrics,
  });
  const server = await startOpsServer(bridgePort, metrics.registry, () => bridge.health());

  // A demo subscriber: colony D-4 handles the flow live (full payload, before redaction).
  const handled: string[] = [];
  for (const tipo of ['demanda.recebida', 'demanda.categorizada'] as const) {
    bus.inscrever(tipo, 'D-4', (e) => {
      handled.push(e.tipo);
      log(
        `subscriber D-4 handled ${e.tipo} ${e.event_id} live (partition ${e.posicao?.particao ?? '?'}, offset ${e.posicao?.offset ?? '?'})`,
      );
    });
  }
  await bus.inscricoesProntas();

  // The demo colony: D-1a → D-1b → D-3, one flow (seed section 7.3), fresh ids each run.
  const correlacao_id = randomUUID();
  const flow = ['demanda.recebida', 'demanda.normalizada', 'demanda.categorizada'] as const;
  const origem = { 'demanda.recebida': 'D-1a', 'demanda.normalizada': 'D-1b', 'demanda.categorizada': 'D-3' };
  // each step caused by the previous one; the bridge writes them in that order (docs/ordering.md)
  const published: Array<{ event_id: string }> = [];
  for (const tipo of flow)
    published.push(
      await bus.publicar({
        tipo,
        origem: origem[tipo],
        correlacao_id,
        causation_id: published.at(-1)?.event_id,
        payload: { ...SAMPLE_PAYLOADS[tipo] },
      }),
    );
  log(`demo colony published ${published.length} events of flow ${correlacao_id}`);
  await bridge.start();

  const deadline = Date.now() + 60_000;
  let rows: Array<Record<string, unknown>> = [];
  while (Date.now() < deadline) {
    rows = (
      await pool.query<Record<string, unknown>>(
        'SELECT sequence_number::text, tipo, origem, payload FROM core.event_log WHERE correlacao_id = $1 ORDER BY sequence_number',
        [correlacao_id],
      )
    ).rows;
    if (rows.length === flow.length) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  if (rows.length !== flow.length)
    throw new Error(`the bridge wrote ${rows.length}/${flow.length} demo events within 60 s`);
  log('the flow in core.event_log (redacted: texto_bruto hashed, cidadao_id removed, coordinates rounded):');
  for (const r of rows)
    log(`  #${String(r.sequence_number)} ${String(r.tipo)} from ${String(r.origem)}: ${JSON.stringify(r.payload)}`);
  log(`bridge metrics: http://127.0.0.1:${bridgePort}/metrics, readiness: http://127.0.0.1:${bridgePort}/ready`);

  // The audit API over the same database, with a demo operator token.
  const auditConfig = loadAuditConfig({
    AUDIT_JWT_SECRET: process.env.AUDIT_JWT_SECRET ?? `demo-only-${randomBytes(24).toString('hex')}`,
  });
  const registry = new Registry();
  const auditBus = new EventBus({
    brokers,
    registryUrl: endpoints.SCHEMA_REGISTRY_URL,
    namespace,
    clientId: 'feromonios-audit-api-demo',
    pool,
    logger: silentLogger,
    metricsRegistry: registry,
  });
  const auditLogger = jsonLogger('audit-api', 'warn');
  const auditMetrics = new AuditMetrics(registry);
  const app = createAuditApp({ bus: auditBus, pool, config: auditConfig, logger: auditLogger, metrics: auditMetrics });
  const auditServer = await listenAuditServer(app, auditLogger, auditMetrics, auditPort, '127.0.0.1');
  const token = await signOperatorToken(
    tokenOptions(auditConfig),
    { sub: 'operador-demo', papel: 'operador' },
    { expiresIn: '8h' },
  );
  const traceUrl = `http://127.0.0.1:${auditPort}/api/events/trace/${correlacao_id}`;
  const res = await fetch(traceUrl, { headers: { authorization: `Bearer ${token}` } });
  const trace = (await res.json()) as { total: number; linhas: Array<{ sequence_number: string; tipo: string }> };
  if (res.status !== 200 || trace.total !== flow.length)
    throw new Error(`the audit API answered ${res.status} with ${trace.total} events for the demo trace`);
  log(
    `audit API on http://127.0.0.1:${auditPort}: trace of the demo flow answered ${res.status} with ${trace.total} events (${trace.linhas.map((l) => `#${l.sequence_number} ${l.tipo}`).join(', ')})`,
  );
  log(`try it (demo operator token, valid 8 h): curl -H "Authorization: Bearer ${token}" ${traceUrl}`);
  log(
    `or with the CLI: FEROMONIOS_API_URL=http://127.0.0.1:${auditPort} FEROMONIOS_TOKEN=${token} npx feromonios events trace ${correlacao_id} (docs/cli.md)`,
  );

  const shutdown = async (): Promise<void> => {
    auditServer.closeAllConnections();
    auditServer.close();
    await bridge.stop();
    await bus.encerrar();
    await auditBus.encerrar();
    await pool.end();
    server.close();
  };
  if (once) {
    await shutdown();
    return;
  }
  log('the bridge and the audit API keep running; Ctrl-C stops them (the services stay up: `npm run infra:down`).');
  process.once('SIGINT', () => void shutdown().then(() => process.exit(0)));
  process.once('SIGTERM', () => void shutdown().then(() => process.exit(0)));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
