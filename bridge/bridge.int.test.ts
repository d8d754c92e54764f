import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { createTestDatabase, readTopic, testKafka, waitFor, type TestDatabase } from '../test/harness';
import { createTestBus, SEED_EVENTS } from '../test/harness/bus';
import { logRows, startTestBridge } from '../test/harness/bridge';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { encodeValue, SchemaCatalog } from '../sdk/wire';
import { jsonLogger, type EventBus } from '../sdk';
import { QUARANTINE_HEADERS, type Bridge } from './bridge';
import type { DecodeThread } from './decode-thread';
import { frontierOf } from './staging-frontier';
import type { BridgeMetrics } from './metrics';

const count = async (db: TestDatabase): Promise<number> =>
  Number((await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM core.event_log')).rows[0]?.n);

describe('the bridge mirrors event topics into core.event_log', () => {
  let bus: EventBus;
  let db: TestDatabase;
  let metrics: BridgeMetrics;
  let bridge: Bridge;

  beforeAll(async () => {
    bus = await createTestBus();
    db = await createTestDatabase();
    await bus.publicar({
      tipo: 'demanda.categorizada',
      origem: 'D-3',
      payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
    });
    ({ metrics, bridge } = await startTestBridge(bus, db, {
      maxPayloadBytes: 4096,
      ...(process.env.BRIDGE_TEST_LOG ? { logger: jsonLogger('bridge', 'debug') } : {}),
    }));
  });

  it('T17: publish → bridge → the log holds the seed events with metadata, in publish order, redacted', async () => {
    for (const e of SEED_EVENTS) await bus.publicar({ ...e, payload: { ...e.payload } });
    const rows = await waitFor(async () => {
      const r = await logRows(db);
      return SEED_EVENTS.every((e) => r.some((x) => x.event_id === e.event_id)) && r;
    });
    const seeds = SEED_EVENTS.map((e) => rows.find((r) => r.event_id === e.event_id)!);
    // one sequence each; order across topics is not promised (per-partition order is: see below)
    expect(new Set(seeds.map((r) => r.sequence_number)).size).toBe(3);
    expect(seeds[0]).toMatchObject({
      tipo: 'demanda.recebida',
      versao_schema: '1.0.0',
      origem: 'D-1a',
      correlacao_id: SEED_EVENTS[0].correlacao_id,
    });
    expect((seeds[0]?.timestamp as Date).toISOString()).toBe('2026-06-15T10:30:00.000Z');
    const recebida = seeds[0]?.payload as Record<string, unknown>;
    expect(recebida).not.toHaveProperty('cidadao_id');
    expect(recebida.texto_bruto).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(recebida.localizacao_bruta).toEqual({ lat: -23.55, lng: -46.63 });
    expect(JSON.stringify(rows)).not.toContain('Falta d');
    expect(seeds[2]?.payload).toEqual(SEED_EVENTS[2].payload); // nothing personal: kept whole
  });

  it('T19: the same event_id published twice gives one row, and burns no sequence value', async () => {
    const event_id = randomUUID();
    const dto = {
      tipo: 'demanda.categorizada',
      origem: 'D-3',
      event_id,
      payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
    };
    await bus.publicar(dto);
    await bus.publicar(dto);
    const after = randomUUID();
    await bus.publicar({ ...dto, event_id: after });
    await waitFor(async () => (await logRows(db)).some((r) => r.event_id === after));
    expect(
      Number(
        (await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM core.event_log WHERE event_id = $1', [event_id]))
          .rows[0]?.n,
      ),
    ).toBe(1);
    const { rows } = await db.pool.query<{ n: string; max: string }>(
      'SELECT count(*) AS n, max(sequence_number) AS max FROM core.event_log',
    );
    expect(rows[0]?.max).toBe(rows[0]?.n); // no gaps: duplicates consumed no sequence value
    expect(await metrics.registry.getSingleMetricAsString('feromonios_bridge_duplicates_total')).toMatch(
      /feromonios_bridge_duplicates_total [1-9]/,
    );
  });

  it('picks up a new type’s topic without a restart, within the refresh interval', async () => {
    const e = await bus.publicar({
      tipo: 'parametros.atualizados',
      origem: 'D-6',
      payload: { ...SAMPLE_PAYLOADS['parametros.atualizados'] },
    });
    const row = await waitFor(async () => (await logRows(db)).find((r) => r.event_id === e.event_id), {
      timeoutMs: 15_000,
    });
    expect(row.payload).toEqual({ parametro_id: 'peso.urgencia', valor_anterior: 1, valor_novo: 1.5 }); // responsavel_id removed
  });

  it('commits each event partition’s offset with the publish time of the last record it staged below it (ADR 0027)', async () => {
    const topic = bus.topics.evento('demanda.normalizada');
    const sent = await bus.publicarLote(
      Array.from({ length: 6 }, () => ({
        tipo: 'demanda.normalizada',
        origem: 'D-1b',
        payload: { ...SAMPLE_PAYLOADS['demanda.normalizada'] },
      })),
    );
    await waitFor(async () => {
      const ids = new Set((await logRows(db)).map((r) => r.event_id));
      return sent.every((e) => ids.has(e.event_id));
    });
    const admin = await testKafka().admin();
    // committed after the database commit: read once everything is in the log, and again until it shows
    const committed = await waitFor(async () => {
      const [t] = await admin.fetchOffsets({ groupId: `${bus.topics.namespace}-bridge`, topics: [topic] });
      const parts = (t?.partitions ?? []).filter((p) => Number(p.offset) > 0);
      const total = parts.reduce((n, p) => n + Number(p.offset), 0);
      return total >= sent.length && { parts, total };
    });
    const records = await readTopic(topic, committed.total);
    for (const p of committed.parts) {
      const last = records.find((r) => r.partition === p.partition && r.offset === String(Number(p.offset) - 1));
      expect(last).toBeDefined();
      expect(frontierOf(p.metadata)).toBe(Number(last?.timestamp));
    }
  });

  it('the decode thread dies while a backlog is decoded: every event lands once, the death is counted, a new thread goes on', async () => {
    // the bridge's own thread, reached as a crash would reach it (no API kills it)
    const thread = (bridge as unknown as { decodeThread: DecodeThread }).decodeThread;
    const ids = Array.from({ length: 4000 }, () => randomUUID());
    const landed = async () => {
      const { rows } = await db.pool.query<{ n: string; distinct: string }>(
        'SELECT count(*) AS n, count(DISTINCT event_id) AS distinct FROM core.event_log WHERE event_id = ANY($1::uuid[])',
        [ids],
      );
      return { n: Number(rows[0]?.n), distinct: Number(rows[0]?.distinct) };
    };
    const publish = (some: string[]) =>
      bus.publicarLote(
        some.map((event_id) => ({
          tipo: 'demanda.categorizada',
          origem: 'D-3',
          event_id,
          payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
        })),
      );
    await publish(ids.slice(0, 3000));
    // killed once the backlog's first chunk is in the log, most likely with later chunks in flight
    await waitFor(async () => (await landed()).n > 0, { intervalMs: 5 });
    await thread.kill();
    await publish(ids.slice(3000)); // and chunks certainly after the death
    await waitFor(async () => (await landed()).n >= ids.length, { timeoutMs: 60_000 });
    expect(await landed()).toEqual({ n: ids.length, distinct: ids.length });
    expect(await metrics.registry.getSingleMetricAsString('feromonios_bridge_decode_thread_restarts_total')).toMatch(
      /feromonios_bridge_decode_thread_restarts_total 1$/m,
    );
    expect(thread.threadId).toBeDefined(); // a new thread decodes the later chunks
    // the bridge's thread decodes only records whose schema id the thread was not taught yet: a
    // type's first chunks (and a new thread is taught every id the old one had)
    const decoded = await metrics.registry.getSingleMetricAsString('feromonios_bridge_decoded_total');
    const by = (which: string) => Number(new RegExp(`thread="${which}"} (\\d+)`).exec(decoded)?.[1] ?? 0);
    expect(by('decode')).toBeGreaterThanOrEqual(ids.length - 1000);
    expect(by('bridge')).toBeLessThan(1000);
    await waitFor(() => bridge.ready(), { message: 'bridge ready after the death' });
  });

  describe('poison records', () => {
    const { producer } = testKafka();

    it('quarantines each kind with its reason and lands the valid records around them, in order', async () => {
      const topic = bus.topics.evento('demanda.categorizada');
      const v = bus.catalog.versao('demanda.categorizada', '1.0.0')!;
      const { id } = (await bus.registry.lookup(`${topic}-value`, v.schemaText))!;
      const headers = (event_id: string): Record<string, string> => ({
        ce_specversion: '1.0',
        ce_id: event_id,
        ce_type: 'demanda.categorizada',
        ce_source: 'D-3',
        ce_time: '2026-06-15T10:30:10Z',
        'content-type': 'application/json',
      });
      const good = (): { event_id: string; value: Buffer } => ({
        event_id: randomUUID(),
        value: encodeValue(id, JSON.stringify(SAMPLE_PAYLOADS['demanda.categorizada'])),
      });
      const goods = [good(), good(), good(), good()];
      const poisons: Array<[string, { value: Buffer; headers: Record<string, string> }]> = [
        ['not-wire-format', { value: Buffer.from('{"plain":"json"}'), headers: headers(randomUUID()) }],
        ['unknown-schema-id', { value: encodeValue(987654, '{}'), headers: headers(randomUUID()) }],
        [
          'invalid-json',
          { value: Buffer.concat([encodeValue(id, ''), Buffer.from('{not json')]), headers: headers(randomUUID()) },
        ],
        [
          'schema-invalid',
          {
            value: encodeValue(id, JSON.stringify({ ...SAMPLE_PAYLOADS['demanda.categorizada'], metodo: 'x' })),
            headers: headers(randomUUID()),
          },
        ],
        [
          'too-large',
          {
            value: encodeValue(
              id,
              JSON.stringify({ ...SAMPLE_PAYLOADS['demanda.categorizada'], categoria_id: '1'.repeat(5000) }),
            ),
            headers: headers(randomUUID()),
          },
        ],
        ['missing-header', { value: goods[0]!.value, headers: { ce_specversion: '1.0' } }],
      ];
      const messages = [
        { key: 'k', value: goods[0]!.value, headers: headers(goods[0]!.event_id) },
        ...poisons.slice(0, 3).map(([, p]) => ({ key: 'k', ...p })),
        { key: 'k', value: goods[1]!.value, headers: headers(goods[1]!.event_id) },
        ...poisons.slice(3).map(([, p]) => ({ key: 'k', ...p })),
        { key: 'k', value: goods[2]!.value, headers: headers(goods[2]!.event_id) },
        { key: 'k', value: goods[3]!.value, headers: headers(goods[3]!.event_id) },
      ];
      const p = await producer();
      await p.send({ topic, acks: -1, messages: messages.map((m) => ({ ...m, partition: 0 })) });

      const quarantined = await readTopic(bus.topics.quarentena(), poisons.length);
      expect(quarantined.map((m) => m.headers?.[QUARANTINE_HEADERS.reason]?.toString()).sort()).toEqual(
        poisons.map(([r]) => r).sort(),
      );
      expect(quarantined.every((m) => m.headers?.[QUARANTINE_HEADERS.topic]?.toString() === topic)).toBe(true);
      const rows = await waitFor(async () => {
        const r = await logRows(db);
        return goods.every((g) => r.some((x) => x.event_id === g.event_id)) && r;
      });
      const seqs = goods.map((g) => Number(rows.find((r) => r.event_id === g.event_id)!.sequence_number));
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
      const text = await metrics.registry.getSingleMetricAsString('feromonios_bridge_quarantined_total');
      for (const [reason] of poisons) expect(text).toContain(`reason="${reason}"} 1`);
    });
  });

  // after the poison records' test, which counts what reaches the quarantine
  it('a batch that stages nothing (a record quarantined) commits past it with the frontier it had, not without one', async () => {
    const topic = bus.topics.evento('demanda.normalizada');
    const admin = await testKafka().admin();
    const [t] = await admin.fetchOffsets({ groupId: `${bus.topics.namespace}-bridge`, topics: [topic] });
    const p0 = t?.partitions.find((p) => Number(p.offset) > 0 && frontierOf(p.metadata) !== undefined);
    expect(p0).toBeDefined(); // committed by the ADR 0027 test above, with a frontier
    const before = frontierOf(p0?.metadata);
    const producer = await testKafka().producer();
    await producer.send({ topic, messages: [{ partition: p0?.partition, value: Buffer.from('not the wire format') }] });
    // without the frontier it had, this commit would send the sequencer's next look back to scanning staging
    const past = await waitFor(async () => {
      const [u] = await admin.fetchOffsets({ groupId: `${bus.topics.namespace}-bridge`, topics: [topic] });
      const p = u?.partitions.find((x) => x.partition === p0?.partition);
      return p && Number(p.offset) === Number(p0?.offset) + 1 && p;
    });
    expect(frontierOf(past.metadata)).toBe(before);
  });
});

describe('no personal data reaches PostgreSQL (property)', () => {
  it('finds none of the planted personal values in any table, whatever the payload', async () => {
    const bus = await createTestBus();
    const db = await createTestDatabase();
    await startTestBridge(bus, db);
    const planted: string[] = [];
    const marker = fc
      .string({ minLength: 6, maxLength: 30 })
      .map((s) => `PII${randomUUID().slice(0, 8)}${s.replace(/\W/g, '')}`);
    const samples = fc.sample(
      fc.record({
        texto: marker,
        cidadao: marker,
        anexo: marker,
        responsavel: marker,
        justificativa: marker,
        lat: fc.double({ min: -89, max: 89, noNaN: true }),
        lng: fc.double({ min: -179, max: 179, noNaN: true }),
        canal: fc.constantFrom('app', 'web', 'whatsapp', 'telefone', 'presencial'),
      }),
      40,
    );
    const ids: string[] = [];
    for (const s of samples) {
      planted.push(s.texto, s.cidadao, s.anexo, s.responsavel, s.justificativa);
      const [a, b] = await bus.publicarLote([
        {
          tipo: 'demanda.recebida',
          versao_schema: '1.1.0',
          origem: 'D-1a',
          payload: {
            demanda_id: randomUUID(),
            texto_bruto: s.texto,
            localizacao_bruta: { lat: s.lat, lng: s.lng },
            cidadao_id: s.cidadao,
            canal: s.canal,
            anexos: [`https://m.example/${s.anexo}`],
          },
        },
        {
          tipo: 'parametros.atualizados',
          origem: 'D-6',
          payload: {
            parametro_id: 'peso',
            valor_anterior: 1,
            valor_novo: 2,
            responsavel_id: s.responsavel,
            justificativa: s.justificativa,
          },
        },
      ]);
      ids.push(a!.event_id, b!.event_id);
      planted.push(String(s.lat), String(s.lng));
    }
    await waitFor(async () => (await count(db)) === ids.length, { timeoutMs: 60_000 });
    const tables = await db.pool.query<{ t: string }>(
      `SELECT format('%I.%I', table_schema, table_name) AS t FROM information_schema.tables
        WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`,
    );
    let dump = '';
    for (const { t } of tables.rows) dump += JSON.stringify((await db.pool.query(`SELECT * FROM ${t}`)).rows);
    const precise = planted.filter((v) => /\.\d{3,}/.test(v) || v.startsWith('PII'));
    const leaked = precise.filter((v) => dump.includes(v));
    expect(leaked).toEqual([]);
  }, 120_000);
});

describe('the bridge’s start', () => {
  it('fails when its decode thread cannot start, and leaves nothing running: no consumer in its group', async () => {
    const bus = await createTestBus();
    const db = await createTestDatabase();
    // an event topic to subscribe to: its consumer joins while the thread starts
    await bus.publicar({
      tipo: 'demanda.categorizada',
      origem: 'D-3',
      payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
    });
    // a catalog whose directory is gone by the time the thread loads it (the bridge's own copy is in memory)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'feromonios-catalog-'));
    fs.cpSync(bus.catalog.dir, dir, { recursive: true });
    const catalog = SchemaCatalog.load(dir);
    fs.rmSync(dir, { recursive: true, force: true });
    await expect(startTestBridge(bus, db, { catalog })).rejects.toThrow(/feromonios-catalog-/);
    const admin = await testKafka().admin();
    const { groups } = await admin.describeGroups([`${bus.topics.namespace}-bridge`]);
    expect(groups[0]?.members ?? []).toEqual([]);
  }, 60_000);

  it('decodes on its own thread for a while when its decode thread keeps dying (here: it can no longer load its catalog)', async () => {
    const bus = await createTestBus();
    const db = await createTestDatabase();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'feromonios-catalog-'));
    fs.cpSync(bus.catalog.dir, dir, { recursive: true });
    const { bridge, metrics } = await startTestBridge(bus, db, { catalog: SchemaCatalog.load(dir) });
    const thread = (bridge as unknown as { decodeThread: DecodeThread }).decodeThread;
    const publish = async (n: number) => {
      const ids = Array.from({ length: n }, () => randomUUID());
      await bus.publicarLote(
        ids.map((event_id) => ({
          tipo: 'demanda.categorizada',
          origem: 'D-3',
          event_id,
          payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
        })),
      );
      return ids;
    };
    const metric = async (name: string, labels = '') =>
      Number(
        new RegExp(`^${name}${labels.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(
          await metrics.registry.getSingleMetricAsString(name),
        )?.[1] ?? 0,
      );
    const first = await publish(10);
    await waitFor(async () => (await count(db)) === first.length);
    // every thread started from now on dies while it loads its catalog
    fs.rmSync(dir, { recursive: true, force: true });
    await thread.kill();
    const later = await publish(10);
    await waitFor(async () => (await count(db)) === first.length + later.length, { timeoutMs: 60_000 });
    expect(await metric('feromonios_bridge_decode_thread_restarts_total')).toBe(3); // the kill, then two threads that never loaded
    expect(await metric('feromonios_bridge_decode_thread_fallbacks_total')).toBe(1);
    expect(await metric('feromonios_bridge_decoded_total', '{thread="bridge"}')).toBeGreaterThanOrEqual(later.length);
    await waitFor(() => bridge.ready(), { message: 'bridge ready while it decodes on its own thread' });
  }, 90_000);
});
