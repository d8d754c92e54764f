import { Bridge, type OpcoesBridge } from '../../bridge/bridge';
import { bridgeDatabasePool } from '../../bridge/config';
import { BridgeMetrics } from '../../bridge/metrics';
import { jsonLogger, silentLogger, type EventBus } from '../../sdk';
import { registerCleanup, serviceEnv, type TestDatabase } from './index';
import { spawnTs, type SpawnedProcess } from './spawn';

export const TEST_REDACTION_KEY = 'test-only-redaction-key-0123456789abcdef';

/** An in-process bridge following the bus's namespace into the test database; stopped at file end. */
export async function startTestBridge(
  bus: EventBus,
  db: TestDatabase,
  overrides: Partial<OpcoesBridge> & { dbQueryTimeoutMs?: number } = {},
): Promise<{ bridge: Bridge; metrics: BridgeMetrics; stop(): Promise<void> }> {
  // as bridge/main.ts builds it: its own pool, keepalive, a read timeout per statement
  const { dbQueryTimeoutMs, ...bridgeOverrides } = overrides;
  const pool = bridgeDatabasePool(db.url, dbQueryTimeoutMs ?? 60_000, 3);
  pool.on('error', () => undefined);
  const metrics = new BridgeMetrics();
  const bridge = new Bridge({
    brokers: serviceEnv().brokers,
    clientId: 'test-bridge',
    groupId: `${bus.topics.namespace}-bridge`,
    pool,
    registry: bus.registry,
    catalog: bus.catalog,
    topics: bus.topics,
    topicSettings: bus.options.topics,
    redaction: { key: TEST_REDACTION_KEY, coordinateDecimals: 2 },
    batchSize: 500,
    flushIntervalMs: 100,
    topicRefreshMs: 500,
    maxPayloadBytes: 1024 * 1024,
    dlqMaxTentativas: 3,
    logger: process.env.FEROMONIOS_TEST_BRIDGE_LOG
      ? jsonLogger('bridge', 'debug', (l) => process.stderr.write(l + '\n'))
      : silentLogger,
    metrics,
    ...bridgeOverrides,
  });
  let stopped: Promise<void> | undefined;
  /** Stops the bridge and closes its pool; once, however often it is called (file end included). */
  const stop = () => (stopped ??= bridge.stop().then(() => pool.end()));
  registerCleanup(stop);
  await bridge.start();
  return { bridge, metrics, stop };
}

/** Rows of core.event_log in sequence order. */
export async function logRows(
  db: TestDatabase,
): Promise<Array<Record<string, unknown> & { sequence_number: string; event_id: string }>> {
  const { rows } = await db.pool.query<Record<string, unknown> & { sequence_number: string; event_id: string }>(
    'SELECT sequence_number::text AS sequence_number, event_id::text, tipo, versao_schema, timestamp, origem, correlacao_id::text, causation_id::text, payload FROM core.event_log ORDER BY core.event_log.sequence_number', // the column, not its text alias
  );
  return rows;
}

export type BridgeProcess = SpawnedProcess;

let nextPort = 19500 + Math.floor(Math.random() * 400);

/** Runs `bridge/main.ts` as a real process (kill -9 tests, SIGTERM tests); killed at file end. */
export function spawnBridge(bus: EventBus, db: TestDatabase, env: Record<string, string> = {}): BridgeProcess {
  return spawnTs('bridge/main.ts', {
    DATABASE_URL: db.url,
    FEROMONIOS_TOPIC_NAMESPACE: bus.topics.namespace,
    BRIDGE_GROUP_ID: `${bus.topics.namespace}-bridge`,
    BRIDGE_REDACTION_KEY: TEST_REDACTION_KEY,
    BRIDGE_PORT: String(nextPort++),
    BRIDGE_TOPIC_REFRESH_MS: '1000',
    LOG_LEVEL: 'warn',
    ...env,
  });
}

/**
 * `n` readers polling `sequence_number > cursor` as colonies do, each with its own cursor;
 * `lastSeen()` gives each one's cursor; `stop()` ends them and returns every sequence_number each
 * one saw, in the order it saw them.
 */
export function startLogPollers(
  db: TestDatabase,
  n: number,
): { stop(): Promise<string[][]>; lastSeen(): Array<string | undefined> } {
  let reading = true;
  const seenBy: string[][] = Array.from({ length: n }, () => []);
  const readers = seenBy.map(async (seen) => {
    let cursor = 0n;
    while (reading) {
      const { rows } = await db.pool.query<{ s: string }>(
        'SELECT sequence_number::text AS s FROM core.event_log WHERE sequence_number > $1 ORDER BY sequence_number LIMIT 500',
        [cursor.toString()],
      );
      for (const r of rows) seen.push(r.s);
      if (rows.length > 0) cursor = BigInt(rows.at(-1)!.s);
      else await new Promise((r) => setTimeout(r, 5));
    }
    return seen;
  });
  return {
    stop: () => {
      reading = false;
      return Promise.all(readers);
    },
    lastSeen: () => seenBy.map((seen) => seen.at(-1)),
  };
}

/** The DLQ row of one event in one colony (or any colony), as the bridge keeps it. */
export async function dlqRow(
  db: TestDatabase,
  eventId: string,
  colonia?: string,
): Promise<{ status: string; tentativas: number; resolvido_em: Date | null } | undefined> {
  const { rows } = await db.pool.query<{ status: string; tentativas: number; resolvido_em: Date | null }>(
    'SELECT status, tentativas, resolvido_em FROM core.dead_letter_queue WHERE event_id = $1 AND ($2::text IS NULL OR colonia = $2)',
    [eventId, colonia ?? null],
  );
  return rows[0];
}
