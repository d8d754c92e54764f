/**
 * Measures flakiness: runs the service-backed tiers N times in a row against one set of
 * services and prints every test that failed, with how many runs it failed in.
 *
 *   npm run test:repeat -- 5                 # int, e2e and outage tiers, 5 times
 *   npm run test:repeat -- 3 --faults        # also the fault tier's CI subset each time
 *   npm run test:repeat -- 10 sdk/outbox     # only files matching a path pattern
 *
 * Exit code 0 when every run passed, 1 otherwise. Each run's jest report is kept in
 * `.infra/test-repeat/run-<i>.json`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { down, up } from '../infra/services';
import { stateDir } from '../infra/paths';

interface JestReport {
  numFailedTests: number;
  numPassedTests: number;
  testResults: Array<{
    name: string;
    status: string;
    message: string;
    assertionResults: Array<{ fullName: string; status: string }>;
  }>;
}

const ROOT = path.resolve(__dirname, '..');
const JEST = path.join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js');

function parseArgs(argv: string[]): { runs: number; faults: boolean; patterns: string[] } {
  const [first, ...rest] = argv;
  const runs = Number(first);
  if (!Number.isInteger(runs) || runs < 1) {
    console.error('usage: npm run test:repeat -- <runs ≥ 1> [--faults] [path patterns…]');
    process.exit(2);
  }
  return { runs, faults: rest.includes('--faults'), patterns: rest.filter((a) => a !== '--faults') };
}

/** One jest invocation; returns the failures it reported (suite-level failures included). */
function runJest(args: string[], env: NodeJS.ProcessEnv, report: string): { failures: string[]; passed: number } {
  const res = spawnSync(process.execPath, [JEST, ...args, '--passWithNoTests', '--json', `--outputFile=${report}`], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (!fs.existsSync(report))
    return { failures: [`jest exited ${res.status ?? res.signal} without a report`], passed: 0 };
  const r = JSON.parse(fs.readFileSync(report, 'utf8')) as JestReport;
  const failures: string[] = [];
  for (const file of r.testResults) {
    const rel = path.relative(ROOT, file.name);
    const failed = file.assertionResults.filter((a) => a.status === 'failed');
    for (const a of failed) failures.push(`${rel} › ${a.fullName}`);
    // a file can fail outside any test (leaked client, failing hook, teardown)
    if (file.status === 'failed' && failed.length === 0)
      failures.push(`${rel} › (file) ${file.message.split('\n').find((l) => l.trim()) ?? 'failed'}`);
  }
  return { failures, passed: r.numPassedTests };
}

async function main(): Promise<void> {
  const { runs, faults, patterns } = parseArgs(process.argv.slice(2));
  const dir = stateDir('test-repeat');
  fs.mkdirSync(dir, { recursive: true });
  const counts = new Map<string, number>();
  const durations: string[] = [];
  let failedRuns = 0;
  const single = await up({ topology: 'single' });
  const cluster = faults ? await up({ topology: 'cluster' }) : undefined;
  // The services stay up across runs; every run still gets its own template database.
  const env = { ...process.env, ...single.endpoints, FEROMONIOS_KEEP_SERVICES: '1', FEROMONIOS_STRICT_HANDLES: '1' };
  try {
    for (let i = 1; i <= runs; i++) {
      const t0 = Date.now();
      const base = ['--selectProjects', 'int', 'e2e', ...patterns];
      const main = runJest(base, env, path.join(dir, `run-${i}.json`));
      const outage = runJest(
        ['--selectProjects', 'outage', '--runInBand', ...patterns],
        env,
        path.join(dir, `run-${i}-outage.json`),
      );
      const failures = [...main.failures, ...outage.failures];
      let passed = main.passed + outage.passed;
      if (cluster) {
        const f = runJest(
          ['--selectProjects', 'faults', '--runInBand', ...patterns],
          { ...env, ...cluster.endpoints, FEROMONIOS_KAFKA_TOPOLOGY: 'cluster' },
          path.join(dir, `run-${i}-faults.json`),
        );
        failures.push(...f.failures);
        passed += f.passed;
      }
      for (const f of failures) counts.set(f, (counts.get(f) ?? 0) + 1);
      if (failures.length > 0) failedRuns++;
      const secs = ((Date.now() - t0) / 1000).toFixed(0);
      durations.push(`${secs} s`);
      process.stderr.write(
        `[test:repeat] run ${i}/${runs}: ${failures.length === 0 ? 'passed' : `${failures.length} failed`} (${passed} passed, ${secs} s)\n`,
      );
    }
  } finally {
    await down([...single.started, ...(cluster?.started ?? [])]);
  }
  console.log(`\n${runs - failedRuns}/${runs} runs passed (${durations.join(', ')})`);
  if (counts.size === 0) console.log('no test failed');
  else {
    console.log('failed tests (runs failed / runs):');
    for (const [name, n] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`  ${n}/${runs}  ${name}`);
  }
  process.exitCode = failedRuns === 0 ? 0 : 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
