import type { Knex } from 'knex';

/**
 * `tenant_id` (seed 003 section 5: "UUID | null, only where it applies"): a nullable column of
 * `core.event_log` and of `core.event_staging` (whatever is staged can always be moved), and a
 * partial index for the audit filter by tenant, in log order. Adding a nullable column without
 * a default rewrites nothing; the index is built CONCURRENTLY (outside a transaction) so a
 * running bridge keeps writing, and an interrupted build leaves an INVALID index that the next
 * run drops and builds again. Events written before this migration have no tenant (null).
 */
export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE core.event_log ADD COLUMN IF NOT EXISTS tenant_id UUID');
  await knex.raw('ALTER TABLE core.event_staging ADD COLUMN IF NOT EXISTS tenant_id UUID');
  const { rows } = await knex.raw<{ rows: Array<{ valid: boolean }> }>(
    `SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass('core.event_log_tenant_idx')`,
  );
  if (rows[0]?.valid === true) return;
  if (rows[0]) await knex.raw('DROP INDEX CONCURRENTLY core.event_log_tenant_idx');
  await knex.raw(
    'CREATE INDEX CONCURRENTLY event_log_tenant_idx ON core.event_log (tenant_id, sequence_number) WHERE tenant_id IS NOT NULL',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS core.event_log_tenant_idx');
  await knex.raw('ALTER TABLE core.event_staging DROP COLUMN IF EXISTS tenant_id');
  await knex.raw('ALTER TABLE core.event_log DROP COLUMN IF EXISTS tenant_id');
}
