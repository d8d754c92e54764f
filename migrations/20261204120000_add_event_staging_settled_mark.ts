import type { Knex } from 'knex';

/**
 * `core.event_staging.ordem_firme`: the settled mark of `feromonios_ordem` (docs/wire-format.md)
 * — every counter of the record's producer session below it was acknowledged or given up when
 * the record was sent. The sequencer skips a gap in a session's counters below the highest mark
 * staged at once, and waits (`BRIDGE_ORDER_GAP_MS`) only for counters that were still open, such
 * as an outbox pass written for some partitions and sent again for the rest (docs/ordering.md).
 * Null for records without the mark. No statistics: no query plans on it (see the 2026-12-03
 * migration).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    'ALTER TABLE core.event_staging ADD COLUMN ordem_firme bigint, ALTER COLUMN ordem_firme SET STATISTICS 0',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE core.event_staging DROP COLUMN ordem_firme');
}
