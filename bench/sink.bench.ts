import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type pg from 'pg';
import type { Counter, Histogram } from 'prom-client';
import type { EventBus, PublicarEventoDto } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { BridgeMetrics } from '../bridge/metrics';
import { progress, type BenchContext } from './context';
import { atRate, cpuSeconds, now, summarize, type LatencySummary } from './stats';

export interface SinkRow {
  events: number;
  bridgePerSec: number;
  /** Seconds from the bridge's start until every event was staged or logged (the drain's first phase). */
  stagedSeconds: number;
  /** Events already in the log when every event was staged (the rest is the tail's move). */
  loggedWhenStaged: number;
  /** Seconds from the bridge's start until every event was in the log. */
  bridgeSeconds: number;
  /** Seconds the sequencer spent in its moves into the log (one at a time, under the log's lock). */
  moveSeconds: number;
  /** Seconds of the sequencer's upkeep of staging (`VACUUM (ANALYZE)`, beside its rounds). */
  upkeepSeconds: number;
  /** Records the bridge consumed for the events (more than `events`: batches consumed again). */
  consumed: number;
  /** Times the leader dropped the events it held in memory (its lock lost; ADR 0029). */
  memoryDrops: number;
  /** `BRIDGE_MEMORY_STAGING_ROWS` the drains ran with (0: the table alone). */
  memoryStagingRows: number;
  /** Rows per second of the reference's median load (the ratio's denominator). */
  copyPerSec: number;
  /** Each drain beside the load that followed it, in the order they ran; the median pair gives the figures above. */
  pairs: Array<{ bridgePerSec: number; copyPerSec: number; ratio: number; bridgeCpu: Cpu }>;
  copyMethod: string;
  ratio: number;
  /** CPU seconds per 10,000 events: the bench process (the bridge runs in it), PostgreSQL, the broker/registry JVMs. */
  bridgeCpu: Cpu;
  /** CPU seconds per 10,000 rows of the COPY reference (PostgreSQL alone does the work). */
  copyCpu: Cpu;
  visible: LatencySummary & { rate: number; seconds: number };
}

/** Drains of the bridge, each followed by a load of the COPY reference; the median pair's ratio is the result. */
const PAIRS = Number(process.env.BENCH_SINK_PAIRS ?? 3);

type Cpu = ReturnType<typeof cpuSeconds>;

const per10k = (a: Cpu, b: Cpu, n: number): Cpu => ({
  node: ((b.node - a.node) * 10_000) / n,
  postgres: ((b.postgres - a.postgres) * 10_000) / n,
  java: ((b.java - a.java) * 10_000) / n,
});

/** A counter's value summed over its labels. */
const total = async (c: Counter): Promise<number> => (await c.get()).values.reduce((a, v) => a + v.value, 0);

/** Seconds a histogram of durations observed in all. */
const observedSeconds = async (h: Histogram): Promise<number> =>
  (await h.get()).values.filter((v) => v.metricName?.endsWith('_sum')).reduce((a, v) => a + v.value, 0);

const count = async (pool: pg.Pool): Promise<number> =>
  Number((await pool.query<{ n: string }>('SELECT count(*) AS n FROM core.event_log')).rows[0]?.n ?? 0);

/** A citizen's demand with personal data to redact: text hashed, id removed, coordinates rounded. */
const recebida = (i: number): PublicarEventoDto => ({
  tipo: 'demanda.recebida',
  origem: 'D-1a',
  payload: {
    ...SAMPLE_PAYLOADS['demanda.recebida'],
    demanda_id: randomUUID(),
    texto_bruto: `Buraco na rua ${i}, em frente ao número ${i % 500}, há três semanas sem reparo`,
    cidadao_id: `u${i}`,
    localizacao_bruta: { lat: -23.55 + (i % 1000) / 1e5, lng: -46.63 - (i % 777) / 1e5 },
  },
});

interface Drain {
  seconds: number;
  stagedSeconds: number;
  loggedWhenStaged: number;
  moveSeconds: number;
  upkeepSeconds: number;
  consumed: number;
  memoryDrops: number;
  cpu: Cpu;
}

/** One drain and the load of the reference right after it. */
interface Pair {
  drain: Drain;
  load: { seconds: number; cpu: Cpu };
  /** The drain's rate over the load's. */
  ratio: number;
}

