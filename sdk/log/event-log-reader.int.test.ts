import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { createTestDatabase, serviceEnv, type TestDatabase } from '../../test/harness';
import { EventBus, LIMITE_TOTAL_EXATO, silentLogger, type ConsultarEventosDto, type EventoDoLog } from '..';

/** Inserts `n` rows of `tipo` (the bridge's job in production; here, fixtures as in seed 7.3). */
async function seedRows(db: TestDatabase, n: number, tipo: string, correlacao = randomUUID()): Promise<void> {
  await db.pool.query(
    `INSERT INTO core.event_log (event_id, tipo, origem, correlacao_id, timestamp, payload)
     SELECT gen_random_uuid(), $1, 'D-x', $2::uuid, '2026-06-15T10:00:00Z'::timestamptz + (g || ' seconds')::interval, jsonb_build_object('i', g)
       FROM generate_series(1, $3) g`,
    [tipo, correlacao, n],
  );
}

/** A bus whose reads go to `db` (no publishing in these tests). */
const readerBus = (db: TestDatabase): EventBus =>
  new EventBus({
    brokers: serviceEnv().brokers,
    registryUrl: serviceEnv().registryUrl,
    pool: db.pool,
    logger: silentLogger,
  });

describe('reads of the log (seed 4.3-4.5)', () => {
  let db: TestDatabase;
  let bus: EventBus;
  const corr = randomUUID();

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = readerBus(db);
    await seedRows(db, 300, 'demanda.recebida', corr);
    await seedRows(db, 400, 'demanda.categorizada');
    await seedRows(db, 1500, 'parametros.atualizados');
  });
  afterAll(() => bus.encerrar());

  it('T3: filters by type and paginates', async () => {
    const page1 = await bus.consultarEventos({ tipo: 'demanda.recebida', limite: 100 });
    const page2 = await bus.consultarEventos({ tipo: 'demanda.recebida', limite: 100, deslocamento: 100 });
    expect(page1).toMatchObject({ total: 300, total_exato: true, limite: 100, deslocamento: 0 });
    expect(page1.linhas.every((e) => e.tipo === 'demanda.recebida' && e.redigido)).toBe(true);
    expect(page2.linhas[0]!.sequence_number).toBeGreaterThan(page1.linhas.at(-1)!.sequence_number);
  });

  it('keyset paging: proximo_cursor walks every row of the filter once, in order, the same as deslocamento; null on the last page', async () => {
    const walk = async (f: ConsultarEventosDto, limite: number) => {
      const seen: bigint[] = [];
      let cursor: string | null | undefined;
      let pages = 0;
      do {
        const p = await bus.consultarEventos({ ...f, limite, ...(cursor ? { apos_sequence: cursor } : {}) });
        expect(p.total).toBe((await bus.consultarEventos({ ...f, limite: 1 })).total); // the cursor never changes the total
        seen.push(...p.linhas.map((e) => e.sequence_number));
        // the cursor is the last row shown, or null on the last page
        expect(p.proximo_cursor ?? String(p.linhas.at(-1)?.sequence_number)).toBe(
          String(p.linhas.at(-1)?.sequence_number),
        );
        cursor = p.proximo_cursor;
        pages++;
      } while (cursor !== null);
      return { seen, pages };
    };
    await fc.assert(
      fc.asyncProperty(
        // each filter with the same predicate in JavaScript, to check against the whole log
        fc.constantFrom<[ConsultarEventosDto, (e: EventoDoLog) => boolean]>(
          [{ tipo: 'demanda.recebida' }, (e) => e.tipo === 'demanda.recebida'],
          [{ correlacao_id: corr, sequence_inicio: 40 }, (e) => e.correlacao_id === corr && e.sequence_number >= 40n],
          [
            { timestamp_inicio: '2026-06-15T10:01:00Z', timestamp_fim: '2026-06-15T10:03:00Z' },
            (e) => e.timestamp >= '2026-06-15T10:01:00.000Z' && e.timestamp <= '2026-06-15T10:03:00.000Z',
          ],
          [{}, () => true],
        ),
        fc.integer({ min: 1, max: 500 }),
        async ([f, matches], limite) => {
          const all = await bus.replayDeSequence(0);
          const { seen, pages } = await walk(f, limite);
          const expected = (await bus.consultarEventos({ ...f, limite: 500 })).total;
          expect(seen).toHaveLength(expected);
          expect(pages).toBe(Math.max(1, Math.ceil(expected / limite)));
          expect(new Set(seen).size).toBe(seen.length);
          expect(seen).toEqual([...seen].sort((a, b) => (a < b ? -1 : 1)));
          expect(seen).toEqual(all.filter(matches).map((e) => e.sequence_number));
          const byOffset = await bus.consultarEventos({ ...f, limite, deslocamento: limite });
          expect(byOffset.linhas.map((e) => e.sequence_number)).toEqual(seen.slice(limite, 2 * limite));
        },
      ),
      { numRuns: 12 },
    );
    const last = await bus.consultarEventos({ apos_sequence: (await bus.obterMaiorSequence()) - 1n });
    expect(last.linhas).toHaveLength(1);
    expect(last.proximo_cursor).toBeNull();
    expect((await bus.consultarEventos({ apos_sequence: await bus.obterMaiorSequence() })).linhas).toEqual([]);
  });

  it('refuses apos_sequence with deslocamento, and an apos_sequence that is no BIGINT, naming the field', async () => {
    await expect(bus.consultarEventos({ apos_sequence: 10, deslocamento: 5 })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
      message: expect.stringContaining('apos_sequence and deslocamento') as unknown,
    });
    for (const bad of ['-1', '1.5', '9223372036854775808', 'abc', '1 OR 1=1'])
      await expect(bus.consultarEventos({ apos_sequence: bad })).rejects.toMatchObject({
        code: 'BAD_REQUEST',
        message: expect.stringContaining('apos_sequence') as unknown,
      });
    // deslocamento 0 with a cursor is the same as none
    expect(
      (await bus.consultarEventos({ apos_sequence: 0, deslocamento: 0, limite: 1 })).linhas[0]?.sequence_number,
    ).toBe(1n);
  });

  it('T14: caps the page at 500 whatever limite asks', async () => {
    const r = await bus.consultarEventos({ limite: 10_000 });
    expect(r.limite).toBe(500);
    expect(r.linhas).toHaveLength(500);
    expect(r.total).toBe(2200);
  });

  it('filters by correlacao_id, origin, time and sequence ranges together', async () => {
    const r = await bus.consultarEventos({
      correlacao_id: corr,
      origem: 'D-x',
      timestamp_inicio: '2026-06-15T10:00:10Z',
      timestamp_fim: '2026-06-15T10:00:19Z',
      sequence_inicio: 1,
      sequence_fim: 15,
    });
    expect(r.linhas.map((e) => Number(e.sequence_number))).toEqual([10, 11, 12, 13, 14, 15]);
  });

  it('T4/T15/T16: replays after a sequence in order, empty when nothing is new, filtered by type', async () => {
    const all = await bus.replayDeSequence(0);
    expect(all).toHaveLength(2200); // three batches of up to 1000
    expect(all.map((e) => e.sequence_number)).toEqual(
      [...all.map((e) => e.sequence_number)].sort((a, b) => (a < b ? -1 : 1)),
    );
    expect(await bus.replayDeSequence(await bus.obterMaiorSequence())).toEqual([]);
    const some = await bus.replayDeSequence(250, ['demanda.recebida', 'demanda.categorizada']);
    expect(some).toHaveLength(450);
    expect(new Set(some.map((e) => e.tipo))).toEqual(new Set(['demanda.recebida', 'demanda.categorizada']));
    expect(some[0]!.sequence_number).toBe(251n);
  });

  it('streams the same range one event at a time', async () => {
    let n = 0;
    let last = 0n;
    for await (const e of bus.replayStream(100)) {
      expect(e.sequence_number).toBeGreaterThan(last);
      last = e.sequence_number;
      n++;
    }
    expect(n).toBe(2100);
  });

  it('T5: finds an event by id, or null', async () => {
    const id = (await bus.obterUltimoEventId())!;
    expect((await bus.obterEventoPorId(id))?.sequence_number).toBe(await bus.obterMaiorSequence());
    expect(await bus.obterEventoPorId(randomUUID())).toBeNull();
    expect(await bus.obterEventoPorId('not-a-uuid')).toBeNull();
  });

  it('rejects malformed filters with a typed error and treats injection strings as plain values', async () => {
    await expect(bus.consultarEventos({ correlacao_id: "x' OR 1=1 --" })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await expect(bus.consultarEventos({ timestamp_inicio: 'ontem' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(bus.consultarEventos({ limite: -1 })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(bus.consultarEventos({ sequence_inicio: '1; DROP TABLE core.event_log' })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    expect((await bus.consultarEventos({ tipo: "demanda.recebida' OR '1'='1" })).total).toBe(0);
    expect((await bus.consultarEventos({})).total).toBe(2200);
  });

  it('filter values travel as escaped literals: hostile texts match exactly their rows, or are refused, and run nothing (fast-check)', async () => {
    const hostile = fc.oneof(
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }),
      fc.constantFrom(
        "x' OR '1'='1",
        "\\' ; DROP TABLE core.event_log; --",
        "E'\\x00'",
        '$1',
        '$$; SELECT pg_sleep(5); $$',
        // replacement patterns of String.prototype.replace: the value must never be one
        "$' $& $` $1",
        "');COMMIT;SELECT 1;--",
        '\\',
        "'",
        'a\u0000b',
      ),
    );
    const before = (await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM core.event_log')).rows[0]!.n;
    let inserted = 0;
    await fc.assert(
      fc.asyncProperty(hostile, async (v) => {
        // refused by the filter check (control characters, NUL): a typed error, never a SQL one
        const refused = async (f: ConsultarEventosDto): Promise<string | undefined> =>
          bus.consultarEventos({ ...f, limite: 10 }).then(
            () => undefined,
            (err: unknown) => (err as { code?: string }).code ?? String(err),
          );
        const codes = [await refused({ tipo: v }), await refused({ payload_campo: 'demanda_id', payload_valor: v })];
        expect(codes.filter((c) => c !== undefined && c !== 'BAD_REQUEST')).toEqual([]);
        if (codes.some((c) => c !== undefined)) return;
        // accepted: a row holding exactly that value is found by it, and only it
        const id = randomUUID();
        await db.pool.query(
          `INSERT INTO core.event_log (event_id, tipo, origem, payload) VALUES ($1, $2::text, 'D-x', jsonb_build_object('demanda_id', $2::text))`,
          [id, v],
        );
        inserted++;
        for (const f of [{ tipo: v }, { payload_campo: 'demanda_id', payload_valor: v }]) {
          const page = await bus.consultarEventos({ ...f, limite: 10 });
          expect(page.linhas.map((e) => e.event_id)).toContain(id);
          expect(page.linhas.every((e) => (f.tipo !== undefined ? e.tipo === v : e.payload.demanda_id === v))).toBe(
            true,
          );
        }
      }),
      { numRuns: 60 },
    );
    expect((await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM core.event_log')).rows[0]!.n).toBe(
      before + inserted,
    );
    await db.pool.query("DELETE FROM core.event_log WHERE origem = 'D-x' AND payload ? 'demanda_id'");
  });

  it('searches a payload key through the GIN index (event_log_payload_idx), never a sequential scan', async () => {
    const r = await bus.consultarEventos({ payload_campo: 'i', payload_valor: '7' });
    expect(r.linhas).toEqual([]); // the fixtures hold numbers: a string value matches only strings
    await db.pool.query(
      `UPDATE core.event_log SET payload = payload || jsonb_build_object('demanda_id', 'd-' || sequence_number) WHERE sequence_number <= 50`,
    );
    const hit = await bus.consultarEventos({ payload_campo: 'demanda_id', payload_valor: 'd-42' });
    expect(hit.linhas.map((e) => Number(e.sequence_number))).toEqual([42]);
    expect(hit).toMatchObject({ total: 1, total_exato: true, proximo_cursor: null });
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL enable_seqscan = off'); // a small table: make the planner show what serves @>
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT 1 FROM core.event_log WHERE payload @> '{"demanda_id":"d-42"}'::jsonb`,
      );
      // the partitioned log (ADR 0017): each month's copy of the index, event_log_<yyyy_mm>_payload_idx
      const plan = rows.map((x) => x['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Bitmap Index Scan on event_log_\w*payload_idx/);
      expect(plan).not.toContain('Seq Scan');
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });

  it('reports DLQ statistics and pending entries per colony', async () => {
    const rows = (await bus.consultarEventos({ limite: 3 })).linhas;
    for (const [i, e] of rows.entries()) {
      await db.pool.query(
        `INSERT INTO core.dead_letter_queue (event_id, sequence_number, colonia, mensagem_erro, status) VALUES ($1, $2, $3, 'x', $4)`,
        [e.event_id, e.sequence_number.toString(), i < 2 ? 'D-5' : 'D-6', i === 1 ? 'retrying' : 'pendente'],
      );
    }
    expect(await bus.obterEstatisticasDLQ()).toEqual({
      pendentes_por_colonia: { 'D-5': 2, 'D-6': 1 },
      total_pendentes: 3,
    });
    expect((await bus.obterPendentesDLQ('D-5')).map((d) => d.event_id)).toEqual([rows[0]!.event_id]);
  });
});

describe(`total: exact up to ${LIMITE_TOTAL_EXATO} rows, the planner's estimate above`, () => {
  let db: TestDatabase;
  let bus: EventBus;

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = readerBus(db);
    await seedRows(db, LIMITE_TOTAL_EXATO, 'demanda.recebida');
    await seedRows(db, 14_000, 'demanda.categorizada');
    await db.pool.query('ANALYZE core.event_log');
  });
  afterAll(() => bus.encerrar());

  it('counts exactly at the bound, estimates past it (never below the bound + 1), and says which', async () => {
    const at = await bus.consultarEventos({ tipo: 'demanda.recebida', limite: 5 });
    expect(at).toMatchObject({ total: LIMITE_TOTAL_EXATO, total_exato: true });
    const over = await bus.consultarEventos({ tipo: 'demanda.categorizada', limite: 5 });
    expect(over.total_exato).toBe(false);
    expect(over.total).toBeGreaterThan(LIMITE_TOTAL_EXATO);
    // ANALYZE's estimate of an equality on a two-value column is close to the truth
    expect(Math.abs(over.total - 14_000)).toBeLessThan(1_400);
    const all = await bus.consultarEventos({ limite: 5 });
    expect(all.total_exato).toBe(false);
    expect(Math.abs(all.total - 24_000)).toBeLessThan(2_400);
    // a narrow filter inside the broad one is exact again
    const narrow = await bus.consultarEventos({ tipo: 'demanda.categorizada', sequence_inicio: 20_001, limite: 5 });
    expect(narrow).toMatchObject({ total: 4_000, total_exato: true });
    expect(over.proximo_cursor).toBe(String(over.linhas.at(-1)!.sequence_number));
  });

  it('reuses an estimate for its filter a while (the log only grows); an exact total is counted again every time', async () => {
    const over = await bus.consultarEventos({ tipo: 'demanda.categorizada', limite: 5 });
    await seedRows(db, 6_000, 'demanda.categorizada');
    await db.pool.query('ANALYZE core.event_log');
    // within ESTIMATIVA_VALIDA_MS the same filter gives the same estimate; its pages are fresh
    const again = await bus.consultarEventos({ tipo: 'demanda.categorizada', limite: 5, apos_sequence: 24_000 });
    expect(again).toMatchObject({ total: over.total, total_exato: false });
    expect(again.linhas[0]?.sequence_number).toBe(24_001n);
    // another filter is estimated on its own (and sees the new rows)
    const other = await bus.consultarEventos({ tipo: 'demanda.categorizada', origem: 'D-x', limite: 5 });
    expect(other.total_exato).toBe(false);
    expect(Math.abs(other.total - 20_000)).toBeLessThan(2_000);
    // exactly at the bound, then one row more: the exact total is not kept
    const at = await bus.consultarEventos({ tipo: 'demanda.recebida', limite: 5 });
    expect(at).toMatchObject({ total: LIMITE_TOTAL_EXATO, total_exato: true });
    await seedRows(db, 1, 'demanda.recebida');
    const past = await bus.consultarEventos({ tipo: 'demanda.recebida', limite: 5 });
    expect(past.total_exato).toBe(false);
    expect(past.total).toBeGreaterThan(LIMITE_TOTAL_EXATO);
  });
});
