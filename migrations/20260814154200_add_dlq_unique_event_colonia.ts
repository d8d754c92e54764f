import type { Knex } from 'knex';

/** Seed section 2: one DLQ row per (event_id, colonia). */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    'CREATE UNIQUE INDEX dead_letter_queue_event_id_colonia_key ON core.dead_letter_queue (event_id, colonia);',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS core.dead_letter_queue_event_id_colonia_key;');
}
