import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import pg from 'pg';
import { sleep } from './processes';

/** The machine's PostgreSQL server; the project never installs its own. */
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export async function canConnect(url: string): Promise<boolean> {
  return (await connectionProblem(url)) === undefined;
}

/** Why a `select 1` at `url` fails, or undefined when it succeeds. */
async function connectionProblem(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (err) {
    return (err as Error).message || String(err);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Starts the local cluster with pg_ctlcluster when it does not answer (Debian layout). A server
 * that is running but slow to answer (a loaded machine, connections being released) is waited
 * for, not treated as an error: pg_ctlcluster's "already running" is fine.
 */
export async function ensurePostgres(url = DEFAULT_DATABASE_URL, timeoutMs = 60_000): Promise<string> {
  let problem = await connectionProblem(url);
  if (problem === undefined) return url;
  const versions = fs.existsSync('/etc/postgresql') ? fs.readdirSync('/etc/postgresql') : [];
  const version = versions.sort().at(-1);
  if (!version) {
    throw new Error(
      `PostgreSQL is not reachable at ${url} (${problem}) and no local cluster exists under /etc/postgresql`,
    );
  }
  process.stderr.write(`[infra] PostgreSQL does not answer (${problem}): starting ${version}/main\n`);
  try {
    execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start'], { stdio: 'inherit' });
  } catch {
    // exit 2 = already running; any other failure shows as the connection problem below
  }
  const deadline = Date.now() + timeoutMs;
  while ((problem = await connectionProblem(url)) !== undefined) {
    if (Date.now() > deadline) throw new Error(`PostgreSQL did not accept connections at ${url}: ${problem}`);
    await sleep(300);
  }
  return url;
}

/** Stops the local cluster (fault injection only: the machine's server is shared). */
export function stopLocalPostgres(mode: 'fast' | 'immediate' = 'fast'): void {
  const version = fs.readdirSync('/etc/postgresql').sort().at(-1);
  if (!version) throw new Error('no local PostgreSQL cluster');
  execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'stop', '-m', mode], {
    stdio: 'inherit',
  });
}
