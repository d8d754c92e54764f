import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type pg from 'pg';
import { BENCH_REDACTION_KEY, progress, type BenchContext } from './context';
import { fmt } from './stats';

/** A sample of one process, every 10 s. */
interface Sample {
  t: number;
  rssMb: number;
  heapMb: number;
}

export interface SoakWindow {
  /** Minutes since the start of publishing, at the window's end. */
  endMin: number;
  published: number;
  logP99Ms: number;
  logP50Ms: number;
  maxLogLag: number;
  maxColonyLag: number;
}

export interface SoakResult {
  minutes: number;
  rate: number;
  windows: SoakWindow[];
  processes: Array<{
    name: string;
    firstHeapMb: number;
    lastHeapMb: number;
    heapSlopeMbPer10Min: number;
    rssSlopeMbPer10Min: number;
    lastRssMb: number;
    bounded: boolean;
  }>;
  lagBounded: boolean;
  delivered: { log: number; colony: number; published: number };
  ok: boolean;
}

const ROOT = path.join(__dirname, '..');

/**
 * The soak (`npm run bench -- --soak[=minutes]`, 30 by default): `rate` events/s for the whole
 * time from a publisher process, through a bridge process (bridge/main.ts, as deployed) into the
 * log, and to a colony process subscribing with an inbox. Every 10 s: RSS of each process, the
 * heap it holds (after a full GC in the workers; used heap from the bridge's /metrics), the
 * log's lag (published − logged) and the colony's (published − handled). Per window: publish →
 * log p50/p99 (`criado_em − timestamp`, both TIMESTAMPTZ(2): ±10 ms). Fails when a process's
 * heap grows from the second window to the last by more than 25 % + 16 MB, when the last
 * window's lag is above both 10 s of events and 1.2× the second window's, or when an event
 * never reaches the log or the colony.
 */
