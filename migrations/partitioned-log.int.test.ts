import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { migrateLatest } from './index';
import { emptyDatabase, laterThan, query, rollbackOrder, rollbackThrough } from './testing';
import { trackClient } from '../test/harness';

const PARTITIONING = '20261202120000_partition_event_log_by_month';
/** The migrations after the partitioning, rolled back before it and re-applied with it. */
const AFTER = laterThan(PARTITIONING);

/** Every row of the log, all columns, as text in sequence order: compared before and after. */
const everyRow = (url: string) =>
  query<{ r: string }>(url, 'SELECT l::text AS r FROM core.event_log l ORDER BY sequence_number').then((rows) =>
    rows.map((x) => x.r),
  );

/** A reader polling `sequence_number > cursor`, as colonies and the audit tools do. */
function poller(url: string): { seen: bigint[]; stop(): Promise<void>; errors: string[] } {
  const seen: bigint[] = [];
  const errors: string[] = [];
  let running = true;
  const client = new pg.Client({ connectionString: url });
  const done = trackClient('poller');
  const loop = (async () => {
    await client.connect();
    let cursor = 0n;
    while (running) {
      try {
        const { rows } = await client.query<{ s: string }>(
          'SELECT sequence_number::text AS s FROM core.event_log WHERE sequence_number > $1 ORDER BY sequence_number LIMIT 200',
          [cursor.toString()],
        );
        for (const r of rows) seen.push(BigInt(r.s));
        if (rows.length > 0) cursor = BigInt(rows.at(-1)!.s);
        else await new Promise((r) => setTimeout(r, 5));
      } catch (err) {
        errors.push((err as Error).message);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  })();
  return {
    seen,
    errors,
    stop: async () => {
      running = false;
      await loop;
      await client.end();
      done();
    },
  };
}

/**
 * `core.event_log` partitioned by month (issue #20, ADR 0017): the migration of a populated log
 * under polling readers, uniqueness of event_id across months, the DEFAULT partition, and the
 * way back.
 */
describe('the monthly-partitioned log', () => {
  it('migrates a log spread over seven months while readers poll: nothing skipped, nothing duplicated, the same rows; and back', async () => {
    const url = await emptyDatabase();
    await migrateLatest(url);
    expect(await rollbackThrough(url, PARTITIONING)).toEqual(rollbackOrder(PARTITIONING)); // the log as it was before
    // 7,000 rows over seven months, in sequence order, with DLQ entries pointing at some
    await query(
      url,
      `INSERT INTO core.event_log (event_id, tipo, origem, correlacao_id, payload, timestamp, criado_em, tenant_id)
       SELECT gen_random_uuid(), 'demanda.categorizada', 'D-3', gen_random_uuid(), jsonb_build_object('g', g),
              now() - interval '200 days' + g * interval '40 minutes', now() - interval '200 days' + g * interval '40 minutes',
              CASE WHEN g % 7 = 0 THEN gen_random_uuid() END
         FROM generate_series(1, 7000) g`,
    );
    await query(
      url,
      `INSERT INTO core.dead_letter_queue (event_id, sequence_number, colonia, mensagem_erro)
       SELECT event_id, sequence_number, 'D-4', 'falhou' FROM core.event_log WHERE sequence_number % 1000 = 0`,
    );
    const before = await everyRow(url);
    const readers = [poller(url), poller(url), poller(url)];
    await new Promise((r) => setTimeout(r, 50)); // some have read part of the log already
    expect(await migrateLatest(url)).toEqual([PARTITIONING, ...AFTER]);
    const last = BigInt(before.length);
    const deadline = Date.now() + 30_000;
    while (readers.some((r) => r.seen.at(-1) !== last) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    await Promise.all(readers.map((r) => r.stop()));
    for (const r of readers) {
      expect(r.errors).toEqual([]);
      expect(r.seen).toEqual(Array.from({ length: before.length }, (_, i) => BigInt(i + 1)));
    }
    expect(await everyRow(url)).toEqual(before);
    const parts = await query<{ p: string; n: string }>(
      url,
      `SELECT tableoid::regclass::text AS p, count(*)::text AS n FROM core.event_log GROUP BY 1 ORDER BY 1`,
    );
    expect(parts.length).toBeGreaterThanOrEqual(7);
    expect(parts.every((p) => /^core\.event_log_\d{4}_\d{2}$/.test(p.p))).toBe(true); // nothing in DEFAULT
    const [ids] = await query<{ n: string }>(url, 'SELECT count(*)::text AS n FROM core.event_ids');
    expect(ids?.n).toBe(String(before.length));
    // the seed's indexes exist on every month
    const perMonth = await query<{ p: string; n: string }>(
      url,
      `SELECT tablename AS p, count(*)::text AS n FROM pg_indexes
        WHERE schemaname = 'core' AND tablename ~ '^event_log_[0-9]{4}_[0-9]{2}$' GROUP BY 1`,
    );
    expect(new Set(perMonth.map((p) => p.n))).toEqual(new Set(['9'])); // pkey + the 8 others
    // the sequence goes on where it was
    const [next] = await query<{ s: string }>(
      url,
      `INSERT INTO core.event_log (event_id, tipo, origem, payload) VALUES (gen_random_uuid(), 't', 'D-3', '{}') RETURNING sequence_number::text AS s`,
    );
    expect(next?.s).toBe(String(before.length + 1));

    // down: one table again, the same rows, the unique event_id index and the FK back on it
    expect(await rollbackThrough(url, PARTITIONING)).toEqual(rollbackOrder(PARTITIONING));
    expect((await everyRow(url)).slice(0, before.length)).toEqual(before);
    const [kind] = await query<{ k: string }>(
      url,
      `SELECT relkind::text AS k FROM pg_class WHERE oid = 'core.event_log'::regclass`,
    );
    expect(kind?.k).toBe('r');
    expect(await migrateLatest(url)).toEqual([PARTITIONING, ...AFTER]);
    expect((await everyRow(url)).slice(0, before.length)).toEqual(before);
  });

  it('keeps event_id unique across months, whoever inserts; the DLQ references core.event_ids', async () => {
    const url = await emptyDatabase();
    await migrateLatest(url);
    const id = randomUUID();
    await query(
      url,
      `INSERT INTO core.event_log (event_id, tipo, origem, payload, criado_em) VALUES ('${id}', 't', 'D-3', '{}', now() - interval '40 days')`,
    );
    // the same event_id in another month: refused, as the unique index refused it before
    await expect(
      query(url, `INSERT INTO core.event_log (event_id, tipo, origem, payload) VALUES ('${id}', 't', 'D-3', '{}')`),
    ).rejects.toMatchObject({ code: '23505', constraint: 'event_ids_pkey' });
    // in one statement too (COPY and multi-row inserts go through the same statement trigger)
    const twice = randomUUID();
    await expect(
      query(
        url,
        `INSERT INTO core.event_log (event_id, tipo, origem, payload, criado_em)
         VALUES ('${twice}', 't', 'D-3', '{}', now()), ('${twice}', 't', 'D-3', '{}', now() - interval '40 days')`,
      ),
    ).rejects.toMatchObject({ code: '23505' });
    const [n] = await query<{ n: string }>(
      url,
      `SELECT count(*)::text AS n FROM core.event_log WHERE event_id = '${twice}'`,
    );
    expect(n?.n).toBe('0'); // the failed statement left nothing
    // a DLQ entry may only name a logged event
    await expect(
      query(
        url,
        `INSERT INTO core.dead_letter_queue (event_id, sequence_number, colonia, mensagem_erro) VALUES ('${randomUUID()}', 1, 'D-4', 'x')`,
      ),
    ).rejects.toMatchObject({ code: '23503' });
    await query(
      url,
      `INSERT INTO core.dead_letter_queue (event_id, sequence_number, colonia, mensagem_erro)
       SELECT event_id, sequence_number, 'D-4', 'x' FROM core.event_ids WHERE event_id = '${id}'`,
    );
  });

  it('puts a row no month covers in DEFAULT; creating its month moves it; the months ahead are created once', async () => {
    const url = await emptyDatabase();
    await migrateLatest(url);
    const far = randomUUID();
    await query(
      url,
      `INSERT INTO core.event_log (event_id, tipo, origem, payload, criado_em) VALUES ('${far}', 't', 'D-3', '{}', '2031-05-17T12:00:00Z')`,
    );
    const where = () =>
      query<{ p: string }>(url, `SELECT tableoid::regclass::text AS p FROM core.event_log WHERE event_id = '${far}'`);
    expect(await where()).toEqual([{ p: 'core.event_log_padrao' }]);
    expect(await query(url, `SELECT core.criar_particao_event_log('2031-05-01') AS p`)).toEqual([
      { p: 'event_log_2031_05' },
    ]);
    expect(await where()).toEqual([{ p: 'core.event_log_2031_05' }]);
    expect(await query(url, `SELECT core.criar_particao_event_log('2031-05-20') AS p`)).toEqual([{ p: null }]);
    // the current month and three ahead exist from the migration: nothing to create
    expect(await query(url, 'SELECT core.garantir_particoes_event_log(3) AS p')).toEqual([]);
    const created = await query<{ p: string }>(url, 'SELECT core.garantir_particoes_event_log(6) AS p');
    expect(created).toHaveLength(3); // months 4, 5 and 6 ahead
    expect(await query(url, 'SELECT core.garantir_particoes_event_log(6) AS p')).toEqual([]);
  });
});
