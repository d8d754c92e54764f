import type { Knex } from 'knex';

/**
 * The sequencer's upkeep of `core.event_staging` (`VACUUM (ANALYZE)` every
 * `BRIDGE_STAGING_VACUUM_ROWS` rows moved out, ADR 0019) gathered statistics on every column,
 * the JSON payload included, from a 30,000-row sample — ~75 % of the upkeep's time and CPU that
 * the sequencer's queries never use: they filter, join, group or count staging on the event id,
 * the Kafka position and the publish time only (issue #19; ADR 0019, amended 2026-12-03).
 * Statistics are kept, coarse (10 buckets, a 3,000-row sample), on those five columns and not
 * gathered on the others; a `VACUUM (ANALYZE)` of 150,000 staged rows went from 140–200 ms to
 * 15 ms. The table's size estimate (what decides a plan's joins) comes from the VACUUM.
 */
const PLANNED = ['event_id', 'kafka_topic', 'kafka_partition', 'kafka_offset', 'publicado_em'] as const;
const UNPLANNED = [
  'tipo',
  'versao_schema',
  'timestamp',
  'origem',
  'correlacao_id',
  'causation_id',
  'tenant_id',
  'payload',
  'ordem_sessao',
  'ordem_contador',
  'recebido_em',
] as const;

const alter = (targets: Array<[string, number]>) =>
  `ALTER TABLE core.event_staging ${targets.map(([c, t]) => `ALTER COLUMN ${c} SET STATISTICS ${t}`).join(', ')}`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    alter([...PLANNED.map((c): [string, number] => [c, 10]), ...UNPLANNED.map((c): [string, number] => [c, 0])]),
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(alter([...PLANNED, ...UNPLANNED].map((c): [string, number] => [c, -1])));
}
