import pg from 'pg';
import { randomSuffix, serviceEnv, trackClient } from '../test/harness';
import { MIGRATIONS, rollbackLatest } from './index';

/** Helpers of the migration tests: a database of their own, and one-shot queries. */

export async function emptyDatabase(): Promise<string> {
  const { databaseUrl } = serviceEnv();
  const name = `fero_t_${process.env.FEROMONIOS_TEST_RUN_ID ?? 'x'}_mig${randomSuffix()}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`).finally(() => admin.end());
  const u = new URL(databaseUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  const done = trackClient('pg client');
  await c.connect();
  try {
    return (await c.query<T>(sql)).rows;
  } finally {
    await c.end();
    done();
  }
}

/** The names of the migrations after `name`, in the order they apply. */
export function laterThan(name: string): string[] {
  const i = MIGRATIONS.findIndex((m) => m.name === name);
  if (i < 0) throw new Error(`no migration ${name}`);
  return MIGRATIONS.slice(i + 1).map((m) => m.name);
}

/** What rolling back through `name` undoes, in order: the later migrations newest first, then `name`. */
export function rollbackOrder(name: string): string[] {
  return [...laterThan(name)].reverse().concat(name);
}

/**
 * Rolls back, one at a time, every migration after `name` and then `name` itself; returns the
 * names in the order they were rolled back. A test of one migration's `up` and `down` stays
 * valid when later migrations are added.
 */
export async function rollbackThrough(url: string, name: string): Promise<string[]> {
  const rolled: string[] = [];
  for (;;) {
    const r = await rollbackLatest(url);
    if (r.length === 0) throw new Error(`${name} was not applied`);
    rolled.push(...r);
    if (r.includes(name)) return rolled;
  }
}
