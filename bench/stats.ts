import fs from 'node:fs';
/** Percentile of an unsorted sample (nearest rank), in the sample's unit. */
export function percentile(sample: number[], p: number): number {
  if (sample.length === 0) return NaN;
  const s = [...sample].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] as number;
}

export interface LatencySummary {
  p50: number;
  p95: number;
  p99: number;
  n: number;
}

export const summarize = (ms: number[]): LatencySummary => ({
  p50: percentile(ms, 50),
  p95: percentile(ms, 95),
  p99: percentile(ms, 99),
  n: ms.length,
});

export const now = (): number => Number(process.hrtime.bigint()) / 1e6;

export const fmt = (v: number, digits = 1): string =>
  Number.isFinite(v)
    ? v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '—';

/** Runs `task(i)` for i in [0, n) with at most `concurrency` in flight. */
export async function pool(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

/** Calls `tick(i)` at a fixed rate (events per second) for `seconds`, not waiting for each call. */
export async function atRate(
  perSecond: number,
  seconds: number,
  tick: (i: number) => void,
  progress?: (sent: number) => void,
): Promise<number> {
  const total = Math.round(perSecond * seconds);
  const start = now();
  let i = 0;
  while (i < total) {
    const due = Math.min(total, Math.floor(((now() - start) / 1000) * perSecond) + 1);
    while (i < due) tick(i++);
    if (i % perSecond < 10) progress?.(i);
    await new Promise((r) => setTimeout(r, 5));
  }
  return total;
}

/**
 * Memory a reader holds: `fn` calls `probe()` at the points where it holds the most (after
 * collecting garbage, so transient allocations do not count). Needs `--expose-gc` (npm run
 * bench sets it). Returns the largest heap + external above the baseline, in MB.
 */
export async function retainedMemory<T>(fn: (probe: () => void) => Promise<T>): Promise<{ result: T; peakMb: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc (npm run bench does)');
  gc();
  const heap = (): number => {
    const m = process.memoryUsage();
    return m.heapUsed + m.external;
  };
  const baseline = heap();
  let peak = 0;
  const result = await fn(() => {
    gc();
    peak = Math.max(peak, heap() - baseline);
  });
  return { result, peakMb: peak / 1024 / 1024 };
}

/** Wall time of `fn`, in milliseconds. */
export async function timedMs<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const t0 = now();
  const result = await fn();
  return { result, ms: now() - t0 };
}

/**
 * CPU seconds used so far by this process and by the processes named `postgres` or `java` (the
 * broker and the registry), from /proc (Linux; clock ticks of 1/100 s): each one's own time plus
 * that of its children already reaped. A PostgreSQL backend that exits between two readings (a
 * pool closing an idle connection) is reaped by the postmaster, so its time moves into the
 * postmaster's children's time rather than out of the sum — counting only live processes had
 * the sink's `COPY` reference read 0.01 CPU-s per 10,000 rows in some runs, the bridge's idle
 * connections closing during it. Differences of two readings give the CPU a phase cost each side.
 */
export function cpuSeconds(): { node: number; postgres: number; java: number } {
  const u = process.cpuUsage();
  const out = { node: (u.user + u.system) / 1e6, postgres: 0, java: 0 };
  let pids: string[] = [];
  try {
    pids = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return out;
  }
  for (const pid of pids) {
    try {
      const { name, ticks } = procCpuTicks(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
      if (name === 'postgres') out.postgres += ticks / 100;
      else if (name === 'java') out.java += ticks / 100;
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/**
 * A process's name and CPU clock ticks from its `/proc/<pid>/stat` line: its own user and system
 * time plus its reaped children's (proc(5) fields 14–17: utime, stime, cutime, cstime). The name
 * is between the first `(` and the last `)`, so a name holding spaces or parentheses is read whole.
 */
export function procCpuTicks(stat: string): { name: string; ticks: number } {
  const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3, the state
  return { name, ticks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]) };
}
