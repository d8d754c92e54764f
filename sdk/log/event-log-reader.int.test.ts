import { randomUUID } from 'node:crypto';
import { createTestDatabase, serviceEnv, type TestDatabase } from '../../test/harness';
import { EventBus, silentLogger } from '..';

/** Inserts `n` rows of `tipo` (the bridge's job in production; here, fixtures as in seed 7.3). */
async function seedRows(db: TestDatabase, n: number, tipo: string, correlacao = randomUUID()): Promise<void> {
  await db.pool.query(
    `INSERT INTO core.event_log (event_id, tipo, origem, correlacao_id, timestamp, payload)
     SELECT gen_random_uuid(), $1, 'D-x', $2::uuid, '2026-06-15T10:00:00Z'::timestamptz + (g || ' seconds')::interval, jsonb_build_object('i', g)
       FROM generate_series(1, $3) g`,
    [tipo, correlacao, n],
  );
}

describe('reads of the log (seed 4.3-4.5)', () => {
  let db: TestDatabase;
  let bus: EventBus;
  const corr = randomUUID();

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = new EventBus({
      brokers: serviceEnv().brokers,
      registryUrl: serviceEnv().registryUrl,
      pool: db.pool,
      logger: silentLogger,
    });
    await seedRows(db, 300, 'demanda.recebida', corr);
    await seedRows(db, 400, 'demanda.categorizada');
    await seedRows(db, 1500, 'parametros.atualizados');
  });
  afterAll(() => bus.encerrar());

  it('T3: filters by type and paginates', async () => {
    const page1 = await bus.consultarEventos({ tipo: 'demanda.recebida', limite: 100 });
    const page2 = await bus.consultarEventos({ tipo: 'demanda.recebida', limite: 100, deslocamento: 100 });
    expect(page1).toMatchObject({ total: 300, limite: 100, deslocamento: 0 });
    expect(page1.linhas.every((e) => e.tipo === 'demanda.recebida' && e.redigido)).toBe(true);
    expect(page2.linhas[0]!.sequence_number).toBeGreaterThan(page1.linhas.at(-1)!.sequence_number);
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
