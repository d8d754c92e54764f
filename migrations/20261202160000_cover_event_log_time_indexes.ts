import type { Knex } from 'knex';

/**
 * The audit's time-window searches at 10M rows (issue #19; docs/adr/0019-covering-time-indexes.md):
 * the seed's `event_log_timestamp_idx (timestamp)` and `event_log_tipo_timestamp_idx (tipo,
 * timestamp)` become covering indexes — same names, same key columns, plus `INCLUDE
 * (sequence_number, criado_em)`. A page of a one-hour window (~14,000 matching rows at 10M)
 * then picks its 101 sequence numbers by an index-only scan and reads only those rows from the
 * heap (`EventLogReader.consultarEventos`), instead of fetching every matching row to sort it.
 *
 * Built without blocking the bridge's writes: a new index `ON ONLY` the partitioned parent
 * (invalid until complete), each month's index built `CONCURRENTLY` and attached to it, then
 * the old index dropped and the new one given its name. Outside a transaction, so an
 * interrupted run leaves at most an invalid or a half-attached `<name>_novo`: the next run
 * finds it and carries on. Partitions created later get the index from the parent on ATTACH.
 */
export const config = { transaction: false };

const INCLUDE = 'INCLUDE (sequence_number, criado_em)';

/** The two indexes: name and key columns (the seed's). */
const INDEXES = [
  { name: 'event_log_timestamp_idx', keys: '(timestamp)' },
  { name: 'event_log_tipo_timestamp_idx', keys: '(tipo, timestamp)' },
] as const;

export async function up(knex: Knex): Promise<void> {
  for (const i of INDEXES) await rebuild(knex, i.name, `${i.keys} ${INCLUDE}`);
}

export async function down(knex: Knex): Promise<void> {
  for (const i of INDEXES) await rebuild(knex, i.name, i.keys);
}

/** Whether `core.<name>`'s definition already ends with `columns` (nothing to do). */
async function definedAs(knex: Knex, name: string, columns: string): Promise<boolean> {
  const { rows } = await knex.raw<{ rows: Array<{ def: string }> }>(
    `SELECT pg_get_indexdef(to_regclass(?)) AS def WHERE to_regclass(?) IS NOT NULL`,
    [`core.${name}`, `core.${name}`],
  );
  const def = rows[0]?.def;
  // PostgreSQL quotes the keyword column: ("timestamp")
  return def !== undefined && def.replace(/"/g, '').replace(/\s+/g, ' ').endsWith(`USING btree ${columns}`);
}

/**
 * Replaces the partitioned index `core.<name>` by one on `columns` under the same name,
 * partition by partition with CREATE INDEX CONCURRENTLY.
 */
async function rebuild(knex: Knex, name: string, columns: string): Promise<void> {
  if (await definedAs(knex, name, columns)) return;
  const novo = `${name}_novo`;
  await knex.raw(`CREATE INDEX IF NOT EXISTS ${novo} ON ONLY core.event_log USING btree ${columns}`);
  const { rows: partitions } = await knex.raw<{ rows: Array<{ p: string }> }>(
    `SELECT c.relname AS p FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'core.event_log'::regclass ORDER BY c.relname`,
  );
  // a month's index: e.g. event_log_2026_12_timestamp_idx (under PostgreSQL's 63 characters)
  const own = (p: string): string => `${p}_${name.replace(/^event_log_/, '')}`;
  for (const { p } of partitions) {
    const building = `${own(p)}_novo`;
    const { rows: state } = await knex.raw<{ rows: Array<{ valid: boolean; attached: boolean }> }>(
      `SELECT x.indisvalid AS valid,
              EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = x.indexrelid
                                                    AND h.inhparent = to_regclass(?)) AS attached
         FROM pg_index x WHERE x.indexrelid = to_regclass(?)`,
      [`core.${novo}`, `core.${building}`],
    );
    if (state[0]?.attached) continue;
    if (state[0] && !state[0].valid) await knex.raw(`DROP INDEX CONCURRENTLY core.${building}`);
    if (!state[0]?.valid) await knex.raw(`CREATE INDEX CONCURRENTLY ${building} ON core.${p} USING btree ${columns}`);
    await knex.raw(`ALTER INDEX core.${novo} ATTACH PARTITION core.${building}`);
  }
  // every month attached: the parent index is valid; the old one goes and the new takes its names
  await knex.raw(`DROP INDEX IF EXISTS core.${name}`);
  await knex.raw(`ALTER INDEX core.${novo} RENAME TO ${name}`);
  const { rows: children } = await knex.raw<{ rows: Array<{ i: string; p: string }> }>(
    `SELECT ci.relname AS i, ct.relname AS p
       FROM pg_inherits h JOIN pg_class ci ON ci.oid = h.inhrelid
       JOIN pg_index x ON x.indexrelid = ci.oid JOIN pg_class ct ON ct.oid = x.indrelid
      WHERE h.inhparent = to_regclass(?)`,
    [`core.${name}`],
  );
  for (const c of children)
    if (c.i !== own(c.p) && own(c.p).length <= 63) await knex.raw(`ALTER INDEX core.${c.i} RENAME TO ${own(c.p)}`);
}
