import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

/** A long-running service process started detached, tracked through a pid file. */
export interface ManagedProcess {
  /** Human name used in logs and errors, e.g. `kafka-1`. */
  name: string;
  pidFile: string;
  logFile: string;
}

export function readPid(proc: ManagedProcess): number | null {
  try {
    const pid = Number(fs.readFileSync(proc.pidFile, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

export function isAlive(pid: number | null): boolean {
  if (pid === null) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export const isRunning = (proc: ManagedProcess): boolean => isAlive(readPid(proc));

/**
 * Starts `command` detached from this process (it survives `npm run infra:up` exiting),
 * appending its output to the log file. Returns the byte offset of the log at start so
 * readiness checks only look at lines written by this run.
 */
export function startDetached(
  proc: ManagedProcess,
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): number {
  const offset = fs.existsSync(proc.logFile) ? fs.statSync(proc.logFile).size : 0;
  const out = fs.openSync(proc.logFile, 'a');
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    detached: true,
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  if (child.pid === undefined) throw new Error(`${proc.name}: could not spawn ${command}`);
  fs.writeFileSync(proc.pidFile, String(child.pid));
  child.unref();
  return offset;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until the log (from `offset`) contains `line`; fails early if the process died. */
export async function waitForLogLine(
  proc: ManagedProcess,
  line: string | RegExp,
  offset: number,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = readLogFrom(proc.logFile, offset);
    if (typeof line === 'string' ? text.includes(line) : line.test(text)) return;
    if (!isRunning(proc)) {
      throw new Error(`${proc.name} exited before it was ready; last log lines:\n${tail(text, 25)}`);
    }
    if (Date.now() > deadline) {
      throw new Error(`${proc.name} not ready after ${timeoutMs} ms; last log lines:\n${tail(text, 25)}`);
    }
    await sleep(250);
  }
}

function readLogFrom(file: string, offset: number): string {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const buf = Buffer.alloc(Math.max(0, size - offset));
      fs.readSync(fd, buf, 0, buf.length, offset);
      return buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}

const tail = (text: string, n: number): string => text.split('\n').slice(-n).join('\n');

/**
 * Stops a managed process: SIGTERM, then SIGKILL after `graceMs`. `signal: 'SIGKILL'`
 * kills at once (fault injection). A process that is not running is a no-op.
 */
export async function stopProcess(
  proc: ManagedProcess,
  { signal = 'SIGTERM', graceMs = 20_000 }: { signal?: NodeJS.Signals; graceMs?: number } = {},
): Promise<void> {
  const pid = readPid(proc);
  if (!isAlive(pid) || pid === null) {
    fs.rmSync(proc.pidFile, { force: true });
    return;
  }
  killGroup(pid, signal);
  const deadline = Date.now() + graceMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) killGroup(pid, 'SIGKILL');
    await sleep(100);
  }
  fs.rmSync(proc.pidFile, { force: true });
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal); // the detached child leads its own process group
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      /* already gone */
    }
  }
}

/** True when something accepts TCP connections on host:port. */
export function portOpen(port: number, host = '127.0.0.1', timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
