import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import fc from 'fast-check';
import { criarTabelaInbox, withInbox, withInboxEmLote } from './inbox';
import type { ManipuladorEvento } from './subscriber';
import { SAMPLE_PAYLOADS } from '../testing';
import { createTestDatabase, testKafka, waitFor, type TestDatabase } from '../../test/harness';
import { createTestBus } from '../../test/harness/bus';
import { defaultOpcoesEventBus } from '../options';

const categorizada = (event_id = randomUUID()) => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  event_id,
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});

describe('the PostgreSQL inbox', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await criarTabelaInbox(db.pool, 'd13');
    await criarTabelaInbox(db.pool, 'd13'); // idempotent
    await db.pool.query('CREATE TABLE d13.efeitos (event_id uuid, instancia text)');
  });
  const effects = async (eventId: string): Promise<string[]> =>
    (
      await db.pool.query<{ instancia: string }>('SELECT instancia FROM d13.efeitos WHERE event_id = $1', [eventId])
    ).rows.map((r) => r.instancia);
  const handler = (instancia: string, runs: string[]): ManipuladorEvento =>
    async function registrarEfeito(e, { transacao }) {
      runs.push(instancia);
      await (transacao as pg.PoolClient).query('INSERT INTO d13.efeitos VALUES ($1, $2)', [e.event_id, instancia]);
    };

  const inbox = () => ({ inbox: { pool: db.pool, schema: 'd13' } });
  /** Instance `a` of colony D-13 handles one event through the inbox, then shuts down. */
  const handledByFirstInstance = async () => {
    const a = await createTestBus();
    const runs: string[] = [];
    a.inscrever('demanda.categorizada', 'D-13', handler('a', runs), inbox());
    await a.inscricoesProntas();
    const dto = categorizada();
    await a.publicar(dto);
    await waitFor(() => runs.length === 1);
    await a.encerrar();
    return { namespace: a.topics.namespace, topic: a.topics.evento('demanda.categorizada'), runs, dto };
  };
  /** Instance `b` of the same colony, in the same namespace, with the same inbox. */
  const secondInstance = async (namespace: string, runs: string[]) => {
    const b = await createTestBus({ namespace });
    b.inscrever('demanda.categorizada', 'D-13', handler('b', runs), inbox());
    await b.inscricoesProntas();
    return b;
  };

  it('processes an event published twice once, even across two instances with separate memory', async () => {
    const { namespace, runs, dto } = await handledByFirstInstance();
    const b = await secondInstance(namespace, runs);
    await b.publicar(dto); // the same event_id again (a publisher retry)
    await waitFor(async () => /result="duplicate"} 1/.test(await b.metrics.registry.metrics()));
    expect(await effects(dto.event_id)).toEqual(['a']);
    expect(runs).toEqual(['a']);
  });

  it('rolls the handler’s writes and the inbox claim back when it throws; the retry processes it once', async () => {
    const bus = await createTestBus();
    let calls = 0;
    bus.inscrever(
      'demanda.categorizada',
      'D-13',
      async function falhaUmaVez(e, { transacao }) {
        calls++;
        await (transacao as pg.PoolClient).query('INSERT INTO d13.efeitos VALUES ($1, $2)', [
          e.event_id,
          `tentativa-${calls}`,
        ]);
        if (calls === 1) throw new Error('falha depois de escrever');
      },
      { ...inbox(), backoffInicialMs: 10 },
    );
    await bus.inscricoesProntas();
    const dto = categorizada();
    await bus.publicar(dto);
    await waitFor(() => calls === 2);
    await waitFor(async () => (await effects(dto.event_id)).length > 0);
    expect(await effects(dto.event_id)).toEqual(['tentativa-2']);
  });

  it('drops the redelivery that follows a crash between the handler and the offset commit', async () => {
    const { namespace, topic, runs, dto } = await handledByFirstInstance();
    // As if the offset commit had been lost: rewind the colony's group to the beginning.
    const admin = await testKafka().admin();
    const low = await admin.fetchTopicOffsets(topic);
    await admin.setOffsets({
      groupId: `${namespace}.colonia.D-13`,
      topic,
      partitions: low.map((p) => ({ partition: p.partition, offset: p.low })),
    });
    const b = await secondInstance(namespace, runs);
    await waitFor(async () => /result="duplicate"} 1/.test(await b.metrics.registry.metrics()), {
      message: 'redelivery seen and dropped',
    });
    expect(runs).toEqual(['a']);
    expect(await effects(dto.event_id)).toEqual(['a']);
  });

  /** A colony D-13 joining `namespace` from the beginning, its handler batching its inbox. */
  const batchingColony = async (namespace: string, manipulador: ManipuladorEvento, eventosPorTransacao = 50) => {
    const bus = await createTestBus({
      namespace,
      consumo: { ...defaultOpcoesEventBus.consumo, desdeOInicio: true },
    });
    bus.inscrever('demanda.categorizada', 'D-13', manipulador, {
      inbox: { pool: db.pool, schema: 'd13', eventosPorTransacao },
      tentativasExtras: 0,
      backoffInicialMs: 10,
    });
    await bus.inscricoesProntas();
    return bus;
  };
  const metric = async (bus: { metrics: { registry: { metrics(): Promise<string> } } }, line: RegExp) =>
    Number(line.exec(await bus.metrics.registry.metrics())?.[1] ?? 0);

  it('eventosPorTransacao: the events of a fetch share inbox transactions, each processed once, a duplicate dropped', async () => {
    const pub = await createTestBus();
    const dtos = Array.from({ length: 150 }, () => categorizada());
    // published before the colony joins: its first fetches hold many events each
    await pub.publicarLote([...dtos, dtos[7]!]);
    const runs = new Map<string, number>();
    const colony = await batchingColony(pub.topics.namespace, async function registrarEmLote(e, { transacao }) {
      runs.set(e.event_id, (runs.get(e.event_id) ?? 0) + 1);
      await (transacao as pg.PoolClient).query('INSERT INTO d13.efeitos VALUES ($1, txid_current()::text)', [
        e.event_id,
      ]);
    });
    await waitFor(
      async () => (await metric(colony, /feromonios_consume_total\{[^}]*result="duplicate"\} (\d+)/)) === 1,
    );
    // a handler's run is recorded when it starts, before its batch commits: wait for the commits
    // (success is counted once committed), or the rows below may miss the last batch's
    await waitFor(
      async () => (await metric(colony, /feromonios_consume_total\{[^}]*result="success"\} (\d+)/)) === dtos.length,
      { message: 'every event committed' },
    );
    const { rows } = await db.pool.query<{ event_id: string; n: number; tx: string }>(
      'SELECT event_id::text, count(*)::int AS n, min(instancia) AS tx FROM d13.efeitos WHERE event_id = ANY($1::uuid[]) GROUP BY 1',
      [dtos.map((d) => d.event_id)],
    );
    // every event's write once, and many events per transaction (not one each)
    expect(rows).toHaveLength(dtos.length);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(rows.map((r) => r.tx)).size).toBeLessThanOrEqual(dtos.length / 5);
    expect(await metric(colony, /feromonios_inbox_batches_total\{[^}]*resultado="committed"\} (\d+)/)).toBeGreaterThan(
      0,
    );
    expect(await metric(colony, /feromonios_consume_total\{[^}]*result="success"\} (\d+)/)).toBe(dtos.length);
  });

  it('eventosPorTransacao: one failing event rolls its batch back; the others are then kept once each, it alone is dead-lettered', async () => {
    const pub = await createTestBus();
    const dtos = Array.from({ length: 60 }, () => categorizada());
    const bad = dtos[31]!.event_id;
    await pub.publicarLote(dtos);
    const runs = new Map<string, number>();
    const colony = await batchingColony(pub.topics.namespace, async function falhaNoMeio(e, { transacao }) {
      runs.set(e.event_id, (runs.get(e.event_id) ?? 0) + 1);
      await (transacao as pg.PoolClient).query('INSERT INTO d13.efeitos VALUES ($1, $2)', [e.event_id, 'lote']);
      if (e.event_id === bad) throw new Error('falha depois de escrever');
    });
    await waitFor(async () => (await metric(colony, /feromonios_dlq_sent_total\{[^}]*\} (\d+)/)) === 1);
    // after the rollback the batch's events run one at a time, those after the failing one after
    // its dead-lettering: wait for every good event's commit (success is counted once committed),
    // not for its first run (recorded when the rolled-back batch ran it)
    await waitFor(
      async () => (await metric(colony, /feromonios_consume_total\{[^}]*result="success"\} (\d+)/)) === dtos.length - 1,
      { message: 'every good event committed' },
    );
    const { rows } = await db.pool.query<{ event_id: string; n: number }>(
      'SELECT event_id::text, count(*)::int AS n FROM d13.efeitos WHERE event_id = ANY($1::uuid[]) GROUP BY 1',
      [dtos.map((d) => d.event_id)],
    );
    expect(rows.map((r) => r.event_id).sort()).toEqual(
      dtos
        .map((d) => d.event_id)
        .filter((id) => id !== bad)
        .sort(),
    );
    expect(rows.every((r) => r.n === 1)).toBe(true);
    expect(await metric(colony, /feromonios_inbox_batches_total\{[^}]*resultado="rolled_back"\} (\d+)/)).toBe(1);
    // the failing event ran in the batch, then once alone (tentativasExtras: 0): one extra attempt
    expect(runs.get(bad)).toBe(2);
    const { rows: claimed } = await db.pool.query('SELECT 1 FROM d13.feromonios_inbox WHERE event_id = $1', [bad]);
    expect(claimed).toEqual([]);
  });

  it('withInboxEmLote: one claim for the batch; processed events and repeats are skipped, the rest run once, in order', async () => {
    const inboxD13 = { pool: db.pool, schema: 'd13' };
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    await withInbox(inboxD13, { event_id: b, manipulador: 'lote', tipo: 't' }, () => Promise.resolve());
    const ran: string[] = [];
    const claims = [a, b, c, a.toUpperCase()].map((event_id) => ({ event_id, manipulador: 'lote', tipo: 't' }));
    const { jaProcessados } = await withInboxEmLote(inboxD13, claims, async (trx, i) => {
      ran.push(claims[i]!.event_id);
      await trx.query('INSERT INTO d13.efeitos VALUES ($1, $2)', [claims[i]!.event_id, 'lote']);
    });
    expect(ran).toEqual([a, c]);
    expect(jaProcessados).toEqual([1, 3]);
    // a failure keeps nothing: neither the claims nor the writes of the events before it
    const [d, e] = [randomUUID(), randomUUID()];
    await expect(
      withInboxEmLote(
        inboxD13,
        [d, e].map((event_id) => ({ event_id, manipulador: 'lote', tipo: 't' })),
        async (trx, i) => {
          await trx.query('INSERT INTO d13.efeitos VALUES ($1, $2)', [[d, e][i], 'lote']);
          if (i === 1) throw new Error('falha');
        },
      ),
    ).rejects.toThrow('falha');
    expect(await effects(d)).toEqual([]);
    const { rows } = await db.pool.query('SELECT 1 FROM d13.feromonios_inbox WHERE event_id = ANY($1::uuid[])', [
      [d, e],
    ]);
    expect(rows).toEqual([]);
  });

  it('refuses an eventosPorTransacao that is not an integer from 1 to 500, naming it', async () => {
    const bus = await createTestBus();
    const outcomes = [0, 501, 1.5, Number.NaN].map((eventosPorTransacao) => {
      try {
        bus.inscrever('demanda.categorizada', 'D-13', () => undefined, {
          inbox: { pool: db.pool, schema: 'd13', eventosPorTransacao },
        });
        return 'accepted';
      } catch (err) {
        const { code, message } = err as { code?: string; message: string };
        return `${code} ${message.includes('eventosPorTransacao')}`;
      }
    });
    expect(outcomes).toEqual(Array(4).fill('INVALID_FIELD true'));
  });

  it('claims exactly the given handler name and type, whatever they hold (quotes, backslashes, SQL): the claim travels as literals with BEGIN', async () => {
    const hostile = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 60 }),
      fc.constantFrom("'); DROP TABLE d13.efeitos; --", "\\'", "E'\\x00'", '$$', '$1', "O'Brien\\n", ' '),
    );
    // PostgreSQL text holds no NUL: a handler name with one is refused by the database, never stored cut
    const storable = hostile.filter((v) => !v.includes('\u0000') && v.length <= 255);
    await fc.assert(
      fc.asyncProperty(storable, storable, async (manipulador, tipo) => {
        const event_id = randomUUID();
        const ran: string[] = [];
        const first = await withInbox(
          { pool: db.pool, schema: 'd13' },
          { event_id, manipulador, tipo },
          async (trx) => {
            ran.push('1');
            await trx.query('INSERT INTO d13.efeitos VALUES ($1, $2)', [event_id, manipulador]);
          },
        );
        const again = await withInbox({ pool: db.pool, schema: 'd13' }, { event_id, manipulador, tipo }, () => {
          ran.push('2');
          return Promise.resolve();
        });
        expect([first, again, ran]).toEqual([true, false, ['1']]);
        const { rows } = await db.pool.query<{ manipulador: string; tipo: string }>(
          'SELECT manipulador, tipo FROM d13.feromonios_inbox WHERE event_id = $1',
          [event_id],
        );
        expect(rows).toEqual([{ manipulador, tipo }]);
        expect(await effects(event_id)).toEqual([manipulador]);
      }),
      { numRuns: 60 },
    );
    // the efeitos table is still there (nothing ran as SQL)
    await db.pool.query('SELECT 1 FROM d13.efeitos LIMIT 1');
  });

  it('a claim PostgreSQL refuses fails the handler call and leaves no transaction open', async () => {
    const event_id = randomUUID();
    await expect(
      withInbox({ pool: db.pool, schema: 'd13' }, { event_id, manipulador: 'x'.repeat(256), tipo: 't' }, () =>
        Promise.resolve(),
      ),
    ).rejects.toMatchObject({ code: '22001' }); // value too long for VARCHAR(255)
    // a NUL (PostgreSQL text cannot hold one; it would end the query text): refused, nothing claimed
    await expect(
      withInbox({ pool: db.pool, schema: 'd13' }, { event_id, manipulador: 'a\u0000b', tipo: 't' }, () =>
        Promise.resolve(),
      ),
    ).rejects.toThrow();
    // every connection handed back is usable: no aborted transaction left behind
    await Promise.all(Array.from({ length: 8 }, () => db.pool.query('SELECT 1')));
    const { rows } = await db.pool.query('SELECT 1 FROM d13.feromonios_inbox WHERE event_id = $1', [event_id]);
    expect(rows).toEqual([]);
  });
});
