import type { Knex } from 'knex';

/**
 * The seed's Phase 2 GIN index on the payload (seed 2, "Migrations futuras"): it serves the audit
 * search by a payload key (`payload @> '{"demanda_id": "…"}'`, `consultarEventos`'s
 * `payload_campo`/`payload_valor`). `jsonb_path_ops` indexes each path-value pair as one hash —
 * smaller and cheaper to update than the default opclass, and `@>` is the only operator the
 * search uses. Built CONCURRENTLY (outside a transaction), so a running bridge keeps writing;
 * an interrupted build leaves an INVALID index that the next run drops and builds again.
 */
export const config = { transaction: false };

export async function up(knex: Knex): Promise<void> {
  const { rows } = await knex.raw<{ rows: Array<{ valid: boolean }> }>(
    `SELECT i.indisvalid AS valid FROM pg_index i WHERE i.indexrelid = to_regclass('core.event_log_payload_idx')`,
  );
  if (rows[0]?.valid === true) return;
  if (rows[0]) await knex.raw('DROP INDEX CONCURRENTLY core.event_log_payload_idx');
  await knex.raw(
    'CREATE INDEX CONCURRENTLY event_log_payload_idx ON core.event_log USING gin (payload jsonb_path_ops)',
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX CONCURRENTLY IF EXISTS core.event_log_payload_idx');
}
