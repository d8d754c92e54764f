import pg from 'pg';
import { migrateLatest } from '../../migrations';
import { up } from '../../infra/services';

/**
 * Starts (or finds) Kafka, the schema registry and PostgreSQL once per test run, then builds
 * a migrated template database that each test file clones (`createTestDatabase`). What it
 * learns is passed to test workers through environment variables.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.FEROMONIOS_TEST_TEMPLATE_DB) return; // a second project of the same run
  const t0 = Date.now();
  const topology = process.env.FEROMONIOS_KAFKA_TOPOLOGY === 'cluster' ? 'cluster' : 'single';
  const { endpoints, started } = await up({ topology });
  Object.assign(process.env, endpoints);
  process.env.FEROMONIOS_TEST_STARTED = started.join(',');

  const runId = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
  const template = `fero_tpl_${runId}`;
  const admin = new pg.Client({ connectionString: endpoints.DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${template}`);
  } finally {
    await admin.end();
  }
  await migrateLatest(withDatabase(endpoints.DATABASE_URL, template));
  process.env.FEROMONIOS_TEST_TEMPLATE_DB = template;
  process.env.FEROMONIOS_TEST_RUN_ID = runId;
  process.stderr.write(
    `\n[harness] services ready in ${((Date.now() - t0) / 1000).toFixed(1)} s (started: ${started.join(', ') || 'none'})\n`,
  );
}

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}
