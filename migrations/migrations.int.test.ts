import { MIGRATIONS, migrateLatest, rollbackLatest } from './index';
import { emptyDatabase, query } from './testing';

/** Columns, indexes and constraints of `core`, as a comparable snapshot. */
async function schemaSnapshot(url: string): Promise<string[]> {
  const cols = await query<{ s: string }>(
    url,
    `SELECT table_name || '.' || column_name || ' ' || data_type || coalesce('(' || datetime_precision || ')', '') ||
            ' ' || is_nullable || ' ' || coalesce(column_default, '') AS s
       FROM information_schema.columns WHERE table_schema = 'core' ORDER BY table_name, ordinal_position`,
  );
  const idx = await query<{ s: string }>(
    url,
    `SELECT indexdef AS s FROM pg_indexes WHERE schemaname = 'core' ORDER BY indexname`,
  );
  const cons = await query<{ s: string }>(
    url,
    `SELECT conname || ' ' || pg_get_constraintdef(oid) AS s FROM pg_constraint
      WHERE connamespace = 'core'::regnamespace ORDER BY conname`,
  );
  return [...cols, ...idx, ...cons].map((r) => r.s);
}

describe('core schema migrations', () => {
  it('apply to an empty database under the seed names, matching the seed schema', async () => {
    const url = await emptyDatabase();
    expect(await migrateLatest(url)).toEqual(MIGRATIONS.map((m) => m.name));
    expect(MIGRATIONS.slice(0, 2).map((m) => m.name)).toEqual([
      '20260808112047_init_core',
      '20260814154200_add_dlq_unique_event_colonia',
    ]);
    const snap = await schemaSnapshot(url);
    expect(snap).toEqual(
      expect.arrayContaining([
        "event_log.sequence_number bigint NO nextval('core.event_log_sequence_number_seq'::regclass)",
        'event_log.event_id uuid NO ',
        'event_log.timestamp timestamp with time zone(2) NO CURRENT_TIMESTAMP',
        'event_log.correlacao_id uuid YES ',
        'event_log.payload jsonb NO ',
        "dead_letter_queue.status character varying NO 'pendente'::character varying",
        'dead_letter_queue.resolvido_em timestamp with time zone(2) YES ',
        // Phase 2 (ADR 0017): the log is partitioned by month; event_id is unique in core.event_ids
        'CREATE UNIQUE INDEX event_ids_pkey ON core.event_ids USING btree (event_id)',
        'CREATE INDEX event_log_event_id_idx ON ONLY core.event_log USING btree (event_id)',
        // the seed's time indexes, covering since issue #19 (ADR 0019): same names and keys
        'CREATE INDEX event_log_timestamp_idx ON ONLY core.event_log USING btree ("timestamp") INCLUDE (sequence_number, criado_em)',
        'CREATE INDEX event_log_tipo_timestamp_idx ON ONLY core.event_log USING btree (tipo, "timestamp") INCLUDE (sequence_number, criado_em)',
        'CREATE UNIQUE INDEX dead_letter_queue_event_id_colonia_key ON core.dead_letter_queue USING btree (event_id, colonia)',
        'CREATE INDEX dead_letter_queue_status_colonia_idx ON core.dead_letter_queue USING btree (status, colonia)',
        'dead_letter_queue_event_id_fkey FOREIGN KEY (event_id) REFERENCES core.event_ids(event_id)',
      ]),
    );
  });

  it('do nothing when applied twice', async () => {
    const url = await emptyDatabase();
    await migrateLatest(url);
    const before = await schemaSnapshot(url);
    expect(await migrateLatest(url)).toEqual([]);
    expect(await schemaSnapshot(url)).toEqual(before);
  });

  it('are safe with two concurrent runners: one applies, the other finds nothing to do', async () => {
    const url = await emptyDatabase();
    const results = await Promise.all([migrateLatest(url), migrateLatest(url)]);
    expect(results.map((r) => r.length).sort()).toEqual([0, MIGRATIONS.length]);
    const [{ n }] = (await query<{ n: string }>(url, 'SELECT count(*) AS n FROM knex_migrations')) as [{ n: string }];
    expect(Number(n)).toBe(MIGRATIONS.length);
  });

  it('roll back the latest migration, and re-apply it', async () => {
    const url = await emptyDatabase();
    await migrateLatest(url);
    const latest = MIGRATIONS.at(-1)?.name;
    expect(await rollbackLatest(url)).toEqual([latest]);
    expect(await migrateLatest(url)).toEqual([latest]);
  });
});
