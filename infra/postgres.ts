import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import pg from 'pg';
import { sleep } from './processes';

/** The machine's PostgreSQL server; the project never installs its own. */
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Starts the local cluster with pg_ctlcluster when it is down (Debian layout). */
export async function ensurePostgres(url = DEFAULT_DATABASE_URL, timeoutMs = 60_000): Promise<string> {
  if (await canConnect(url)) return url;
  const versions = fs.existsSync('/etc/postgresql') ? fs.readdirSync('/etc/postgresql') : [];
  const version = versions.sort().at(-1);
  if (!version) {
    throw new Error(`PostgreSQL is not reachable at ${url} and no local cluster exists under /etc/postgresql`);
  }
  process.stderr.write(`[infra] starting PostgreSQL ${version}/main\n`);
  execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start'], { stdio: 'inherit' });
  const deadline = Date.now() + timeoutMs;
  while (!(await canConnect(url))) {
    if (Date.now() > deadline) throw new Error(`PostgreSQL did not accept connections at ${url}`);
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
