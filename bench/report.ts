import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ArchiveRow } from './archive.bench';
import type { AuditRow } from './audit-api.bench';
import type { ConsumeRow } from './consume.bench';
import type { LiveRow } from './live-latency.bench';
import type { PublishRow } from './publish.bench';
import type { ReplayRow } from './replay.bench';
import type { SinkRow } from './sink.bench';
import { LIMITE_TOTAL_EXATO } from '../sdk';
import { fmt, type LatencySummary } from './stats';

export interface Results {
  quick: boolean;
  command: string;
  seconds?: number;
  publish?: PublishRow[];
  consume?: ConsumeRow;
  live?: LiveRow;
  sink?: SinkRow;
  replay?: ReplayRow;
  /** One entry per log size (1M; 10M with --10m). */
  audit?: Array<{ rows: number; results: AuditRow[] }>;
  /** `replayStream` over the 10M-row log (--10m). */
  replayLarge?: { events: number; ms: number; peakMb: number };
  /** `replayStream(0)` with half the log archived to Parquet, against all of it in PostgreSQL. */
  archive?: ArchiveRow;
}

interface Target {
  name: string;
  goal: string;
  measured: string;
  met: boolean;
}

function targets(r: Results): Target[] {
  const t: Target[] = [];
  const par = r.publish?.find((p) => p.mode === '64 in flight');
  const perCall = par?.refs[0];
  if (par && perCall)
    t.push({
      name: 'SDK publish, 64 in flight',
      goal: '≥ 0.85× plain kafkajs',
      measured: `${fmt(perCall.ratio, 2)}×`,
      met: perCall.ratio >= 0.85,
    });
  if (par && par.refs.length > 1) {
    const best = par.refs.reduce((a, b) => (b.perSec > a.perSec ? b : a));
    t.push({
      name: 'SDK publish, 64 in flight, against the best reference',
      goal: '≥ 0.85× the fastest',
      measured: `${fmt(best.ratio, 2)}× (${best.name})`,
      met: best.ratio >= 0.85,
    });
  }
  if (r.consume && r.consume.refs.length > 0) {
    const best = r.consume.refs.reduce((a, b) => (b.perSec > a.perSec ? b : a));
    t.push({
      name: 'SDK consume, a backlog, against the best reference',
      goal: '≥ 0.85× the fastest',
      measured: `${fmt(best.ratio, 2)}× (${best.name})`,
      met: best.ratio >= 0.85,
    });
  }
  if (r.live) {
    const ratio = r.live.sdk.p99 / r.live.raw.p99;
    t.push({
      name: 'live p99',
      goal: '≤ 1.3× plain kafkajs',
      measured: `${fmt(ratio, 2)}× (${fmt(r.live.sdk.p99)} vs ${fmt(r.live.raw.p99)} ms)`,
      met: ratio <= 1.3,
    });
  }
  if (r.sink)
    t.push({
      name: 'sink throughput',
      goal: '≥ 0.5× COPY',
      measured: `${fmt(r.sink.ratio, 3)}×`,
      met: r.sink.ratio >= 0.5,
    });
  if (r.replay) {
    t.push({
      name: 'replayDeSequence time',
      goal: '≤ 1.5× raw SELECT',
      measured: `${fmt(r.replay.ratio, 2)}×`,
      met: r.replay.ratio <= 1.5,
    });
    // flat: the whole range holds no more than a quarter of it (+1 MB of noise)
    const flat = r.replay.streamMb <= r.replay.streamQuarterMb + 1;
    t.push({
      name: 'replayStream memory flat',
      goal: 'peak does not grow with the range',
      measured: `${fmt(r.replay.streamMb)} MB over ${r.replay.events}, ${fmt(r.replay.streamQuarterMb)} MB over ${r.replay.events / 4}`,
      met: flat,
    });
  }
  for (const a of r.audit ?? []) {
    const counted = a.results.filter((x) => x.target);
    const worst = Math.max(...counted.map((x) => x.p99));
    const over = counted.filter((x) => x.p99 > 50).map((x) => x.filter);
    t.push({
      name: `audit p99 at ${a.rows.toLocaleString('en-US')} rows`,
      goal: '≤ 50 ms for every filter',
      measured: `worst ${fmt(worst)} ms${over.length ? ` (over: ${over.join(', ')})` : ''}`,
      met: over.length === 0,
    });
  }
  if (r.replayLarge && r.replay)
    t.push({
      name: `replayStream memory at ${r.replayLarge.events.toLocaleString('en-US')} rows`,
      goal: 'held as over 100,000 (+1 MB)',
      measured: `${fmt(r.replayLarge.peakMb)} MB vs ${fmt(r.replay.streamMb)} MB`,
      met: r.replayLarge.peakMb <= r.replay.streamMb + 1,
    });
  if (r.archive)
    t.push({
      name: `replay, half of ${r.archive.events.toLocaleString('en-US')} rows archived`,
      goal: '≤ 2× all in PostgreSQL',
      measured: `${fmt(r.archive.ratio, 2)}× (${fmt(r.archive.halfMs / 1000)} s vs ${fmt(r.archive.pgMs / 1000)} s)`,
      met: r.archive.ratio <= 2,
    });
  // the last soak (npm run bench -- --soak), from its kept section
  const soak = fs.existsSync(SOAK_RESULTS)
    ? /^## Soak: (.*) — (.*)$/m.exec(fs.readFileSync(SOAK_RESULTS, 'utf8'))
    : null;
  if (soak)
    t.push({
      name: `soak, ${soak[1]}`,
      goal: 'memory and lag bounded, every event delivered',
      measured: `see "Soak" below (${(soak[2] ?? '').replace(/\*/g, '')})`,
      met: soak[2] === 'passed',
    });
  return t;
}

