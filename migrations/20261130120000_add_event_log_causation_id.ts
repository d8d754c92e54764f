import type { Knex } from 'knex';

/**
 * Phase 2: the event contract of seed 003 (section 5) carries `causation_id`; the audit log
 * keeps it so a trace shows which event caused which.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE core.event_log ADD COLUMN causation_id UUID');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE core.event_log DROP COLUMN IF EXISTS causation_id');
}
