/**
 * `npm run bench` (full) / `npm run bench -- --quick` (under 3 minutes): every benchmark of
 * BENCHMARKS.md against the real services, side by side with its reference in the same run.
 * `--only=publish,consume,live,sink,replay,audit,archive` runs a subset; `--10m` adds the 10M-row point (audit
 * API and `replayStream` on one log of 10,000,000 rows: about 15 more minutes, ~6 GB of disk). Progress on stderr, the table on
 * stdout, and BENCHMARKS.md rewritten with the machine, versions and exact command.
 */
import fs from 'node:fs';
import path from 'node:path';
import { benchArchive } from './archive.bench';
import { benchAuditApi } from './audit-api.bench';
import { benchConsume } from './consume.bench';
import { benchLarge } from './large.bench';
import { createContext, progress } from './context';
import { benchLiveLatency } from './live-latency.bench';
import { benchPublish } from './publish.bench';
import { benchReplay } from './replay.bench';
import { renderReport, type Results } from './report';
import { benchSink } from './sink.bench';
import { runSoak, soakMarkdown } from './soak';
import { SOAK_RESULTS, withSoakSection } from './report';

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const only = process.argv
    .find((a) => a.startsWith('--only='))
    ?.slice(7)
    .split(',');
  const want = (name: string): boolean => !only || only.includes(name);
  const started = Date.now();
  const soak = process.argv.find((a) => a === '--soak' || a.startsWith('--soak='));
  if (soak) return runSoakOnly(soak === '--soak' ? 30 : Number(soak.slice(7)));
  progress(`${quick ? 'quick' : 'full'} run; services…`);
  const ctx = await createContext(quick);
  const results: Results = {
    quick,
    command: `npm run bench${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
  };
  try {
    if (want('publish')) results.publish = await benchPublish(ctx);
    if (want('consume')) results.consume = await benchConsume(ctx);
    if (want('live')) results.live = await benchLiveLatency(ctx);
    if (want('sink')) results.sink = await benchSink(ctx);
    if (want('replay')) results.replay = await benchReplay(ctx);
    if (want('audit')) results.audit = [await benchAuditApi(ctx)];
    if (want('archive')) results.archive = await benchArchive(ctx);
    if (process.argv.includes('--10m')) {
      const large = await benchLarge(ctx, 10_000_000);
      (results.audit ??= []).push(large.audit);
      results.replayLarge = large.replay;
    }
  } finally {
    await ctx.cleanup();
  }
  results.seconds = (Date.now() - started) / 1000;
  const { table, markdown } = renderReport(results);
  process.stdout.write(table + '\n');
  if (!only) {
    fs.writeFileSync(path.join(__dirname, '..', 'BENCHMARKS.md'), markdown);
    progress('BENCHMARKS.md written');
  }
  progress(`done in ${results.seconds.toFixed(0)} s`);
  process.exit(0);
}

/**
 * `--soak[=minutes]`: only the soak (bench/soak.ts). Its section replaces the previous one in
 * BENCHMARKS.md and is kept in bench/soak-results.md, which a full run embeds. Exit code 1 when
 * it fails.
 */
async function runSoakOnly(minutes: number): Promise<void> {
  if (!Number.isFinite(minutes) || minutes < 1) throw new Error(`--soak=<minutes>: at least 1, got ${minutes}`);
  const ctx = await createContext(false);
  let result;
  try {
    result = await runSoak(ctx, minutes);
  } finally {
    await ctx.cleanup();
  }
  const command = `npm run bench -- ${process.argv.slice(2).join(' ')}`;
  const section = soakMarkdown(result, command);
  process.stdout.write(section + '\n');
  fs.writeFileSync(SOAK_RESULTS, section);
  const file = path.join(__dirname, '..', 'BENCHMARKS.md');
  if (fs.existsSync(file)) fs.writeFileSync(file, withSoakSection(fs.readFileSync(file, 'utf8'), section));
  progress(`soak ${result.ok ? 'passed' : 'FAILED'}; BENCHMARKS.md updated`);
  process.exit(result.ok ? 0 : 1);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
