import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import type pg from 'pg';
import type { Counter, Histogram } from 'prom-client';
import type { PublicarEventoDto } from '../sdk';
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
  /** Rows per second of the reference's median load (the ratio's denominator). */
  copyPerSec: number;
  /** Rows per second of each load of the reference, in the order they ran. */
  copyLoadsPerSec: number[];
  copyMethod: string;
  ratio: number;
  /** CPU seconds per 10,000 events: the bench process (the bridge runs in it), PostgreSQL, the broker/registry JVMs. */
  bridgeCpu: { node: number; postgres: number; java: number };
  /** CPU seconds per 10,000 rows of the COPY reference (PostgreSQL alone does the work). */
  copyCpu: { node: number; postgres: number; java: number };
  visible: LatencySummary & { rate: number; seconds: number };
}

/** Loads of the COPY reference, each into a fresh database; the median's rate is the reference. */
const COPY_LOADS = 3;

const per10k = (a: ReturnType<typeof cpuSeconds>, b: ReturnType<typeof cpuSeconds>, n: number) => ({
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
  const db = await ctx.database('sink');
  progress(`sink: bridge draining ${n} events…`);
  const metrics = new BridgeMetrics();
  const t0 = now();
  const cpu0 = cpuSeconds();
  await ctx.bridge(bus, db.pool, metrics);
  // progress is read from the bridge's own counters, in this process: a count(*) of the log or
  // of staging every few milliseconds would be PostgreSQL work inside the measured drain. When
  // every event was staged, staging ended (the rest of the drain is the tail's move, ADR 0021).
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
    if (logged >= n && (await count(db.pool)) >= n) break;
    if (logged - last >= n / 10) {
      progress(`sink: ${logged}/${n} in the log`);
      last = logged;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  const bridgeSeconds = (now() - t0) / 1000;
  const bridgeCpu = per10k(cpu0, cpuSeconds(), n);
  const moveSeconds = await observedSeconds(metrics.insertDuration);
  const upkeepSeconds = await observedSeconds(metrics.stagingVacuums);

  // The reference writes the same rows into the same table: `core.event_log` of another
  // database migrated like the first (monthly partitions, every seed index, the `core.event_ids`
  // trigger and foreign key), so PostgreSQL does for it everything it does for the bridge's rows
  // except what the bridge itself adds (staging, ordering).
  // Loaded COPY_LOADS times, each into a database of its own, and the median load gives the
  // ratio: this machine's COPY swung from 31k to 50k rows/s between runs of one afternoon, so one
  // load could make the ratio by itself; the three rates are reported beside it.
  progress(`sink: COPY of the same rows into core.event_log of another database, ${COPY_LOADS} times…`);
  const file = `/tmp/feromonios-bench-${randomUUID()}.copy`;
  let copyMethod = 'COPY FROM file (binary), core.event_log of a fresh database';
  let load: (pool: pg.Pool) => Promise<void>;
  try {
    // the log is partitioned by month (ADR 0017): COPY TO takes a query, not the parent table
    await db.pool.query(`COPY (SELECT * FROM core.event_log) TO '${file}' (FORMAT binary)`);
    load = async (pool) => void (await pool.query(`COPY core.event_log FROM '${file}' (FORMAT binary)`));
  } catch (err) {
    // a server that may not read or write files (not a superuser): the rows go through this process
    copyMethod = `INSERT of the rows read back (server file COPY failed: ${(err as Error).message})`;
    const { rows } = await db.pool.query<{ r: string }>('SELECT row_to_json(l)::text AS r FROM core.event_log l');
    load = async (pool) => {
      for (let i = 0; i < rows.length; i += 5000)
        await pool.query(
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
  const loads: Array<{ seconds: number; cpu: ReturnType<typeof per10k> }> = [];
  try {
    for (let k = 0; k < COPY_LOADS; k++) {
      const ref = await ctx.database('sink_copy');
      const c0 = now();
      const copyCpu0 = cpuSeconds();
      await load(ref.pool);
      loads.push({ seconds: (now() - c0) / 1000, cpu: per10k(copyCpu0, cpuSeconds(), n) });
      if ((await count(ref.pool)) !== n) throw new Error('COPY reference did not copy every row');
    }
  } finally {
    fs.rmSync(file, { force: true });
  }
  const median = [...loads].sort((a, b) => a.seconds - b.seconds)[Math.floor(COPY_LOADS / 2)]!;
  const copySeconds = median.seconds;

  const rate = 1000;
  const seconds = ctx.quick ? 8 : 30;
  progress(`sink: publish → visible in the log at ${rate}/s for ${seconds} s…`);
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
    bridgePerSec: n / bridgeSeconds,
    stagedSeconds: stagedSeconds ?? bridgeSeconds,
    loggedWhenStaged: stagedSeconds === undefined ? n : loggedWhenStaged,
    bridgeSeconds,
    moveSeconds,
    upkeepSeconds,
    copyPerSec: n / copySeconds,
    copyLoadsPerSec: loads.map((l) => n / l.seconds),
    copyMethod,
    ratio: n / bridgeSeconds / (n / copySeconds),
    bridgeCpu,
    copyCpu: median.cpu,
    visible: { ...summarize(lat), rate, seconds },
  };
}
