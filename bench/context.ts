import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { Bridge } from '../bridge/bridge';
import { BridgeMetrics } from '../bridge/metrics';
import { DEFAULT_MEMORY_STAGING_ROWS } from '../bridge/memory-staging';
import { up } from '../infra/services';
import { migrateLatest } from '../migrations';
import { EventBus, silentLogger, type OpcoesEventBusEntrada } from '../sdk';

/** Progress lines go to stderr so the table on stdout stays clean. */
export const progress = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

export const BENCH_REDACTION_KEY = 'bench-only-redaction-key-0123456789abcdef';

export interface BenchContext {
  quick: boolean;
  /** `BRIDGE_MEMORY_STAGING_ROWS` of the bridges (`BENCH_MEMORY_STAGING_ROWS`; the bridge's default unless set). */
  memoryStagingRows: number;
  brokers: string[];
  registryUrl: string;
  serverUrl: string;
  /** A fresh migrated database (dropped at the end). */
  database(label: string): Promise<{ url: string; pool: pg.Pool }>;
  /** A bus in a namespace of its own, schemas synced. */
  bus(overrides?: Partial<OpcoesEventBusEntrada>): Promise<EventBus>;
  /**
   * The bridge (as deployed: redaction on, batches of 500) over `pool`, following `bus`'s
   * namespace; `metrics` lets the caller read its counters in-process. `groupId` (default: the
   * namespace's) lets a second bridge read the same topics from the beginning into another database.
   */
  bridge(bus: EventBus, pool: pg.Pool, metrics?: BridgeMetrics, groupId?: string): Promise<Bridge>;
  cleanup(): Promise<void>;
}

export async function createContext(quick: boolean): Promise<BenchContext> {
  const { endpoints } = await up();
  const brokers = endpoints.KAFKA_BROKERS.split(',');
  const probe = new pg.Client({ connectionString: endpoints.DATABASE_URL });
  await probe.connect();
  process.env.FEROMONIOS_PG_VERSION = (
    await probe.query<{ v: string }>("SELECT current_setting('server_version') AS v")
  ).rows[0]?.v.split(' ')[0];
  await probe.end();
  const runId = randomBytes(3).toString('hex');
  const cleanups: Array<() => Promise<void>> = [];
  let dbCount = 0;
  const memoryStagingRows = Number(process.env.BENCH_MEMORY_STAGING_ROWS ?? DEFAULT_MEMORY_STAGING_ROWS);
  const ctx: BenchContext = {
    quick,
    memoryStagingRows,
    brokers,
    registryUrl: endpoints.SCHEMA_REGISTRY_URL,
    serverUrl: endpoints.DATABASE_URL,
    async database(label) {
      const name = `fero_bench_${runId}_${label}_${dbCount++}`;
      const admin = new pg.Client({ connectionString: endpoints.DATABASE_URL });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${name}`).finally(() => admin.end());
      const u = new URL(endpoints.DATABASE_URL);
      u.pathname = `/${name}`;
      const url = u.toString();
      await migrateLatest(url);
      const dbPool = new pg.Pool({ connectionString: url, max: 8 });
      dbPool.on('error', () => undefined);
      cleanups.push(async () => {
        await dbPool.end();
        const a = new pg.Client({ connectionString: endpoints.DATABASE_URL });
        await a.connect();
        await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => a.end());
      });
      return { url, pool: dbPool };
    },
    async bus(overrides = {}) {
      const b = new EventBus({
        brokers,
        registryUrl: endpoints.SCHEMA_REGISTRY_URL,
        namespace: `bench${randomBytes(3).toString('hex')}`,
        logger: silentLogger,
        topics: { partitions: 3, replicationFactor: -1, retentionMs: 3_600_000 },
        ...overrides,
      });
      await b.sincronizarSchemas();
      cleanups.push(() => b.encerrar());
      return b;
    },
    async bridge(bus, dbPool, metrics = new BridgeMetrics(), groupId = `${bus.topics.namespace}-bridge`) {
      const bridge = new Bridge({
        brokers,
        clientId: 'bench-bridge',
        groupId,
        pool: dbPool,
        registry: bus.registry,
        catalog: bus.catalog,
        topics: bus.topics,
        topicSettings: bus.options.topics,
        redaction: { key: BENCH_REDACTION_KEY, coordinateDecimals: 2 },
        batchSize: Number(process.env.BENCH_BRIDGE_BATCH ?? 500),
        memoryStagingRows,
        // BENCH_DECODE_THREAD=off: records decoded on the bridge's thread (the measure of the decode thread)
        decodeThread: process.env.BENCH_DECODE_THREAD !== 'off',
        flushIntervalMs: 50,
        topicRefreshMs: 1000,
        maxPayloadBytes: 1024 * 1024,
        dlqMaxTentativas: 5,
        logger: silentLogger,
        metrics,
      });
      await bridge.start();
      cleanups.push(() => bridge.stop());
      return bridge;
    },
    async cleanup() {
      for (const c of cleanups.reverse()) await c().catch(() => undefined);
    },
  };
  return ctx;
}