export async function runSoak(ctx: BenchContext, minutes: number, rate = 1000): Promise<SoakResult> {
  const db = await ctx.database('soak');
  const bus = await ctx.bus({ clientId: 'soak-setup' });
  const namespace = bus.topics.namespace;
  const seconds = Math.round(minutes * 60);
  const windowMs = Math.min(5 * 60_000, (seconds * 1000) / 3);
  // the colony's inbox handler takes up to 100 events of a fetch per transaction
  // (`eventosPorTransacao`, docs/consuming.md): one commit and fsync per batch, not per event;
  // it consumes 6 partitions in parallel
  const partitions = 6;
  const cfg = {
    brokers: ctx.brokers,
    registryUrl: ctx.registryUrl,
    databaseUrl: db.url,
    namespace,
    rate,
    seconds,
    partitions,
  };
  const children: ChildProcess[] = [];
  const kill = () => children.forEach((c) => c.kill('SIGTERM'));
  process.once('exit', kill);
  const worker = (role: string) => {
    const c = spawn(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', path.join(__dirname, 'soak-worker.ts'), role, JSON.stringify(cfg)],
      {
        cwd: ROOT,
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      },
    );
    children.push(c);
    return c;
  };
  const port = await freePort();
  const bridgeLog = fs.openSync(path.join('/tmp', `feromonios-soak-bridge-${namespace}.log`), 'w');
  const bridge = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bridge/main.ts')], {
    cwd: ROOT,
    stdio: ['ignore', bridgeLog, bridgeLog],
    env: {
      ...process.env,
      KAFKA_BROKERS: ctx.brokers.join(','),
      SCHEMA_REGISTRY_URL: ctx.registryUrl,
      DATABASE_URL: db.url,
      FEROMONIOS_TOPIC_NAMESPACE: namespace,
      BRIDGE_REDACTION_KEY: BENCH_REDACTION_KEY,
      BRIDGE_GROUP_ID: `${namespace}-soak-bridge`,
      BRIDGE_PORT: String(port),
      BRIDGE_TOPIC_REFRESH_MS: '1000',
      LOG_LEVEL: 'warn',
    },
  });
  children.push(bridge);
  const samples = new Map<string, Sample[]>([
    ['publisher', []],
    ['bridge', []],
    ['colony', []],
  ]);
  const counts = { published: 0, colony: 0 };
  const heaps = new Map<string, number>();
  const colonyProc = worker('colony');
  await new Promise<void>((resolve, reject) => {
    colonyProc.on('message', (m: { ready?: boolean }) => m.ready && resolve());
    colonyProc.once('exit', (code) => reject(new Error(`colony exited ${code}`)));
  });
  colonyProc.on('message', (m: { count?: number; heapMb?: number }) => {
    if (m.count !== undefined) counts.colony = m.count;
    if (m.heapMb !== undefined) heaps.set('colony', m.heapMb);
  });
  progress(
    `soak: ${minutes} min at ${rate}/s, windows of ${fmt(windowMs / 60_000)} min (publisher, bridge and colony in their own processes)…`,
  );
  const started = Date.now();
  const publisher = worker('publisher');
  let publisherDone = false;
  publisher.on('message', (m: { count?: number; heapMb?: number; done?: boolean }) => {
    if (m.count !== undefined) counts.published = m.count;
    if (m.heapMb !== undefined) heaps.set('publisher', m.heapMb);
    if (m.done) publisherDone = true;
  });
  const lags: Array<{ t: number; log: number; colony: number }> = [];
  const pids = { publisher: publisher.pid, bridge: bridge.pid, colony: colonyProc.pid };
  while (!publisherDone) {
    await new Promise((r) => setTimeout(r, 10_000));
    const t = Date.now() - started;
    // one scrape of the bridge's /metrics: its heap, and how many events it wrote to the log (its
    // counter, not a count(*) over millions of rows every 10 s on the machine being measured)
    const scraped = await scrapeBridge(port);
    if (scraped.heapMb !== undefined) heaps.set('bridge', scraped.heapMb);
    const logged = scraped.inserted ?? 0;
    lags.push({
      t,
      log: Math.max(0, counts.published - logged),
      colony: Math.max(0, counts.published - counts.colony),
    });
    for (const [name, pid] of Object.entries(pids)) {
      const rss = rssMb(pid);
      const heap = heaps.get(name);
      if (rss !== undefined && heap !== undefined) samples.get(name)?.push({ t, rssMb: rss, heapMb: heap });
    }
    const last = lags.at(-1);
    progress(
      `soak: ${fmt(t / 60_000)} min, ${counts.published} published, log lag ${last?.log}, colony lag ${last?.colony}, RSS ${Object.entries(
        pids,
      )
        .map(([n, p]) => `${n} ${fmt(rssMb(p) ?? 0, 0)} MB`)
        .join(', ')}`,
    );
  }
  // the tail: everything published reaches the log and the colony
  const deadline = Date.now() + 120_000;
  while (
    Date.now() < deadline &&
    (((await scrapeBridge(port)).inserted ?? 0) < counts.published || counts.colony < counts.published)
  )
    await new Promise((r) => setTimeout(r, 1000));
  const delivered = { log: await logCount(db.pool), colony: counts.colony, published: counts.published };
  kill();

  const windows: SoakWindow[] = [];
  for (let end = windowMs; end <= seconds * 1000 + 1; end += windowMs) {
    const from = new Date(started + end - windowMs).toISOString();
    const to = new Date(started + end).toISOString();
    const { rows } = await db.pool.query<{ n: string; p50: number | null; p99: number | null }>(
      `SELECT count(*)::text AS n,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM criado_em - timestamp) * 1000) AS p50,
              percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM criado_em - timestamp) * 1000) AS p99
         FROM core.event_log WHERE timestamp >= $1 AND timestamp < $2`,
      [from, to],
    );
    const inWindow = lags.filter((l) => l.t > end - windowMs && l.t <= end);
    windows.push({
      endMin: end / 60_000,
      published: Number(rows[0]?.n ?? 0),
      logP50Ms: Number(rows[0]?.p50 ?? NaN),
      logP99Ms: Number(rows[0]?.p99 ?? NaN),
      maxLogLag: Math.max(0, ...inWindow.map((l) => l.log)),
      maxColonyLag: Math.max(0, ...inWindow.map((l) => l.colony)),
    });
  }
  const inWin = (s: Sample[], k: number) => s.filter((x) => x.t > k * windowMs && x.t <= (k + 1) * windowMs);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  const processes = [...samples.entries()].map(([name, s]) => {
    const first = median(inWin(s, 1).map((x) => x.heapMb));
    const last = median(inWin(s, windows.length - 1).map((x) => x.heapMb));
    const after = s.filter((x) => x.t > windowMs);
    return {
      name,
      firstHeapMb: first,
      lastHeapMb: last,
      heapSlopeMbPer10Min: slope(after.map((x) => [x.t, x.heapMb])) * 600_000,
      rssSlopeMbPer10Min: slope(after.map((x) => [x.t, x.rssMb])) * 600_000,
      lastRssMb: s.at(-1)?.rssMb ?? NaN,
      bounded: last <= first * 1.25 + 16,
    };
  });
  const second = windows[1];
  const lastW = windows.at(-1);
  // bounded: the last window's worst lag is within 10 s of events, or no more than 20 % above
  // the second window's (a consumer that falls behind a little more every window fails)
  const within = (last: number, early: number) => last <= 10 * rate || last <= 1.2 * early;
  const lagBounded =
    second !== undefined &&
    lastW !== undefined &&
    within(lastW.maxLogLag, second.maxLogLag) &&
    within(lastW.maxColonyLag, second.maxColonyLag);
  const ok =
    processes.every((p) => p.bounded) &&
    lagBounded &&
    delivered.log >= delivered.published &&
    delivered.colony >= delivered.published;
  return { minutes, rate, windows, processes, lagBounded, delivered, ok };
}

