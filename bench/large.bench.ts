import { benchAuditApi, seedAuditLog, type AuditRow } from './audit-api.bench';
import { progress, type BenchContext } from './context';
import { retainedMemory, timedMs } from './stats';

/**
 * The 10M-row point (`--10m`): one log of `n` rows, then the audit API benchmark on it and
 * `replayStream` over all of it (time, and memory held probed every 100,000 events).
 */
export async function benchLarge(
  ctx: BenchContext,
  n: number,
): Promise<{ audit: { rows: number; results: AuditRow[] }; replay: { events: number; ms: number; peakMb: number } }> {
  const db = await ctx.database('large');
  progress(`${n.toLocaleString('en-US')} rows: seeding (indexes built after the load)…`);
  await seedAuditLog(db.pool, n, `${n / 1e6}M`);
  const audit = await benchAuditApi(ctx, n, db);
  const bus = await ctx.bus({ pool: db.pool });
  const stream = async (probe?: () => void): Promise<number> => {
    let c = 0;
    for await (const e of bus.replayStream(0)) {
      if (e) c++;
      if (c % 100_000 === 0) {
        probe?.();
        if (c % 1_000_000 === 0) progress(`replayStream at ${n / 1e6}M: ${c.toLocaleString('en-US')} events`);
      }
    }
    return c;
  };
  progress(`replayStream over ${n.toLocaleString('en-US')} rows: time…`);
  const timed = await timedMs(() => stream());
  progress(`replayStream over ${n.toLocaleString('en-US')} rows: memory held…`);
  const mem = await retainedMemory((probe) => stream(probe));
  if (timed.result !== n || mem.result !== n) throw new Error(`replayStream read ${timed.result} of ${n} rows`);
  return { audit, replay: { events: n, ms: timed.ms, peakMb: mem.peakMb } };
}
