import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { registerCleanup, serviceEnv } from './index';

export interface SpawnedProcess {
  child: ChildProcess;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  exited: Promise<number | string>;
  /** Everything it wrote to stdout and stderr so far. */
  output: () => string;
}

export const ROOT = path.resolve(__dirname, '..', '..');

/**
 * Runs a TypeScript entry point of the repository (`bridge/main.ts`, `audit-api/main.ts`…) as a
 * real process, pointed at the run's Kafka and registry; killed at file end if still alive.
 * `node --import tsx`, not the tsx CLI (which forks): the pid is the process itself, so
 * `kill -9` kills it.
 */
export function spawnTs(script: string, env: Record<string, string> = {}): SpawnedProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, script)], {
    cwd: ROOT,
    env: {
      ...process.env,
      KAFKA_BROKERS: serviceEnv().brokers.join(','),
      SCHEMA_REGISTRY_URL: serviceEnv().registryUrl,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  registerCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { child, exited, output: () => out };
}
