import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import * as initCore from './20260808112047_init_core';
import * as dlqUnique from './20260814154200_add_dlq_unique_event_colonia';
import * as causation from './20261130120000_add_event_log_causation_id';
import * as reprocessingAudit from './20261201090000_add_dlq_reprocessing_audit';
import * as eventStaging from './20261201140000_add_event_staging';
import * as reprocessingV2 from './20261201170000_add_dlq_reprocessing_v2';
import * as kafkaPosition from './20261201180000_add_event_log_kafka_position';
import * as payloadIndex from './20261201200000_add_event_log_payload_index';
import * as tenantId from './20261202090000_add_event_log_tenant_id';
import * as retentionGaps from './20261202100000_add_retention_gaps';
import * as monthlyPartitions from './20261202120000_partition_event_log_by_month';
import * as eventLogArchive from './20261202140000_add_event_log_archive';
import * as coveringTimeIndexes from './20261202160000_cover_event_log_time_indexes';
import * as stagingStatistics from './20261203160000_slim_event_staging_statistics';
import * as stagingSettledMark from './20261204120000_add_event_staging_settled_mark';

/**
 * The `core` schema's migrations, in order. Landed migrations are never edited: add a file
 * named `<yyyymmddhhmmss>_<what>.ts` and append it here (the list is explicit so the
 * migrations run the same from TypeScript sources, compiled code and tests).
 */
export const MIGRATIONS: ReadonlyArray<{
  name: string;
  module: { up(k: Knex): Promise<void>; down(k: Knex): Promise<void>; config?: { transaction?: boolean } };
}> = [
  { name: '20260808112047_init_core', module: initCore },
  { name: '20260814154200_add_dlq_unique_event_colonia', module: dlqUnique },
  { name: '20261130120000_add_event_log_causation_id', module: causation },
  { name: '20261201090000_add_dlq_reprocessing_audit', module: reprocessingAudit },
  { name: '20261201140000_add_event_staging', module: eventStaging },
  { name: '20261201170000_add_dlq_reprocessing_v2', module: reprocessingV2 },
  { name: '20261201180000_add_event_log_kafka_position', module: kafkaPosition },
  { name: '20261201200000_add_event_log_payload_index', module: payloadIndex },
  { name: '20261202090000_add_event_log_tenant_id', module: tenantId },
  { name: '20261202100000_add_retention_gaps', module: retentionGaps },
  { name: '20261202120000_partition_event_log_by_month', module: monthlyPartitions },
  { name: '20261202140000_add_event_log_archive', module: eventLogArchive },
  { name: '20261202160000_cover_event_log_time_indexes', module: coveringTimeIndexes },
  { name: '20261203160000_slim_event_staging_statistics', module: stagingStatistics },
  { name: '20261204120000_add_event_staging_settled_mark', module: stagingSettledMark },
];

const source: Knex.MigrationSource<(typeof MIGRATIONS)[number]> = {
  getMigrations: () => Promise.resolve([...MIGRATIONS]),
  getMigrationName: (m) => m.name,
  getMigration: (m) => Promise.resolve(m.module),
};

/** Arbitrary constant key of the advisory lock that serialises concurrent migration runners. */
const MIGRATION_LOCK_KEY = 0x6665726f; // 'fero'

/**
 * Applies every pending migration. Safe with several runners at once (bridge and audit API
 * starting together): runners queue on a PostgreSQL advisory lock, so the second finds
 * nothing left to do instead of failing on knex's own lock table.
 */
export async function migrateLatest(databaseUrl: string): Promise<string[]> {
  return withMigrationLock(databaseUrl, async (knex) => {
    const [, applied] = (await knex.migrate.latest()) as [number, string[]];
    return applied;
  });
}

/** Rolls back the latest migration (one step). */
export async function rollbackLatest(databaseUrl: string): Promise<string[]> {
  return withMigrationLock(databaseUrl, async (knex) => {
    const [, rolled] = (await knex.migrate.down()) as [number, string[]];
    return rolled;
  });
}

async function withMigrationLock<T>(databaseUrl: string, fn: (knex: Knex) => Promise<T>): Promise<T> {
  const lock = new pg.Client({ connectionString: databaseUrl });
  await lock.connect();
  const knex = knexFactory({
    client: 'pg',
    connection: databaseUrl,
    pool: { min: 0, max: 2 },
    migrations: { migrationSource: source, tableName: 'knex_migrations' },
  });
  try {
    // polled, not waited for inside one statement: a session blocked in pg_advisory_lock holds a
    // snapshot, and CREATE INDEX CONCURRENTLY (run by the lock holder) waits for every older
    // snapshot of the database — the two runners would wait for each other for ever
    while (
      !(await lock.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [MIGRATION_LOCK_KEY])).rows[0]?.ok
    )
      await new Promise((r) => setTimeout(r, 100));
    return await fn(knex);
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await lock.end().catch(() => undefined);
    await knex.destroy();
  }
}
