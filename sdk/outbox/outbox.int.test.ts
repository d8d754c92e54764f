import { randomUUID } from 'node:crypto';
import { ConfigResourceTypes } from 'kafkajs';
import knexFactory from 'knex';
import type { EventoConsultado } from '../contract';
import { ConfirmationTimeoutError, PublishValidationError } from '../errors';
import { criarTabelaOutbox } from './outbox';
import { ORDER_HEADER, parseOrder } from '../wire';
import { SAMPLE_PAYLOADS } from '../testing';
import type { EventBus } from '..';
import {
  createTestDatabase,
  groupLag,
  readTopic,
  registerCleanup,
  testKafka,
  topicMessageCount,
  waitFor,
  type TestDatabase,
} from '../../test/harness';
import { startTestBridge } from '../../test/harness/bridge';
import { spawnTs } from '../../test/harness/spawn';
import { createTestBus } from '../../test/harness/bus';

const categorizada = (patch: Record<string, unknown> = {}) => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'], ...patch },
});

const count = async (db: TestDatabase, sql: string, params: unknown[] = []): Promise<number> =>
  Number((await db.pool.query<{ n: string }>(sql, params)).rows[0]?.n ?? 0);

describe('transactional outbox and relay (seed 003 §6)', () => {
  let core: TestDatabase; // the platform's database (core.event_log)
  let colony: TestDatabase; // the colony's own database (its business tables and outbox)
  let bus: EventBus;

  beforeAll(async () => {
    core = await createTestDatabase();
    colony = await createTestDatabase();
    await criarTabelaOutbox(colony.pool, 'd3');
    await criarTabelaOutbox(colony.pool, 'd3'); // idempotent
    await colony.pool.query('CREATE TABLE d3.categorias (demanda_id uuid PRIMARY KEY, categoria text NOT NULL)');
    bus = await createTestBus({ pool: core.pool, outbox: { schema: 'd3', pool: colony.pool } });
    await startTestBridge(bus, core);
  });

  const topic = () => bus.topics.evento('demanda.categorizada');
  /** A `demanda.recebida` event whose text is `texto` (its size), on partition key `chave` if given. */
  const recebidaCom = (texto: string, chave?: string) => ({
    tipo: 'demanda.recebida',
    origem: 'D-1a',
    ...(chave === undefined ? {} : { chave_particao: chave }),
    payload: { ...SAMPLE_PAYLOADS['demanda.recebida'], texto_bruto: texto },
  });
  /**
   * Fault injection on this file's own `demanda.recebida` topic (created by a first publish):
   * records over 3 KB are refused for good (MESSAGE_TOO_LARGE). Returns the topic.
   */
  const topicRefusingOver3k = async (): Promise<string> => {
    await bus.publicar(recebidaCom('cria o tópico'));
    const t = bus.topics.evento('demanda.recebida');
    const a = await testKafka().admin();
    await a.alterConfigs({
      validateOnly: false,
      resources: [
        { type: ConfigResourceTypes.TOPIC, name: t, configEntries: [{ name: 'max.message.bytes', value: '3000' }] },
      ],
    });
    return t;
  };

  it('a rolled-back transaction publishes nothing; a committed one yields exactly one log row', async () => {
    const relay = await bus.iniciarRelayOutbox({ intervaloMs: 50 });
    const client = await colony.pool.connect();
    let rolledBack: EventoConsultado;
    try {
      await client.query('BEGIN');
      const demanda = randomUUID();
      await client.query(`INSERT INTO d3.categorias VALUES ($1, '1.1')`, [demanda]);
      rolledBack = await bus.publicarNaTransacao(client, categorizada({ demanda_id: demanda }));
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    const knex = knexFactory({ client: 'pg', connection: colony.url, pool: { min: 0, max: 1 } });
    registerCleanup(() => knex.destroy());
    const committed = await knex.transaction(async (trx) => {
      const demanda = randomUUID();
      await trx('d3.categorias').insert({ demanda_id: demanda, categoria: '2.3' });
      return bus.publicarNaTransacao(trx, categorizada({ demanda_id: demanda }));
    });
    await waitFor(async () => (await bus.obterEventoPorId(committed.event_id)) !== null);
    await relay.parar();
    expect(await bus.obterEventoPorId(rolledBack.event_id)).toBeNull();
    expect(await count(core, 'SELECT count(*) AS n FROM core.event_log')).toBe(1);
    expect(
      await count(colony, 'SELECT count(*) AS n FROM d3.feromonios_outbox WHERE event_id = $1', [rolledBack.event_id]),
    ).toBe(0);
    const row = (
      await colony.pool.query<{ publicado_em: Date | null; payload: unknown }>(
        'SELECT publicado_em, payload FROM d3.feromonios_outbox WHERE event_id = $1',
        [committed.event_id],
      )
    ).rows[0];
    expect(row?.publicado_em).toBeInstanceOf(Date);
    expect(row?.payload).toBeNull(); // the full payload does not linger once published
    expect(await topicMessageCount(topic())).toBe(1);
  });

  it('validates exactly as publicar: a bad event throws and leaves the transaction usable', async () => {
    const client = await colony.pool.connect();
    try {
      await client.query('BEGIN');
      await expect(
        bus.publicarNaTransacao(client, { tipo: 'demanda.categorizada', origem: 'D-3', payload: null as never }),
      ).rejects.toMatchObject({
        code: 'PAYLOAD_NOT_OBJECT',
        step: 'payload',
      });
      await expect(bus.publicarNaTransacao(client, categorizada({ nivel_precedencia: 'alto' }))).rejects.toBeInstanceOf(
        PublishValidationError,
      );
      await expect(
        bus.publicarNaTransacao(client, { ...categorizada(), tipo: 'demanda.legada' }),
      ).rejects.toMatchObject({
        code: 'DEPRECATED_TYPE',
      });
      expect((await client.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });

  it('publishes in commit order within a key, and the same event_id written twice is one row', async () => {
    const key = randomUUID();
    const ids: string[] = [];
    const duplicate = randomUUID();
    for (let i = 1; i <= 20; i++) {
      const client = await colony.pool.connect();
      await client.query('BEGIN');
      const e = await bus.publicarNaTransacao(client, {
        ...categorizada({ score_horizontal: i }),
        chave_particao: key,
      });
      if (i === 5) {
        await bus.publicarNaTransacao(client, { ...categorizada(), event_id: duplicate });
        await bus.publicarNaTransacao(client, { ...categorizada(), event_id: duplicate });
      }
      await client.query('COMMIT');
      client.release();
      ids.push(e.event_id);
    }
    const before = await topicMessageCount(topic());
    const relay = await bus.iniciarRelayOutbox({ intervaloMs: 50 });
    await waitFor(async () => (await topicMessageCount(topic())) === before + 21);
    await relay.parar();
    const messages = (await readTopic(topic(), before + 21)).filter((m) => m.key?.toString() === key);
    expect(messages.map((m) => m.headers?.ce_id?.toString())).toEqual(ids);
    expect(await count(colony, 'SELECT count(*) AS n FROM d3.feromonios_outbox WHERE event_id = $1', [duplicate])).toBe(
      1,
    );
  });

  it('two relays on one outbox never publish a row twice in a normal run', async () => {
    const other = await createTestBus({ namespace: bus.topics.namespace, outbox: { schema: 'd3', pool: colony.pool } });
    const before = await topicMessageCount(topic());
    const relays = await Promise.all([
      bus.iniciarRelayOutbox({ intervaloMs: 20, lote: 50 }),
      other.iniciarRelayOutbox({ intervaloMs: 20, lote: 50 }),
    ]);
    for (let batch = 0; batch < 10; batch++) {
      const client = await colony.pool.connect();
      await client.query('BEGIN');
      for (let i = 0; i < 60; i++) await bus.publicarNaTransacao(client, categorizada());
      await client.query('COMMIT');
      client.release();
    }
    await waitFor(
      async () =>
        (await count(colony, 'SELECT count(*) AS n FROM d3.feromonios_outbox WHERE publicado_em IS NULL')) === 0,
    );
    await Promise.all(relays.map((r) => r.parar()));
    expect(await topicMessageCount(topic())).toBe(before + 600);
  });

  it('after the relay process is killed -9 mid-run, a new relay publishes the rest: nothing lost, no duplicate log row', async () => {
    const n = 3000;
    const client = await colony.pool.connect();
    await client.query('BEGIN');
    const inserted = await client.query<{ event_id: string }>(
      `INSERT INTO d3.feromonios_outbox (event_id, tipo, versao_schema, timestamp_evento, origem, correlacao_id, payload)
       SELECT id, 'demanda.categorizada', '1.0.0', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'D-3', id, $1::jsonb
         FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, $2)) g
       RETURNING event_id::text`,
      [JSON.stringify(SAMPLE_PAYLOADS['demanda.categorizada']), n],
    );
    await client.query('COMMIT');
    client.release();
    // Count this test's own events: rows of earlier tests may still be reaching the log (the
    // bridge mirrors asynchronously), so "total before + n" is not a condition that must hold.
    const ids = inserted.rows.map((r) => r.event_id);
    const ownRowsInLog = (): Promise<number> =>
      count(core, 'SELECT count(*) AS n FROM core.event_log WHERE event_id = ANY($1::uuid[])', [ids]);
    const kafkaBefore = await topicMessageCount(topic());

    const relayProcess = spawnTs('scripts/outbox-relay.ts', {
      DATABASE_URL: colony.url,
      FEROMONIOS_TOPIC_NAMESPACE: bus.topics.namespace,
      OUTBOX_SCHEMA: 'd3',
      OUTBOX_BATCH_SIZE: '100',
      LOG_LEVEL: 'warn',
    });
    await waitFor(async () => (await topicMessageCount(topic())) > kafkaBefore + 300, { timeoutMs: 60_000 });
    relayProcess.child.kill('SIGKILL');
    await relayProcess.exited;
    const pendingAfterKill = await count(
      colony,
      'SELECT count(*) AS n FROM d3.feromonios_outbox WHERE publicado_em IS NULL',
    );
    expect(pendingAfterKill).toBeGreaterThan(0); // it really died mid-run

    const relay = await bus.iniciarRelayOutbox({ intervaloMs: 50 });
    await waitFor(
      async () =>
        (await count(colony, 'SELECT count(*) AS n FROM d3.feromonios_outbox WHERE publicado_em IS NULL')) === 0,
      {
        timeoutMs: 60_000,
      },
    );
    await relay.parar();
    await waitFor(async () => (await ownRowsInLog()) === n, {
      timeoutMs: 60_000,
      message: async () => `all ${n} events in the log (now ${await ownRowsInLog()})`,
    });
    expect(await count(core, 'SELECT count(*) - count(DISTINCT event_id) AS n FROM core.event_log')).toBe(0);
    const published = (await topicMessageCount(topic())) - kafkaBefore;
    expect(published).toBeGreaterThanOrEqual(n); // at-least-once: the batch in flight may go twice
    process.stdout.write(
      `[outbox kill -9] rows ${n}, pending at kill ${pendingAfterKill}, published ${published}, log rows ${n}\n`,
    );
  }, 120_000);

  it('a commit wakes the relay through NOTIFY, well before its polling interval', async () => {
    await criarTabelaOutbox(colony.pool, 'd8');
    const relay = await bus.iniciarRelayOutbox({ schema: 'd8', intervaloMs: 60_000 });
    // the first (empty) pass and its housekeeping (which LISTENs) are done: now it waits 60 s
    await waitFor(async () => (await bus.metrics.outboxPending.get()).values.some((v) => v.labels.schema === 'd8'));
    const client = await colony.pool.connect();
    await client.query('BEGIN');
    const e = await bus.publicarNaTransacao(client, categorizada(), { schema: 'd8' });
    await client.query('COMMIT');
    client.release();
    const committedAt = Date.now();
    await waitFor(async () => (await bus.obterEventoPorId(e.event_id)) !== null, { timeoutMs: 10_000 });
    await relay.parar();
    expect(Date.now() - committedAt).toBeLessThan(10_000); // the 60 s poll could not have done it
  });

  it('a row the broker refuses for good is set aside and the rows around it are published', async () => {
    await criarTabelaOutbox(colony.pool, 'd10');
    const recebida = (texto: string) => recebidaCom(texto);
    const t = await topicRefusingOver3k();
    const before = await topicMessageCount(t);
    const client = await colony.pool.connect();
    await client.query('BEGIN');
    const small1 = await bus.publicarNaTransacao(client, recebida('pequeno 1'), { schema: 'd10' });
    const big = await bus.publicarNaTransacao(client, recebida('x'.repeat(8000)), { schema: 'd10' });
    const small2 = await bus.publicarNaTransacao(client, recebida('pequeno 2'), { schema: 'd10' });
    await client.query('COMMIT');
    client.release();
    const relay = await bus.iniciarRelayOutbox({ schema: 'd10', intervaloMs: 50 });
    await waitFor(
      async () =>
        (await count(
          colony,
          'SELECT count(*) AS n FROM d10.feromonios_outbox WHERE publicado_em IS NULL AND falhou_em IS NULL',
        )) === 0,
      { timeoutMs: 60_000, message: 'every row published or set aside' },
    );
    await relay.parar();
    const rows = (
      await colony.pool.query<{ event_id: string; publicado: boolean; falhou: boolean; ultimo_erro: string | null }>(
        `SELECT event_id::text, publicado_em IS NOT NULL AS publicado, falhou_em IS NOT NULL AS falhou, ultimo_erro
           FROM d10.feromonios_outbox ORDER BY id`,
      )
    ).rows;
    expect(rows.map((r) => [r.event_id, r.publicado, r.falhou])).toEqual([
      [small1.event_id, true, false],
      [big.event_id, false, true],
      [small2.event_id, true, false],
    ]);
    expect(rows[1]?.ultimo_erro).toContain('refused');
    // the broker may have written the small rows of the refused batch already: re-sent row by
    // row, they may be in the topic twice (at-least-once), and once in the log
    const added = (await topicMessageCount(t)) - before;
    expect(added).toBeGreaterThanOrEqual(2);
    expect(added).toBeLessThanOrEqual(4);
    await waitFor(
      async () =>
        (await bus.obterEventoPorId(small1.event_id)) !== null &&
        (await bus.obterEventoPorId(small2.event_id)) !== null,
      { message: 'both small rows in the log' },
    );
    expect(await bus.obterEventoPorId(big.event_id)).toBeNull();
  });

  it('a batch refused for good is sent again row by row with its counters held open: no publish meanwhile carries a settled mark past a row not yet in Kafka', async () => {
    await criarTabelaOutbox(colony.pool, 'd12');
    const chave = `d12-${randomUUID()}`; // one partition: its offsets are the order of acknowledgement
    const recebida = (texto: string) => recebidaCom(texto, chave);
    const t = await topicRefusingOver3k();
    const client = await colony.pool.connect();
    await client.query('BEGIN');
    // one row too large for the topic among 30 small ones: the batch is refused for good
    const textos = Array.from({ length: 31 }, (_, i) => (i === 1 ? 'x'.repeat(8000) : `pequeno ${i}`));
    const rows: EventoConsultado[] = [];
    for (const texto of textos) rows.push(await bus.publicarNaTransacao(client, recebida(texto), { schema: 'd12' }));
    await client.query('COMMIT');
    client.release();
    // the same bus publishing all along, as a colony's request handlers would
    const concurrent: string[] = [];
    let publishing = true;
    const loops = Array.from({ length: 4 }, async () => {
      while (publishing) concurrent.push((await bus.publicar(recebida('ao lado'))).event_id);
    });
    const relay = await bus.iniciarRelayOutbox({ schema: 'd12', intervaloMs: 20 });
    await waitFor(
      async () =>
        (await count(
          colony,
          'SELECT count(*) AS n FROM d12.feromonios_outbox WHERE publicado_em IS NULL AND falhou_em IS NULL',
        )) === 0,
      { timeoutMs: 60_000, message: 'every row published or set aside' },
    );
    await relay.parar();
    publishing = false;
    await Promise.all(loops);
    const total = await topicMessageCount(t);
    const records = (await readTopic(t, total)).filter((m) => m.key?.toString() === chave);
    records.sort((x, y) => Number(x.offset) - Number(y.offset));
    const ordem = (m: (typeof records)[number]) => parseOrder(m.headers?.[ORDER_HEADER]?.toString());
    const idOf = (m: (typeof records)[number]) => m.headers?.ce_id?.toString();
    const small = new Set(rows.filter((_, i) => i !== 1).map((r) => r.event_id));
    // each small row's counter, and the offset of its first copy in the partition
    const firstAt = new Map<number, number>();
    records.forEach((m, i) => {
      const o = ordem(m);
      if (o && small.has(idOf(m) ?? '') && !firstAt.has(o.contador)) firstAt.set(o.contador, i);
    });
    expect(firstAt.size).toBe(30);
    expect(concurrent.length).toBeGreaterThan(0);
    // the invariant: a record's settled mark passes only counters already in the partition before it
    const broken: string[] = [];
    records.forEach((m, i) => {
      const o = ordem(m);
      if (!o || o.firme === null) return;
      for (const [c, at] of firstAt)
        if (c < o.firme && at > i)
          broken.push(`offset ${m.offset} mark ${o.firme} > ${c} (first at ${records[at]!.offset})`);
    });
    expect(broken).toEqual([]);
    const states = (
      await colony.pool.query<{ publicado: boolean; falhou: boolean }>(
        'SELECT publicado_em IS NOT NULL AS publicado, falhou_em IS NOT NULL AS falhou FROM d12.feromonios_outbox ORDER BY id',
      )
    ).rows.map((r) => [r.publicado, r.falhou]);
    expect(states).toEqual(textos.map((_, i) => (i === 1 ? [false, true] : [true, false])));
  });

  it('reports pending rows and the age of the oldest in its metrics', async () => {
    await criarTabelaOutbox(colony.pool, 'd9');
    const client = await colony.pool.connect();
    await client.query('BEGIN');
    for (let i = 0; i < 3; i++) await bus.publicarNaTransacao(client, categorizada(), { schema: 'd9' });
    await client.query('COMMIT');
    client.release();
    await colony.pool.query("UPDATE d9.feromonios_outbox SET criado_em = now() - interval '90 seconds'");
    // a relay that cannot publish (its broker is unreachable) still measures what waits
    const stuck = await createTestBus({
      brokers: ['127.0.0.1:1'],
      namespace: bus.topics.namespace,
      publishTimeoutMs: 200,
      outbox: { schema: 'd9', pool: colony.pool },
      registry: bus.registry,
    });
    const relay = await stuck.iniciarRelayOutbox({ intervaloMs: 50 });
    await waitFor(async () =>
      /feromonios_outbox_pending\{schema="d9"\} 3/.test(await stuck.metrics.registry.metrics()),
    );
    await relay.parar();
    const metrics = await stuck.metrics.registry.metrics();
    const age = Number(/feromonios_outbox_oldest_pending_age_seconds\{schema="d9"\} ([\d.]+)/.exec(metrics)?.[1]);
    expect(age).toBeGreaterThanOrEqual(90);
    expect(metrics).toMatch(/feromonios_outbox_relay_errors_total\{schema="d9",code="BROKER_UNAVAILABLE"\} [1-9]/);
    expect(await count(colony, 'SELECT count(*) AS n FROM d9.feromonios_outbox WHERE publicado_em IS NULL')).toBe(3);
  });

  it('deletes published rows once past the retention period, and keeps unpublished ones', async () => {
    await criarTabelaOutbox(colony.pool, 'd7');
    const client = await colony.pool.connect();
    await client.query('BEGIN');
    for (let i = 0; i < 5; i++) await bus.publicarNaTransacao(client, categorizada(), { schema: 'd7' });
    await client.query('COMMIT');
    client.release();
    await colony.pool.query(
      `INSERT INTO d7.feromonios_outbox (event_id, tipo, versao_schema, timestamp_evento, origem, correlacao_id, payload, falhou_em)
       VALUES ($1, 'demanda.legada', '1.0.0', '2026-12-01T00:00:00Z', 'D-3', $1, '{}', now())`,
      [randomUUID()],
    );
    const relay = await bus.iniciarRelayOutbox({ schema: 'd7', intervaloMs: 50, retencaoMs: 0 });
    await waitFor(async () => (await count(colony, 'SELECT count(*) AS n FROM d7.feromonios_outbox')) === 1);
    await relay.parar();
    expect(await count(colony, 'SELECT count(*) AS n FROM d7.feromonios_outbox WHERE falhou_em IS NOT NULL')).toBe(1);
  });

  it('sets aside a row that can never be published without blocking the rows after it', async () => {
    const poison = randomUUID();
    await colony.pool.query(
      `INSERT INTO d3.feromonios_outbox (event_id, tipo, versao_schema, timestamp_evento, origem, correlacao_id, payload)
       VALUES ($1, 'demanda.legada', '1.0.0', '2026-12-01T00:00:00Z', 'D-3', $1, '{}')`,
      [poison],
    );
    const client = await colony.pool.connect();
    await client.query('BEGIN');
    const after = await bus.publicarNaTransacao(client, categorizada());
    await client.query('COMMIT');
    client.release();
    const relay = await bus.iniciarRelayOutbox({ intervaloMs: 50 });
    await waitFor(async () => (await bus.obterEventoPorId(after.event_id)) !== null);
    await relay.parar();
    const row = (
      await colony.pool.query<{ falhou_em: Date | null; ultimo_erro: string }>(
        'SELECT falhou_em, ultimo_erro FROM d3.feromonios_outbox WHERE event_id = $1',
        [poison],
      )
    ).rows[0];
    expect(row?.falhou_em).toBeInstanceOf(Date);
    expect(row?.ultimo_erro).toMatch(/deprecated/i);
  });
});

describe('confirmed publishing and idempotent re-publish (seed 3.4, 8.2)', () => {
  let db: TestDatabase;
  let bus: EventBus;

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = await createTestBus({ pool: db.pool });
    await startTestBridge(bus, db);
  });

  it('returns the sequence_number the log holds, with the full payload', async () => {
    const e = await bus.publicar(categorizada(), { confirmar: true });
    const inLog = await bus.obterEventoPorId(e.event_id);
    expect(e.sequence_number).toBe(inLog?.sequence_number);
    expect(typeof e.sequence_number).toBe('bigint');
    expect(e.criado_em).toBe(inLog?.criado_em);
    expect(e.payload).toEqual(SAMPLE_PAYLOADS['demanda.categorizada']);
    expect(e.posicao?.topico).toBe(bus.topics.evento('demanda.categorizada'));
  });

  it('T9/T19: the same event_id twice → one log row, and the second call returns the first record without producing', async () => {
    const event_id = randomUUID();
    const first = await bus.publicar({ ...categorizada(), event_id }, { confirmar: true });
    const before = await topicMessageCount(bus.topics.evento('demanda.categorizada'));
    const second = await bus.publicar({ ...categorizada(), event_id }, { confirmar: true });
    expect(second.sequence_number).toBe(first.sequence_number);
    expect(second.timestamp).toBe(first.timestamp);
    expect(await topicMessageCount(bus.topics.evento('demanda.categorizada'))).toBe(before);
    expect(await count(db, 'SELECT count(*) AS n FROM core.event_log WHERE event_id = $1', [event_id])).toBe(1);
  });

  it('concurrent re-publishes of one event_id (a retry after a timeout) confirm the same row', async () => {
    const event_id = randomUUID();
    const [a, b] = await Promise.all([
      bus.publicar({ ...categorizada(), event_id }, { confirmar: true }),
      bus.publicar({ ...categorizada(), event_id }, { confirmar: true }),
    ]);
    expect(a.sequence_number).toBe(b.sequence_number);
    expect(await count(db, 'SELECT count(*) AS n FROM core.event_log WHERE event_id = $1', [event_id])).toBe(1);
  });

  it('an inbox-enabled colony handles a re-published event once', async () => {
    const colony = await createTestDatabase();
    const { criarTabelaInbox } = await import('../consuming/inbox');
    await criarTabelaInbox(colony.pool, 'd9');
    const runs: string[] = [];
    bus.inscrever('demanda.recebida', 'D-9', (e) => void runs.push(e.event_id), {
      inbox: { pool: colony.pool, schema: 'd9' },
    });
    await bus.inscricoesProntas();
    const dto = {
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      event_id: randomUUID(),
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    };
    await bus.publicar(dto);
    await bus.publicar(dto); // a retry after a timeout: produced twice
    await waitFor(() => runs.length >= 1);
    await waitFor(async () => (await topicMessageCount(bus.topics.evento('demanda.recebida'))) >= 2);
    // both copies handled (the second dropped by the inbox) and committed
    await waitFor(
      async () => (await groupLag(`${bus.topics.namespace}.colonia.D-9`, bus.topics.evento('demanda.recebida'))) === 0,
    );
    expect(runs).toEqual([dto.event_id]);
    // the bridge read both copies, and nothing of the event is left staged: one row in the log
    await waitFor(
      async () =>
        (await groupLag(`${bus.topics.namespace}-bridge`, bus.topics.evento('demanda.recebida'))) === 0 &&
        (await count(db, 'SELECT count(*) AS n FROM core.event_staging WHERE event_id = $1', [dto.event_id])) === 0,
    );
    expect(await count(db, 'SELECT count(*) AS n FROM core.event_log WHERE event_id = $1', [dto.event_id])).toBe(1);
  });

  it('times out with a typed, retriable error carrying the acknowledged event when the bridge does not write it', async () => {
    const noBridge = await createTestBus({ pool: db.pool }); // its namespace has no bridge
    const err = await noBridge
      .publicar(categorizada(), { confirmar: true, timeoutConfirmacaoMs: 300 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfirmationTimeoutError);
    expect(err).toMatchObject({ code: 'CONFIRMATION_TIMEOUT', retriable: true });
    expect((err as ConfirmationTimeoutError).evento.posicao).toBeDefined();
  });
});
