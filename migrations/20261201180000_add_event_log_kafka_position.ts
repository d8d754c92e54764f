import type { Knex } from 'knex';

/**
 * Where each logged event was in Kafka (the console's event detail, docs/console.md): the
 * sequencer moves the staged position along with the row. Nullable: rows logged before this
 * migration have none.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE core.event_log
      ADD COLUMN kafka_topic     VARCHAR(255),
      ADD COLUMN kafka_partition INTEGER,
      ADD COLUMN kafka_offset    BIGINT;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE core.event_log
      DROP COLUMN IF EXISTS kafka_offset, DROP COLUMN IF EXISTS kafka_partition, DROP COLUMN IF EXISTS kafka_topic;
  `);
}
