import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './spawn';

/** One run of the real `feromonios` binary (cli/bin/feromonios.cjs). */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Sampled resident set sizes of the CLI process, in bytes (with `sampleRss`). */
  rss: number[];
}

/**
 * Runs `feromonios <args>` as an operator would, with only `PATH`, `HOME` and `env` in its
 * environment (nothing of the test process leaks in); `sampleRss` samples its memory every 50 ms.
 */
export function runFeromonios(
  args: string[],
  env: Record<string, string>,
  { sampleRss = false }: { sampleRss?: boolean } = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'cli/bin/feromonios.cjs'), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const rss: number[] = [];
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const sampler = sampleRss
      ? setInterval(() => {
          try {
            const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
            if (m) rss.push(Number(m[1]) * 1024);
          } catch {
            // exited between two samples
          }
        }, 50)
      : undefined;
    child.on('error', reject);
    child.on('close', (code) => {
      if (sampler) clearInterval(sampler);
      resolve({ code: code ?? -1, stdout, stderr, rss });
    });
  });
}