/**
 * A bridge started over `pool` (a consumer group of its own when `groupId` is given) until the
 * `n` events already in the topics are in its log, then stopped: nothing of it runs beside the
 * next measurement. Progress is read from the bridge's own
 * counters, in this process: a count(*) of the log or of staging every few milliseconds would be
 * PostgreSQL work inside the measured drain. When every event was staged, staging ended (the rest
 * of the drain is the tail's move, ADR 0021).
 */
async function drain(ctx: BenchContext, bus: EventBus, pool: pg.Pool, n: number, groupId?: string): Promise<Drain> {
  const metrics = new BridgeMetrics();
  const t0 = now();
  const cpu0 = cpuSeconds();
  const bridge = await ctx.bridge(bus, pool, metrics, groupId);
  let last = 0;
  let stagedSeconds: number | undefined;
  let loggedWhenStaged = 0;
  for (;;) {
    const staged = await total(metrics.staged);
    const logged = await total(metrics.inserted);
    if (stagedSeconds === undefined && staged >= n) {
      stagedSeconds = (now() - t0) / 1000;
      loggedWhenStaged = logged;
    }
    // the counters say the sequencer wrote n events; the log itself is counted once, to be sure
    if (logged >= n && (await count(pool)) >= n) break;
    if (logged - last >= n / 5) {
      progress(`sink: ${logged}/${n} in the log`);
      last = logged;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  const seconds = (now() - t0) / 1000;
  const cpu = per10k(cpu0, cpuSeconds(), n);
  // records consumed for the n events: more means batches were consumed again (a lane restarted,
  // the leader's memory dropped), which a rate alone does not show
  const consumed = await total(metrics.consumed);
  const memoryDrops = await total(metrics.memoryDrops);
  await bridge.stop();
  return {
    seconds,
    stagedSeconds: stagedSeconds ?? seconds,
    loggedWhenStaged: stagedSeconds === undefined ? n : loggedWhenStaged,
    cpu,
    moveSeconds: await observedSeconds(metrics.insertDuration),
    upkeepSeconds: await observedSeconds(metrics.stagingVacuums),
    consumed,
    memoryDrops,
  };
}

/**
 * Exports the log of `pool` to `file` for the reference's loads and returns the load: binary
 * `COPY FROM` the file, or, on a server that may not read or write files (not a superuser), the
 * rows read back through this process and inserted (`onFallback` is told how).
 */
async function exportRows(
  pool: pg.Pool,
  file: string,
  onFallback: (method: string) => void,
): Promise<(pool: pg.Pool) => Promise<void>> {
  try {
    // the log is partitioned by month (ADR 0017): COPY TO takes a query, not the parent table
    await pool.query(`COPY (SELECT * FROM core.event_log) TO '${file}' (FORMAT binary)`);
    return async (p) => void (await p.query(`COPY core.event_log FROM '${file}' (FORMAT binary)`));
  } catch (err) {
    onFallback(`INSERT of the rows read back (server file COPY failed: ${(err as Error).message})`);
    const { rows } = await pool.query<{ r: string }>('SELECT row_to_json(l)::text AS r FROM core.event_log l');
    return async (p) => {
      for (let i = 0; i < rows.length; i += 5000)
        await p.query(
          'INSERT INTO core.event_log SELECT * FROM json_populate_recordset(NULL::core.event_log, $1::json)',
          [
            `[${rows
              .slice(i, i + 5000)
              .map((x) => x.r)
              .join(',')}]`,
          ],
        );
    };
  }
}

/**
 * The bridge mirroring events already in the topics into `core.event_log` (redaction on, every
 * seed index present), against PostgreSQL `COPY` of the same rows into an identical table; then
 * publish → visible-in-log latency at a steady rate (confirmed publishing, which polls the log).
 */
export async function benchSink(ctx: BenchContext): Promise<SinkRow> {
  const n = ctx.quick ? 20_000 : 200_000;
  const bus = await ctx.bus({ clientId: 'bench-sink' });
  progress(`sink: publishing ${n} events into the topics…`);
  for (let i = 0; i < n; i += 500) {
    await bus.publicarLote(Array.from({ length: Math.min(500, n - i) }, (_, k) => recebida(i + k)));
    if (i % 20_000 === 0) progress(`sink: ${i}/${n} published`);
  }
  // Drains and loads of the reference alternate — drain, COPY, drain, COPY, drain, COPY — and
  // each drain's ratio is to the load that follows it: this machine's speed drifts by a third
  // within minutes (one afternoon's COPY measured 31k to 50k rows/s), so measurements taken one
  // after the other are the only fair pairs. The reported ratio is the median pair's.
  // Every drain reads the same records from the beginning (a consumer group of its own) into a
  // fresh database, and its bridge is stopped before the load: each measurement runs alone.
  const db = await ctx.database('sink');
  const pairs: Pair[] = [];
  const file = `/tmp/feromonios-bench-${randomUUID()}.copy`;
  let copyMethod = 'COPY FROM file (binary), core.event_log of a fresh database';
  let load: ((pool: pg.Pool) => Promise<void>) | undefined;
  try {
    for (let k = 0; k < PAIRS; k++) {
      progress(`sink: drain ${k + 1}/${PAIRS}: the bridge writing ${n} events…`);
      const drained =
        k === 0
          ? await drain(ctx, bus, db.pool, n)
          : await drain(ctx, bus, (await ctx.database('sink_drain')).pool, n, `${bus.topics.namespace}-bridge-${k}`);
      // The reference writes the same rows into the same table: `core.event_log` of another
      // database migrated like the first (monthly partitions, every seed index, the
      // `core.event_ids` trigger and foreign key), so PostgreSQL does for it everything it does
      // for the bridge's rows except what the bridge itself adds (staging, ordering).
      load ??= await exportRows(db.pool, file, (m) => (copyMethod = m));
      progress(`sink: load ${k + 1}/${PAIRS}: COPY of the same rows into core.event_log of a fresh database…`);
      const ref = await ctx.database('sink_copy');
      const c0 = now();
      const copyCpu0 = cpuSeconds();
      await load(ref.pool);
      const loaded = { seconds: (now() - c0) / 1000, cpu: per10k(copyCpu0, cpuSeconds(), n) };
      if ((await count(ref.pool)) !== n) throw new Error('COPY reference did not copy every row');
      pairs.push({ drain: drained, load: loaded, ratio: loaded.seconds / drained.seconds });
    }
  } finally {
    fs.rmSync(file, { force: true });
  }
  const median = [...pairs].sort((a, b) => a.ratio - b.ratio)[Math.floor(PAIRS / 2)] as Pair;

  const rate = 1000;
  const seconds = ctx.quick ? 8 : 30;
  progress(`sink: publish → visible in the log at ${rate}/s for ${seconds} s…`);
  // the first drain's bridge again (its consumer group resumes after the drained records)
  await ctx.bridge(bus, db.pool);
  const confirmed = await ctx.bus({ clientId: 'bench-visible', namespace: bus.topics.namespace, pool: db.pool });
  const lat: number[] = [];
  const pending: Array<Promise<void>> = [];
  await atRate(rate, seconds, (i) => {
    const s = now();
    pending.push(
      confirmed
        .publicar(recebida(i), { confirmar: true, timeoutConfirmacaoMs: 30_000 })
        .then(() => void lat.push(now() - s)),
    );
  });
  await Promise.all(pending);
  return {
    events: n,
    bridgePerSec: n / median.drain.seconds,
    stagedSeconds: median.drain.stagedSeconds,
    loggedWhenStaged: median.drain.loggedWhenStaged,
    bridgeSeconds: median.drain.seconds,
    moveSeconds: median.drain.moveSeconds,
    upkeepSeconds: median.drain.upkeepSeconds,
    consumed: median.drain.consumed,
    memoryDrops: median.drain.memoryDrops,
    memoryStagingRows: ctx.memoryStagingRows,
    copyPerSec: n / median.load.seconds,
    pairs: pairs.map((p) => ({
      bridgePerSec: n / p.drain.seconds,
      copyPerSec: n / p.load.seconds,
      ratio: p.ratio,
      bridgeCpu: p.drain.cpu,
    })),
    copyMethod,
    ratio: median.ratio,
    bridgeCpu: median.drain.cpu,
    copyCpu: median.load.cpu,
    visible: { ...summarize(lat), rate, seconds },
  };
}
