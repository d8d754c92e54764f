import pg from 'pg';
import { trackClient } from '../test/harness';
import { migrateLatest } from './index';
import { emptyDatabase, laterThan, query, rollbackOrder, rollbackThrough } from './testing';

const MIGRATION = '20261202160000_cover_event_log_time_indexes';
const COVERING = 'INCLUDE (sequence_number, criado_em)';
/** The migrations after it: rolled back before it and re-applied with it. */
const AFTER = laterThan(MIGRATION);

/** Every index definition of the two time indexes, on the parent and each month, by index name. */
const timeIndexes = (url: string) =>
  query<{ i: string; t: string; d: string; valid: boolean }>(
    url,
    `SELECT c.relname AS i, t.relname AS t, pg_get_indexdef(c.oid) AS d, x.indisvalid AS valid
       FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
      WHERE t.relnamespace = 'core'::regnamespace AND t.relname ~ '^event_log' AND c.relname ~ 'timestamp'
      ORDER BY 1`,
  );

/** The plan of `sql` with sequential and bitmap scans off (a small table would not use an index). */
async function explain(url: string, sql: string): Promise<string> {
  const c = new pg.Client({ connectionString: url });
  const done = trackClient('explain');
  await c.connect();
  try {
    await c.query('SET enable_seqscan = off');
    await c.query('SET enable_bitmapscan = off');
    const { rows } = await c.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    await c.end();
    done();
  }
}

/** The log's rows, all columns, in sequence order. */
const everyRow = (url: string) =>
  query<{ r: string }>(url, 'SELECT l::text AS r FROM core.event_log l ORDER BY sequence_number').then((rows) =>
    rows.map((x) => x.r),
  );

/**
 * The seed's time indexes made covering (issue #19, ADR 0019), month by month with CREATE INDEX
 * CONCURRENTLY: every month and the DEFAULT partition get them under the names they had, the
 * rows do not change, a month created later inherits them, an interrupted run resumes, and
 * `down` gives the plain indexes back.
 */
describe('covering time indexes on the partitioned log', () => {
  it('cover every month, keep the names and rows, reach months created later, and come back off', async () => {
    const url = await emptyDatabase();
    await migrateLatest(url);
    expect(await rollbackThrough(url, MIGRATION)).toEqual(rollbackOrder(MIGRATION));
    // rows in four past months and one no month covers (DEFAULT)
    await query(
      url,
      `SELECT core.criar_particao_event_log((now() - m * interval '1 month')::date) FROM generate_series(1, 4) m;
       INSERT INTO core.event_log (event_id, tipo, origem, payload, timestamp, criado_em)
       SELECT gen_random_uuid(), 'demanda.categorizada', 'D-3', jsonb_build_object('g', g),
              now() - g * interval '25 minutes', now() - interval '120 days' + g * interval '25 minutes'
         FROM generate_series(1, 6000) g;
       INSERT INTO core.event_log (event_id, tipo, origem, payload, criado_em)
       VALUES (gen_random_uuid(), 't', 'D-3', '{}', '2031-05-17T12:00:00Z')`,
    );
    const before = await everyRow(url);
    const plain = await timeIndexes(url);
    expect(plain.some((i) => i.d.includes('INCLUDE'))).toBe(false);

    expect(await migrateLatest(url)).toEqual([MIGRATION, ...AFTER]);
    const covering = await timeIndexes(url);
    // the same index names on the same tables, each now covering and valid
    expect(covering.map((i) => [i.i, i.t])).toEqual(plain.map((i) => [i.i, i.t]));
    expect(covering.every((i) => i.valid && i.d.endsWith(COVERING))).toBe(true);
    expect(covering.map((i) => i.t)).toEqual(expect.arrayContaining(['event_log', 'event_log_padrao']));
    expect(await everyRow(url)).toEqual(before);
    // applied again: nothing to do
    expect(await migrateLatest(url)).toEqual([]);

    // a month created afterwards gets them from the parent
    await query(url, `SELECT core.criar_particao_event_log('2032-01-01')`);
    const later = (await timeIndexes(url)).filter((i) => i.t === 'event_log_2032_01');
    expect(later).toHaveLength(2);
    expect(later.every((i) => i.d.endsWith(COVERING))).toBe(true);

    // the page of a time window is read through the covering index alone
    await query(url, 'VACUUM ANALYZE core.event_log');
    const plan = await explain(
      url,
      `SELECT sequence_number, criado_em FROM core.event_log
        WHERE timestamp >= now() - interval '1 day' ORDER BY sequence_number LIMIT 101`,
    );
    expect(plan).toMatch(/Index Only Scan using event_log_\d{4}_\d{2}_timestamp/);

    // down: the seed's plain indexes, same names
    expect(await rollbackThrough(url, MIGRATION)).toEqual(rollbackOrder(MIGRATION));
    const back = await timeIndexes(url);
    expect(back.every((i) => i.valid && !i.d.includes('INCLUDE'))).toBe(true);
    expect(back.filter((i) => i.t === 'event_log').map((i) => i.i)).toEqual([
      'event_log_timestamp_idx',
      'event_log_tipo_timestamp_idx',
    ]);
    expect(await everyRow(url)).toEqual([...before]);
  });

  it('an interrupted run (a half-built new index, one month invalid) is finished by the next', async () => {
    const url = await emptyDatabase();
    await migrateLatest(url);
    expect(await rollbackThrough(url, MIGRATION)).toEqual(rollbackOrder(MIGRATION));
    await query(
      url,
      `INSERT INTO core.event_log (event_id, tipo, origem, payload)
       SELECT gen_random_uuid(), 'demanda.categorizada', 'D-3', '{}' FROM generate_series(1, 500)`,
    );
    const [month] = await query<{ p: string }>(url, `SELECT tableoid::regclass::text AS p FROM core.event_log LIMIT 1`);
    const p = (month?.p ?? '').replace(/^core\./, '');
    // what a run killed mid-way leaves: the parent's new index (invalid), one month's attached,
    // and another month's index marked invalid (a failed CONCURRENTLY build)
    await query(
      url,
      `CREATE INDEX event_log_timestamp_idx_novo ON ONLY core.event_log USING btree (timestamp) ${COVERING};
       CREATE INDEX event_log_padrao_timestamp_idx_novo ON core.event_log_padrao USING btree (timestamp) ${COVERING};
       ALTER INDEX core.event_log_timestamp_idx_novo ATTACH PARTITION core.event_log_padrao_timestamp_idx_novo;
       CREATE INDEX ${p}_timestamp_idx_novo ON core.${p} USING btree (timestamp) ${COVERING};
       UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'core.${p}_timestamp_idx_novo'::regclass;`,
    );
    expect(await migrateLatest(url)).toEqual([MIGRATION, ...AFTER]);
    const after = await timeIndexes(url);
    expect(after.every((i) => i.valid && i.d.endsWith(COVERING))).toBe(true);
    expect(after.filter((i) => i.t === p).map((i) => i.i)).toEqual([`${p}_timestamp_idx`, `${p}_tipo_timestamp_idx`]);
    const [left] = await query<{ n: string }>(
      url,
      `SELECT count(*)::text AS n FROM pg_class WHERE relnamespace = 'core'::regnamespace AND relname LIKE '%\\_novo'`,
    );
    expect(left?.n).toBe('0');
  });
});
