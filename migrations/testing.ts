import pg from 'pg';
import { randomSuffix, serviceEnv, trackClient } from '../test/harness';

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