/** The last soak's section (`npm run bench -- --soak`), embedded in every BENCHMARKS.md. */
export const SOAK_RESULTS = path.join(__dirname, 'soak-results.md');
const SOAK_START = '<!-- soak: written by npm run bench -- --soak -->';
const SOAK_END = '<!-- /soak -->';

/** `doc` with its soak section replaced by `section` (or inserted before the analysis). */
export function withSoakSection(doc: string, section: string): string {
  const block = `${SOAK_START}\n${section.trim()}\n${SOAK_END}`;
  const a = doc.indexOf(SOAK_START);
  const b = doc.indexOf(SOAK_END);
  if (a >= 0 && b > a) return doc.slice(0, a) + block + doc.slice(b + SOAK_END.length);
  const analysis = doc.indexOf('## Analysis');
  return analysis >= 0 ? `${doc.slice(0, analysis)}${block}\n\n${doc.slice(analysis)}` : `${doc}\n${block}\n`;
}

/** The plain table for the terminal and the BENCHMARKS.md document. */
export function renderReport(r: Results): { table: string; markdown: string } {
  const md: string[] = [];
  const line = (cells: Array<string | number>): string => `| ${cells.join(' | ')} |`;
  const head = (cells: string[]): string[] => [line(cells), line(cells.map(() => '---'))];
  if (r.publish) {
    md.push(
      '## 1. Publish',
      '',
      "Same topic, same bytes, same producer guarantees (idempotent, `acks=all`, one in-flight request). References: plain kafkajs `send()` per call; kafkajs batched by hand (callers queue, one `send()` of everything queued while the previous is in flight: bench/reference-clients.ts); `@platformatic/kafka` 1.x (idempotent). The kafkajs references run on kafkajs's encoder as released; the SDK runs with the patches every Feromônios client applies to it (ADR 0022 and its addenda: the encoder's allocating members, the record encoder, the batch checksum, the produce request written in one pass), and once more without them (the row under the SDK's: its ratio is what the patches buy); the SDK partitions with its own murmur2 in both rows (the same partitions as kafkajs's default partitioner).",
      '',
    );
    md.push(...head(['mode', 'client', 'events/s', 'SDK ÷ this', 'p50 / p99 ms']));
    for (const p of r.publish) {
      md.push(line([p.mode, '**SDK**', fmt(p.sdk.perSec, 0), '1×', `${fmt(p.sdk.p50)} / ${fmt(p.sdk.p99)}`]));
      md.push(
        line([
          '',
          "SDK, kafkajs's encoder as released",
          fmt(p.released.perSec, 0),
          `${fmt(p.released.ratio, 2)}×`,
          `${fmt(p.released.p50)} / ${fmt(p.released.p99)}`,
        ]),
      );
      for (const x of p.refs)
        md.push(line(['', x.name, fmt(x.perSec, 0), `${fmt(x.ratio, 2)}×`, `${fmt(x.p50)} / ${fmt(x.p99)}`]));
    }
    md.push('', 'Latency is per call (for `publicarLote`, per batch of 500).', '');
  }
  if (r.live) {
    md.push(
      '## 2. Live end-to-end latency',
      '',
      `Publish → handler at ${r.live.rate} events/s for ${r.live.seconds} s.`,
      '',
    );
    md.push(...head(['path', 'p50 ms', 'p95 ms', 'p99 ms', 'events', 'not delivered']));
    const live = (path: string, l: LatencySummary, lost: number): string =>
      line([path, fmt(l.p50), fmt(l.p95), fmt(l.p99), l.n, lost]);
    md.push(live('SDK `publicar` → `inscrever`', r.live.sdk, r.live.lost.sdk));
    md.push(live('kafkajs producer → consumer', r.live.raw, r.live.lost.raw), '');
  }
  if (r.consume) {
    const c = r.consume;
    md.push(
      '## 2b. Consume a backlog',
      '',
      `${c.events.toLocaleString('en-US')} \`demanda.categorizada\` events already in the topic (${c.partitions} partitions, written by the SDK), read from the beginning, each client in a consumer group of its own, ${c.rounds} round${c.rounds > 1 ? 's' : ''} alternating the clients (the median round; timed from the first event handled to the last). Same guarantees everywhere: at-least-once, an offset committed only after the events before it were handled, the partitions read in parallel. The references parse each payload; the SDK decodes, checks the headers, validates against the schema, de-duplicates and runs the handler protected (timeout, retries, DLQ). The references run on kafkajs's record decoder, response buffering and fetching as released; the SDK on the patches every Feromônios client installs (the record decoder of ADR 0023, the response read in place of ADR 0025, the fetch ahead of ADR 0028), and once more without them (the row under the SDK's: its ratio is what the three buy; before 2026-12-06 that row ran with the patches on, a new bus having put them back). CPU µs per event: this process's user + system time from the first event handled to the last, over the events (every client reads on this one thread). References: kafkajs \`eachMessage\`; kafkajs \`eachBatch\` (a fetch handled in one loop, one heartbeat and one commit per fetch) — both fetching 4 MB a partition, as the SDK does (kafkajs's default is 1 MB); \`@platformatic/kafka\` 1.x (its stream, up to 10 MB a fetch, its default; a commit by hand every 500 events of a partition): bench/consume.bench.ts.`,
      '',
    );
    md.push(...head(['client', 'events/s', 'SDK ÷ this', 'CPU µs per event', 'handled (fewest in a round)']));
    for (const x of [c.sdk, c.released, ...c.refs])
      md.push(
        line([
          x === c.sdk ? `**${x.name}**` : x.name,
          fmt(x.perSec, 0),
          `${fmt(x.ratio, 2)}×`,
          fmt(x.cpuMicros, 1),
          `${x.handled.toLocaleString('en-US')} / ${c.events.toLocaleString('en-US')}`,
        ]),
      );
    md.push('');
  }
  if (r.sink) {
    md.push(
      '## 3. Sink',
      '',
      `${r.sink.events.toLocaleString('en-US')} \`demanda.recebida\` events already in the topics, redaction on, every seed index present.`,
      '',
    );
    const cpu = (c: SinkRow['bridgeCpu']) => `${fmt(c.node, 2)} / ${fmt(c.postgres, 2)} / ${fmt(c.java, 2)}`;
    md.push(
      ...head(['writer', 'events/s', 'ratio', 'CPU s per 10k events: bench process (bridge) / PostgreSQL / JVMs']),
    );
    md.push(
      line([
        'bridge → `core.event_log`',
        fmt(r.sink.bridgePerSec, 0),
        `${fmt(r.sink.ratio, 3)}×`,
        cpu(r.sink.bridgeCpu),
      ]),
    );
    md.push(line([`PostgreSQL ${r.sink.copyMethod}`, fmt(r.sink.copyPerSec, 0), '1×', cpu(r.sink.copyCpu)]), '');
    md.push(
      `Drains and loads of the reference alternated (drain, COPY, drain, COPY, …), each into a fresh database and each alone (a drain's bridge is stopped before the load); each drain's ratio is to the load that followed it, and the rows above are the median pair's. The pairs, in the order they ran (bridge events/s vs COPY rows/s → ratio; bridge CPU as above): ${r.sink.pairs.map((p) => `${fmt(p.bridgePerSec, 0)} vs ${fmt(p.copyPerSec, 0)} → ${fmt(p.ratio, 3)}× (${cpu(p.bridgeCpu)})`).join('; ')}.`,
      '',
    );
    md.push(
      `Phases of the median pair's drain: every event staged after ${fmt(r.sink.stagedSeconds, 1)} s (${fmt(r.sink.events / r.sink.stagedSeconds, 0)} events/s; ${fmt(r.sink.loggedWhenStaged, 0)} of them in the log by then), all in the log after ${fmt(r.sink.bridgeSeconds, 1)} s; the sequencer's moves took ${fmt(r.sink.moveSeconds, 1)} s in all (${fmt((r.sink.moveSeconds * 1e6) / r.sink.events, 0)} µs per event), its upkeep of staging ${fmt(r.sink.upkeepSeconds, 2)} s — the sequencer moves the backlog's head while its tail is staged (cuts by publish time, ADR 0021), so what follows the end of staging is the tail's move. The leader staged in memory up to ${fmt(r.sink.memoryStagingRows, 0)} events (\`BRIDGE_MEMORY_STAGING_ROWS\`; 0: the table alone, ADR 0029); the bridge consumed ${fmt(r.sink.consumed, 0)} records for the ${fmt(r.sink.events, 0)} events (more: batches consumed again) and dropped its memory ${fmt(r.sink.memoryDrops, 0)} times.`,
      '',
    );
    md.push(
      `Publish → visible in the log (confirmed publishing) at ${r.sink.visible.rate}/s for ${r.sink.visible.seconds} s: p50 ${fmt(r.sink.visible.p50)} ms, p95 ${fmt(r.sink.visible.p95)} ms, **p99 ${fmt(r.sink.visible.p99)} ms** (${r.sink.visible.n} events).`,
      '',
    );
  }
  if (r.replay) {
    md.push(
      '## 4. Replay',
      '',
      `${r.replay.events.toLocaleString('en-US')} events. Memory held = heap + external above the baseline after a full GC, at the reader's fullest point (the stream: every 2,000 events).`,
      '',
    );
    md.push(...head(['reader', 'time ms', 'memory held MB']));
    md.push(line(['raw `SELECT` of the range', fmt(r.replay.rawMs, 0), fmt(r.replay.rawMb)]));
    md.push(line(['`replayDeSequence(0)`', fmt(r.replay.replayMs, 0), fmt(r.replay.replayMb)]));
    md.push(line(['`replayStream(0)`', fmt(r.replay.streamMs, 0), fmt(r.replay.streamMb)]));
    md.push(line([`\`replayStream\` over a quarter of the range`, '', fmt(r.replay.streamQuarterMb)]), '');
  }
  for (const a of r.audit ?? []) {
    md.push(
      `## 5. Audit API at ${a.rows.toLocaleString('en-US')} rows`,
      '',
      `\`GET /api/events\` on ${a.rows.toLocaleString('en-US')} rows, 4 concurrent clients in a separate process. SQL ms = PostgreSQL's own execution time of the page query (\`LIMIT 101\`) and of the bounded count (at most ${(LIMITE_TOTAL_EXATO + 1).toLocaleString('en-US')} rows; past it the response carries the planner's estimate and \`total_exato: false\`), EXPLAIN ANALYZE, median of 5, warm cache. Rows marked † are not held to the target (\`deslocamento\` is O(offset); the keyset row is the way to page deep).`,
      '',
    );
    md.push(
      ...head([
        'filter',
        'requests/s',
        'p50 ms',
        'p99 ms',
        'page SQL ms',
        'count SQL ms',
        'page query plan',
        'count query plan',
      ]),
    );
    for (const x of a.results)
      md.push(
        line([
          x.target ? x.filter : `${x.filter} †`,
          fmt(x.rps, 0),
          fmt(x.p50),
          fmt(x.p99),
          fmt(x.pageSqlMs, 2),
          fmt(x.countSqlMs, 2),
          x.plan,
          x.countPlan,
        ]),
      );
    md.push('');
  }
  if (r.replayLarge)
    md.push(
      `## 6. Replay at ${r.replayLarge.events.toLocaleString('en-US')} rows`,
      '',
      `\`replayStream(0)\` over the whole log: ${fmt(r.replayLarge.ms / 1000)} s (${fmt(r.replayLarge.events / (r.replayLarge.ms / 1000), 0)} events/s), memory held ${fmt(r.replayLarge.peakMb)} MB at its fullest (probed every 100,000 events). \`replayDeSequence\` stops at the seed's 100,000 by contract.`,
      '',
    );
  if (r.archive) {
    const a = r.archive;
    md.push(
      `## 7. Replay with half the log archived`,
      '',
      `\`replayStream(0)\` over ${a.events.toLocaleString('en-US')} rows (two past months and the current one), all in PostgreSQL, then after the two past months (${a.archived.toLocaleString('en-US')} rows) were archived to ${a.files} Parquet files in a local directory (docs/archive.md) — same rows, same order, a new bus each time (cold file cache), side by side in one run. Memory held probed every 10,000 events.`,
      '',
      ...head(['replay', 'time s', 'events/s', 'memory held MB']),
      line(['every row in PostgreSQL', fmt(a.pgMs / 1000), fmt(a.events / (a.pgMs / 1000), 0), fmt(a.pgMb)]),
      line(['half archived', fmt(a.halfMs / 1000), fmt(a.events / (a.halfMs / 1000), 0), fmt(a.halfMb)]),
      '',
      `Archiving the two months (write, read back and check every file, drop the partitions): ${fmt(a.archiveMs / 1000)} s, ${fmt(a.archived / (a.archiveMs / 1000), 0)} rows/s, ${fmt(a.bytes / 2 ** 20)} MiB of Parquet (${fmt(a.bytes / a.archived, 0)} bytes/row).`,
      '',
    );
  }
  const tg = targets(r);
  const targetLines = [
    ...head(['target', 'goal', 'measured', 'met']),
    ...tg.map((t) => line([t.name, t.goal, t.measured, t.met ? 'met' : '**not met**'])),
  ];
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const analysisFile = path.join(__dirname, 'ANALYSIS.md');
  const analysis = fs.existsSync(analysisFile) ? fs.readFileSync(analysisFile, 'utf8').trim() : '';
  const markdown = [
    '# Benchmarks',
    '',
    `Generated by \`${r.command}\` on ${new Date().toISOString().slice(0, 10)} in ${fmt(r.seconds ?? 0, 0)} s (${r.quick ? 'quick' : 'full'} mode).`,
    '',
    `Machine: ${os.type()} ${os.release()}, ${os.cpus().length} × ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, shared and noisy — read the ratios, not the absolute numbers. ` +
      `Node ${process.version}; Kafka 4.1.1 (KRaft, single node, from Maven Central); Apicurio Registry 3.3.3; PostgreSQL ${process.env.FEROMONIOS_PG_VERSION ?? '15'}; kafkajs 2.2.4.`,
    '',
    '## Targets',
    '',
    ...targetLines,
    '',
    ...md,
    ...(fs.existsSync(SOAK_RESULTS)
      ? [SOAK_START, fs.readFileSync(SOAK_RESULTS, 'utf8').trim(), SOAK_END, '']
      : ['_No soak on record: `npm run bench -- --soak`._', '']),
    analysis,
    '',
  ].join('\n');
  const table = ['Targets', ...targetLines, '', ...md].join('\n');
  return { table, markdown };
}