/** The soak's section of BENCHMARKS.md. */
export function soakMarkdown(r: SoakResult, command: string): string {
  const line = (cells: Array<string | number>) => `| ${cells.join(' | ')} |`;
  return [
    `## Soak: ${r.minutes} min at ${r.rate} events/s — ${r.ok ? 'passed' : '**failed**'}`,
    '',
    `\`${command}\` on ${new Date().toISOString().slice(0, 10)}. Publisher, bridge (bridge/main.ts) and a colony with inbox, each its own process. Published ${r.delivered.published.toLocaleString('en-US')}; in the log ${r.delivered.log.toLocaleString('en-US')}; handled by the colony ${r.delivered.colony.toLocaleString('en-US')}.`,
    '',
    line(['window end (min)', 'events', 'publish → log p50 ms', 'p99 ms', 'max log lag', 'max colony lag']),
    line(['---', '---', '---', '---', '---', '---']),
    ...r.windows.map((w) =>
      line([fmt(w.endMin), w.published, fmt(w.logP50Ms), fmt(w.logP99Ms), w.maxLogLag, w.maxColonyLag]),
    ),
    '',
    line([
      'process',
      'heap, 2nd window MB',
      'heap, last window MB',
      'heap slope MB/10 min',
      'RSS slope MB/10 min',
      'RSS at end MB',
      'bounded',
    ]),
    line(['---', '---', '---', '---', '---', '---', '---']),
    ...r.processes.map((p) =>
      line([
        p.name,
        fmt(p.firstHeapMb),
        fmt(p.lastHeapMb),
        fmt(p.heapSlopeMbPer10Min, 2),
        fmt(p.rssSlopeMbPer10Min, 2),
        fmt(p.lastRssMb, 0),
        p.bounded ? 'yes' : '**no**',
      ]),
    ),
    '',
    `Lag ${r.lagBounded ? 'bounded' : '**not bounded**'} (the last window's worst lag within 10 s of events, or at most 20 % above the second window's). Heap: after a full GC in the workers; the bridge's used heap from its /metrics (sampled, so noisier).`,
    '',
  ].join('\n');
}

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const num = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const den = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

const logCount = async (pool: pg.Pool): Promise<number> =>
  Number((await pool.query<{ n: string }>('SELECT count(*)::text AS n FROM core.event_log')).rows[0]?.n ?? 0);

function rssMb(pid: number | undefined): number | undefined {
  try {
    const kb = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) / 1024;
  } catch {
    return undefined;
  }
}

/** The bridge's used heap (+ external) in MB and its `feromonios_bridge_inserted_total` (all types), from /metrics. */
async function scrapeBridge(port: number): Promise<{ heapMb?: number; inserted?: number }> {
  try {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const used = /^nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1];
    const external = /^nodejs_external_memory_bytes (\S+)/m.exec(text)?.[1];
    const inserted = [...text.matchAll(/^feromonios_bridge_inserted_total\{[^}]*\} (\S+)/gm)].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
    return {
      ...(used === undefined ? {} : { heapMb: (Number(used) + Number(external ?? 0)) / 2 ** 20 }),
      inserted,
    };
  } catch {
    return {};
  }
}

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
