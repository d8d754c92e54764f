import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import net from 'node:net';
import { Kafka, logLevel, type IHeaders } from 'kafkajs';
import { DLQ_HEADERS, MAX_MESSAGE_BYTES, encodeValue, headerString } from '../sdk/wire';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import {
  createTestDatabase,
  readTopic,
  registerCleanup,
  serviceEnv,
  testKafka,
  topicMessageCount,
  waitFor,
  type KafkaMessageWithPosition,
  type TestDatabase,
} from '../test/harness';
import { dlqRow, logRows, startTestBridge } from '../test/harness/bridge';
import { createTestBus } from '../test/harness/bus';
import { QUARANTINE_HEADERS, type Bridge } from './bridge';
import type { BridgeMetrics } from './metrics';
import type { EventBus } from '../sdk';

/**
 * Records no SDK would produce, from a plain producer (as kcat or the Java client would send
 * them): each case of issue #12, and the invariant behind all of them — every valid event lands
 * in order, every bad record is quarantined with a reason, no consumer stays down, `/ready`
 * tells the truth.
 */
type Raw = { value: Buffer | null; headers: IHeaders };

describe('hostile records from non-SDK producers (issue #12)', () => {
  let db: TestDatabase;
  let bus: EventBus;
  let bridge: Bridge;
  let metrics: BridgeMetrics;
  let stopBridge: () => Promise<void>;
  const bridgeOptions = { stallAfterMs: 5_000, dlqEventWaitMs: 60_000 };
  let schemaId: number;
  let legadaId: number;
  const { producer } = testKafka();

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = await createTestBus({ pool: db.pool });
    const synced = await bus.sincronizarSchemas();
    schemaId = synced.find((x) => x.tipo === 'demanda.categorizada')?.id as number;
    legadaId = synced.find((x) => x.tipo === 'demanda.legada')?.id as number;
    await bus.publicar({
      tipo: 'demanda.categorizada',
      origem: 'D-3',
      payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
    });
    ({ bridge, metrics, stop: stopBridge } = await startTestBridge(bus, db, bridgeOptions));
    await waitFor(() => bridge.ready(), { message: 'bridge ready' });
  });

  const topic = () => bus.topics.evento('demanda.categorizada');
  const headers = (over: Record<string, string | undefined> = {}): IHeaders => {
    const h: Record<string, string | undefined> = {
      ce_specversion: '1.0',
      ce_id: randomUUID(),
      ce_type: 'demanda.categorizada',
      ce_source: 'D-3',
      ce_time: '2026-06-15T10:30:10Z',
      'content-type': 'application/vnd.feromonios.confluent-json',
      ...over,
    };
    return Object.fromEntries(Object.entries(h).filter(([, v]) => v !== undefined));
  };
  const validValue = () => encodeValue(schemaId, JSON.stringify(SAMPLE_PAYLOADS['demanda.categorizada']));

  /** Sends `bad` between valid events on one key; returns the valid event ids in order. */
  async function between(bad: Array<{ value: Buffer | null; headers: IHeaders }>): Promise<string[]> {
    const p = await producer();
    const key = randomUUID();
    const valid: string[] = [];
    const messages = [];
    for (const b of bad) {
      const id = randomUUID();
      valid.push(id);
      messages.push({ key, value: validValue(), headers: headers({ ce_id: id }) }, { key, ...b });
    }
    const last = randomUUID();
    valid.push(last);
    messages.push({ key, value: validValue(), headers: headers({ ce_id: last }) });
    for (const m of messages) await p.send({ topic: topic(), acks: -1, messages: [m] }); // one batch each: sizes add up otherwise
    return valid;
  }

  /** Every record of the quarantine topic so far, by ce_id (or by origin offset when it has none). */
  const quarantined = async (): Promise<
    Map<string, { reason?: string; reference?: string; record: KafkaMessageWithPosition }>
  > => {
    const q = bus.topics.quarentena();
    const all = await readTopic(q, await topicMessageCount(q), { timeoutMs: 30_000 });
    const out = new Map<string, { reason?: string; reference?: string; record: KafkaMessageWithPosition }>();
    for (const m of all) {
      const id = headerString(m.headers, 'ce_id') ?? `offset:${headerString(m.headers, QUARANTINE_HEADERS.offset)}`;
      out.set(id, {
        reason: headerString(m.headers, QUARANTINE_HEADERS.reason),
        reference: headerString(m.headers, QUARANTINE_HEADERS.reference),
        record: m,
      });
    }
    return out;
  };

  const expectLanded = async (ids: string[]): Promise<void> => {
    await waitFor(
      async () => {
        const rows = (await logRows(db)).map((r) => r.event_id);
        return ids.every((id) => rows.includes(id)) && rows.filter((r) => ids.includes(r));
      },
      { timeoutMs: 60_000, message: `${ids.length} valid events in the log` },
    );
    const order = (await logRows(db)).map((r) => r.event_id).filter((r) => ids.includes(r));
    expect(order).toEqual(ids);
  };

  it('1. a record whose quarantine copy would not fit is quarantined by reference, and everything behind it lands', async () => {
    const size = MAX_MESSAGE_BYTES - 600; // fits the topic; the copy, with the quarantine headers, does not
    const huge = Buffer.alloc(size, 0x61); // not the wire format either
    const id = randomUUID();
    const pad = 'x'.repeat(200);
    const ids = await between([{ value: huge, headers: headers({ ce_id: id, extra: pad }) }]);
    await expectLanded(ids);
    const refs = [...(await quarantined()).values()].filter((q) => q.reference === 'true');
    expect(refs).toHaveLength(1);
    const ref = refs[0]!.record;
    expect(ref.value).toBeNull();
    expect(ref.key).toBeNull();
    expect(Number(headerString(ref.headers, 'feromonios_origem_tamanho'))).toBe(size);
    expect(headerString(ref.headers, QUARANTINE_HEADERS.topic)).toBe(topic());
    expect(headerString(ref.headers, QUARANTINE_HEADERS.reason)).toBe('too-large');
    expect(bridge.ready()).toBe(true);
    expect(await metrics.quarantinedByReference.get()).toMatchObject({
      values: [expect.objectContaining({ value: 1 })],
    });
  });

  it('2. values PostgreSQL would refuse never block the partition: impossible dates, NUL, bad offsets, bad origins', async () => {
    const bad = [
      { ce_time: '2026-02-30T10:00:00Z' },
      { ce_time: '2026-01-01T00:00:00+23:00' },
      { ce_time: '0000-01-01T00:00:00Z' },
      { ce_source: 'D-\u00003' },
      { ce_source: 'maria@prefeitura.gov.br' },
      { ce_source: '52998224725' },
      { ce_type: 'demanda.categorizada\u0000' },
    ].map((over) => ({ value: validValue(), headers: headers({ ...over, ce_id: randomUUID() }) }));
    const nulPayload = {
      value: encodeValue(
        schemaId,
        JSON.stringify({ ...SAMPLE_PAYLOADS['demanda.categorizada'], categoria_id: '1.\u00001' }),
      ),
      headers: headers({ ce_id: randomUUID() }),
    };
    const loneSurrogate = {
      value: encodeValue(
        schemaId,
        JSON.stringify({ ...SAMPLE_PAYLOADS['demanda.categorizada'], categoria_id: '1.\ud8001' }),
      ),
      headers: headers({ ce_id: randomUUID() }),
    };
    const ids = await between([...bad, nulPayload, loneSurrogate]);
    await expectLanded(ids);
    const reasons = await quarantined();
    for (const b of [...bad, nulPayload, loneSurrogate]) {
      const id = headerString(b.headers, 'ce_id') as string;
      expect([id, reasons.get(id)?.reason]).toEqual([
        id,
        expect.stringMatching(/^(invalid-header|schema-invalid|unknown-schema-id)$/),
      ]);
    }
    expect(bridge.ready()).toBe(true);
  });

  it('a transactional producer (as the Java client can be): the committed record lands, the aborted one never does, and the markers do not hold the log back', async () => {
    const kafka = new Kafka({ clientId: 'tx-producer', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
    const tx = kafka.producer({ transactionalId: `tx-${randomUUID()}`, idempotent: true, maxInFlightRequests: 1 });
    await tx.connect();
    registerCleanup(() => tx.disconnect());
    const key = randomUUID(); // one partition: record, COMMIT marker, aborted record, ABORT marker
    const committed = randomUUID();
    const aborted = randomUUID();
    const t1 = await tx.transaction();
    await t1.send({ topic: topic(), messages: [{ key, value: validValue(), headers: headers({ ce_id: committed }) }] });
    await t1.commit();
    const t2 = await tx.transaction();
    await t2.send({ topic: topic(), messages: [{ key, value: validValue(), headers: headers({ ce_id: aborted }) }] });
    await t2.abort();
    // an SDK event after them: in the log within seconds, not after BRIDGE_ORDER_MAX_IDLE_MS (60 s)
    // spent waiting for a committed offset that the markers would otherwise keep short of the end
    const after = await bus.publicar({
      tipo: 'demanda.normalizada',
      origem: 'D-1b',
      payload: { ...SAMPLE_PAYLOADS['demanda.normalizada'] },
    });
    await waitFor(
      async () => {
        const ids = (await logRows(db)).map((r) => r.event_id);
        return ids.includes(committed) && ids.includes(after.event_id);
      },
      { timeoutMs: 15_000, message: 'the committed record and the next SDK event in the log' },
    );
    expect((await logRows(db)).map((r) => r.event_id)).not.toContain(aborted);
    expect((await metrics.idlePartitions.get()).values[0]?.value ?? 0).toBe(0);
  });

  it('7. the wire contract as documented: specversion, content type, deprecated types, origem bound to the publishers, from plain producers', async () => {
    const cases = [
      { name: 'no specversion', value: validValue(), headers: headers({ ce_specversion: undefined }) },
      { name: 'specversion 9.9', value: validValue(), headers: headers({ ce_specversion: '9.9' }) },
      { name: 'no content-type', value: validValue(), headers: headers({ 'content-type': undefined }) },
      { name: 'text/plain', value: validValue(), headers: headers({ 'content-type': 'text/plain' }) },
      { name: 'tenant not a UUID', value: validValue(), headers: headers({ ce_tenantid: 'prefeitura-1' }) },
      {
        name: 'deprecated type',
        value: encodeValue(legadaId, JSON.stringify({ texto: 'x' })),
        headers: headers({ ce_type: 'demanda.legada' }),
      },
      // a well-formed colony code that the catalog does not list as a publisher of the type
      { name: 'origem not a publisher', value: validValue(), headers: headers({ ce_source: 'D-4' }) },
      // another colony's real name, signing an event of a type it does not publish
      { name: "another colony's name", value: validValue(), headers: headers({ ce_source: 'D-1a' }) },
    ];
    const legacy = { value: validValue(), headers: headers({ 'content-type': 'application/json' }) };
    await expectLanded(await between(cases.map(({ value, headers: h }) => ({ value, headers: h }))));
    await expectLanded(await between([legacy]));
    await waitFor(async () => (await bus.obterEventoPorId(headerString(legacy.headers, 'ce_id') as string)) !== null, {
      message: 'a legacy application/json record is still accepted',
    });
    const reasons = await quarantined();
    const got = cases.map((c) => [c.name, reasons.get(headerString(c.headers, 'ce_id') as string)?.reason]);
    expect(got).toEqual([
      ['no specversion', 'missing-header'],
      ['specversion 9.9', 'invalid-header'],
      ['no content-type', 'missing-header'],
      ['text/plain', 'invalid-header'],
      ['tenant not a UUID', 'invalid-header'],
      ['deprecated type', 'deprecated-type'],
      ['origem not a publisher', 'origem-not-allowed'],
      ["another colony's name", 'origem-not-allowed'],
    ]);
    // a plain producer's valid ce_tenantid reaches the log as the column
    const tenant = randomUUID();
    const withTenant = { value: validValue(), headers: headers({ ce_tenantid: tenant }) };
    await expectLanded(await between([withTenant]));
    const id = headerString(withTenant.headers, 'ce_id') as string;
    const row = await waitFor(() => bus.obterEventoPorId(id), { message: 'the record with ce_tenantid in the log' });
    expect(row.tenant_id).toBe(tenant);
  });

  it('4. a malformed DLQ record with a plausible event_id is quarantined at once and does not delay the next failure', async () => {
    const p = await producer();
    const colonia = 'H-4';
    const dlq = bus.topics.dlq(colonia);
    const { admin } = testKafka();
    const a = await admin();
    await a.createTopics({ topics: [{ topic: dlq, numPartitions: 1 }], waitForLeaders: true });
    await waitFor(() => bridge.health().lanes.find((l) => l.lane === 'dlq')?.running && bridge.topics.includes(dlq), {
      message: 'the DLQ lane follows the new topic',
    });
    // an event really in the log, failed by a colony
    const real = await bus.publicar({
      tipo: 'demanda.categorizada',
      origem: 'D-3',
      payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
    });
    await waitFor(async () => (await bus.obterEventoPorId(real.event_id)) !== null);
    const t0 = Date.now();
    await p.send({
      topic: dlq,
      acks: -1,
      messages: [
        // a plausible id, no position: it can never reach the log
        { key: 'x', value: Buffer.from('lixo'), headers: { ce_id: randomUUID(), [DLQ_HEADERS.errorMessage]: 'boom' } },
        // a forged position far past the end of the partition
        {
          key: 'y',
          value: null,
          headers: {
            ce_id: randomUUID(),
            [DLQ_HEADERS.topic]: topic(),
            [DLQ_HEADERS.partition]: '0',
            [DLQ_HEADERS.offset]: '999999999',
          },
        },
        {
          key: real.event_id,
          value: null,
          headers: {
            ce_id: real.event_id,
            [DLQ_HEADERS.errorMessage]: 'falha com NUL \u0000 no meio',
            [DLQ_HEADERS.handler]: 'h\u0000andler',
            [DLQ_HEADERS.failedAt]: '2026-02-30T10:00:00Z',
          },
        },
      ],
    });
    await waitFor(async () => (await dlqRow(db, real.event_id, colonia))?.status === 'pendente', {
      timeoutMs: 30_000,
      message: 'the real failure is recorded',
    });
    expect(Date.now() - t0).toBeLessThan(15_000); // not 2 × 60 s behind the bad ones
    const { rows } = await db.pool.query<{ mensagem_erro: string; handler_nome: string }>(
      'SELECT mensagem_erro, handler_nome FROM core.dead_letter_queue WHERE event_id = $1',
      [real.event_id],
    );
    expect(rows[0]).toEqual({ mensagem_erro: 'falha com NUL   no meio', handler_nome: 'h andler' });
    const reasons = [...(await quarantined()).values()].map((r) => r.reason);
    expect(reasons.filter((r) => r === 'event-not-in-log').length).toBeGreaterThanOrEqual(2);
  });

  it('a row PostgreSQL still refuses is isolated from its chunk and quarantined with its SQLSTATE', async () => {
    const RECUSADA = randomUUID();
    // fault injection on the real database: a constraint the shared rule does not know about
    await db.pool.query(
      `ALTER TABLE core.event_log ADD CONSTRAINT sem_recusada CHECK (correlacao_id <> '${RECUSADA}') NOT VALID`,
    );
    registerCleanup(() =>
      db.pool.query('ALTER TABLE core.event_log DROP CONSTRAINT IF EXISTS sem_recusada').then(() => undefined),
    );
    const refused = { value: validValue(), headers: headers({ ce_correlacaoid: RECUSADA }) };
    const ids = await between([refused]);
    await expectLanded(ids);
    const q = (await quarantined()).get(headerString(refused.headers, 'ce_id') as string);
    expect(q?.reason).toBe('database-refused');
    expect(headerString(q?.record.headers, QUARANTINE_HEADERS.detail)).toContain('SQLSTATE 23514');
    expect((await metrics.refusedRows.get()).values).toEqual([
      expect.objectContaining({ labels: { sqlstate: '23514' }, value: 1 }),
    ]);
    await db.pool.query('ALTER TABLE core.event_log DROP CONSTRAINT sem_recusada');
  });

  it('1b. a colony whose DLQ copy would not fit dead-letters by reference and handles the next events', async () => {
    const handled: string[] = [];
    bus.inscrever('demanda.categorizada', 'H-1', (e) => void handled.push(e.event_id));
    await bus.inscricoesProntas();
    const p = await producer();
    const key = randomUUID();
    const id = randomUUID();
    // not the wire format, just under the topic's limit: the colony cannot decode it, and its
    // DLQ copy (value + error context) would exceed max.message.bytes
    await p.send({
      topic: topic(),
      acks: -1,
      messages: [{ key, value: Buffer.alloc(MAX_MESSAGE_BYTES - 600, 0x62), headers: headers({ ce_id: id }) }],
    });
    const after = await bus.publicar({
      tipo: 'demanda.categorizada',
      origem: 'D-3',
      chave_particao: key,
      payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
    });
    await waitFor(() => handled.includes(after.event_id), { timeoutMs: 60_000, message: 'the next event is handled' });
    const dlq = bus.topics.dlq('H-1');
    const records = await readTopic(dlq, 1);
    const ref = records.find((m) => headerString(m.headers, 'ce_id') === id);
    expect(ref?.value).toBeNull();
    expect(headerString(ref?.headers, DLQ_HEADERS.reference)).toBe('true');
    expect(headerString(ref?.headers, DLQ_HEADERS.handler)).toBe('decodificador');
  });

  it('property: generated hostile records between valid ones — the valid land in order and reach the colony, every bad one is quarantined with a reason, no consumer stays down', async () => {
    const colony: string[] = [];
    bus.inscrever('demanda.categorizada', 'H-P', (e) => void colony.push(e.event_id));
    await bus.inscricoesProntas();
    const control = fc.constantFrom('\u0000', '\u0001', '\u001f', '\u007f', '\n', '\ud800', '\udfff', '\u202e');
    const dirty = fc
      .tuple(fc.string({ maxLength: 8 }), control, fc.string({ maxLength: 8 }))
      .map(([a, c, b]) => a + c + b);
    const payloadWith = (patch: Record<string, unknown>) =>
      encodeValue(schemaId, JSON.stringify({ ...SAMPLE_PAYLOADS['demanda.categorizada'], ...patch }));
    let deep: unknown = 'fundo';
    for (let i = 0; i < 200; i++) deep = { d: deep };
    const hostile: fc.Arbitrary<{ value: Buffer | null; headers: IHeaders }> = fc.oneof(
      fc
        .constantFrom(
          'ce_id',
          'ce_type',
          'ce_source',
          'ce_time',
          'ce_specversion',
          'content-type',
          'ce_versaoschema',
          'ce_correlacaoid',
          'ce_causationid',
          'ce_tenantid',
        )
        .chain((h) => dirty.map((v) => ({ value: validValue(), headers: headers({ [h]: v }) }))),
      fc
        .constantFrom(
          '2026-02-30T10:00:00Z',
          '2026-02-29T10:00:00Z',
          '2026-01-01T00:00:00+16:00',
          '0000-01-01T00:00:00Z',
          '9999-12-31T23:59:59-01:00',
          '2026-01-01T24:00:00Z',
          '+275760-09-13T00:00:00Z',
        )
        .map((t) => ({ value: validValue(), headers: headers({ ce_time: t }) })),
      dirty.map((v) => ({ value: payloadWith({ categoria_id: v }), headers: headers() })),
      fc.constant<Raw>({ value: payloadWith({ aninhado: deep }), headers: headers() }),
      fc
        .constantFrom(1024 * 1024 + 6, 1024 * 1024 + 100, MAX_MESSAGE_BYTES - 700)
        .map((n) => ({ value: Buffer.alloc(n, 0x7b), headers: headers() })),
      fc.integer({ min: 200, max: 600 }).map((n) => ({
        value: validValue(),
        headers: {
          ...headers(),
          ...Object.fromEntries(Array.from({ length: n }, (_, i) => [`x-${i}`, 'v'.repeat(50)])),
          ce_time: '2026-13-01T00:00:00Z',
        },
      })),
      fc.constant<Raw>({ value: validValue(), headers: { ...headers(), ce_id: [randomUUID(), randomUUID()] } }),
      fc.constant<Raw>({ value: null, headers: headers() }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(hostile, { minLength: 3, maxLength: 8 }), async (bad) => {
        const q = bus.topics.quarentena();
        const before = await topicMessageCount(q);
        const ids = await between(bad);
        await expectLanded(ids);
        // every bad record is in quarantine with a reason (the 2-element ce_id is legal: the first counts)
        const expectedBad = bad.filter((b) => !Array.isArray(b.headers.ce_id)).length;
        await waitFor(async () => (await topicMessageCount(q)) - before >= expectedBad, {
          message: async () => `${expectedBad} new quarantined records (now ${(await topicMessageCount(q)) - before})`,
        });
        const fresh = (await readTopic(q, await topicMessageCount(q))).slice(-((await topicMessageCount(q)) - before));
        expect(fresh.every((m) => (headerString(m.headers, QUARANTINE_HEADERS.reason) ?? '').length > 0)).toBe(true);
        await waitFor(() => ids.every((id) => colony.includes(id)), {
          timeoutMs: 60_000,
          message: 'the colony handled every valid event',
        });
        // no consumer stays down, and /ready says so (a lane picking up a new DLQ topic rejoins first)
        await waitFor(() => bridge.health().lanes.every((l) => l.topics === 0 || l.running), {
          message: () => `every lane consuming (${JSON.stringify(bridge.health().lanes)})`,
        });
        expect(bridge.health().ready).toBe(true);
      }),
      { numRuns: 4, endOnFailure: true },
    );
  }, 240_000);

  it('a DLQ topic whose name is no colony code is quarantined record by record; the lane goes on', async () => {
    const bad = `${bus.topics.namespace}.dlq.colonia.com.ponto`;
    const { admin } = testKafka();
    const a = await admin();
    await a.createTopics({ topics: [{ topic: bad, numPartitions: 1 }], waitForLeaders: true });
    const p = await producer();
    const id = randomUUID();
    await p.send({ topic: bad, acks: -1, messages: [{ key: id, value: null, headers: { ce_id: id } }] });
    await waitFor(async () => (await quarantined()).get(id)?.reason === 'invalid-header', {
      timeoutMs: 30_000,
      message: 'the record of the badly named DLQ topic is quarantined',
    });
    expect(headerString((await quarantined()).get(id)?.record.headers, QUARANTINE_HEADERS.detail)).toContain('colony');
    expect(bridge.health().lanes.find((l) => l.lane === 'dlq')?.running).toBe(true);
  });

  it('a lane whose consumer crashes is restarted, counted, and /ready says so meanwhile', async () => {
    // staging fails with a non-retriable error (undefined table): the lane's batch throws. The
    // leader holds what it stages in memory (ADR 0029), which would not touch the table: this
    // bridge stages every event in it
    await stopBridge();
    ({
      bridge,
      metrics,
      stop: stopBridge,
    } = await startTestBridge(bus, db, { ...bridgeOptions, memoryStagingRows: 0 }));
    await waitFor(() => bridge.ready(), { message: 'the table-staging bridge ready' });
    await db.pool.query('ALTER TABLE core.event_staging RENAME TO event_staging_fora');
    let renamedBack = false;
    registerCleanup(async () => {
      if (!renamedBack) await db.pool.query('ALTER TABLE core.event_staging_fora RENAME TO event_staging');
    });
    const e = await bus.publicar({
      tipo: 'demanda.categorizada',
      origem: 'D-3',
      payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
    });
    await waitFor(() => !bridge.ready(), {
      timeoutMs: 60_000,
      message: '/ready says not ready while the lane cannot write',
    });
    // the detail says why: a lane that is not running, or a partition stalled behind the failure
    // (the sequencer, which reads staging too, may say it first: sequencer_failing)
    await waitFor(
      () => {
        const detail = bridge.health();
        return !detail.ready && (detail.lanes.some((l) => l.topics > 0 && !l.running) || detail.stalled.length > 0);
      },
      { timeoutMs: 60_000, message: '/ready names the lane that crashed' },
    );
    await waitFor(async () => ((await metrics.consumerRestarts.get()).values[0]?.value ?? 0) > 0, {
      timeoutMs: 90_000,
      message: 'the crash is counted',
    });
    await db.pool.query('ALTER TABLE core.event_staging_fora RENAME TO event_staging');
    renamedBack = true;
    await waitFor(async () => (await bus.obterEventoPorId(e.event_id)) !== null, {
      timeoutMs: 90_000,
      message: 'the restarted lane writes the event',
    });
    await waitFor(() => bridge.ready(), { timeoutMs: 30_000, message: 'ready again' });
    expect((await metrics.consumerRestarts.get()).values.some((v) => v.labels.lane === 'eventos' && v.value > 0)).toBe(
      true,
    );
  }, 240_000);
});

describe('a colony that subscribes while the broker is unreachable (issue #12, case 6)', () => {
  it('keeps trying, subscribes once the broker answers, and handles events', async () => {
    const db = await createTestDatabase();
    const [host, port] = (serviceEnv().brokers[0] as string).split(':') as [string, string];
    // a bootstrap address that refuses connections until the "broker" comes up behind it
    const proxy = net.createServer((client) => {
      const upstream = net.connect(Number(port), host);
      client.pipe(upstream).pipe(client);
      const end = () => (client.destroy(), upstream.destroy());
      client.on('error', end);
      upstream.on('error', end);
    });
    const proxyPort = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as net.AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    registerCleanup(() => new Promise<void>((r) => proxy.close(() => r())));
    const publisher = await createTestBus({ pool: db.pool });
    const colony = await createTestBus({
      namespace: publisher.topics.namespace,
      brokers: [`127.0.0.1:${proxyPort}`],
    });
    const seen: string[] = [];
    colony.inscrever('demanda.categorizada', 'D-16', (e) => void seen.push(e.event_id));
    const failedAttempts = async (): Promise<number> =>
      (await colony.metrics.registry.getSingleMetric('feromonios_subscriber_restarts_total')?.get())?.values.find(
        (v) => v.labels.causa === 'inscricao',
      )?.value ?? 0;
    await waitFor(async () => (await failedAttempts()) > 0, { message: 'a failed subscription attempt, counted' });
    // not consuming, and why: the broker is unreachable (a retriable outage, not a refusal)
    const [state] = colony.estadoDasInscricoes();
    expect([state?.colonia, state?.consumindo, state?.falha?.code]).toEqual(['D-16', false, 'BROKER_UNAVAILABLE']);
    expect(state?.falha?.mensagem).toContain('ECONNREFUSED');
    proxy.listen(proxyPort, '127.0.0.1');
    await colony.inscricoesProntas();
    const e = await publisher.publicar({
      tipo: 'demanda.categorizada',
      origem: 'D-3',
      payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
    });
    await waitFor(() => seen.includes(e.event_id), { timeoutMs: 60_000, message: 'the colony handles the event' });
    expect(colony.estadoDasInscricoes()).toEqual([{ colonia: 'D-16', consumindo: true }]);
  }, 120_000);
});
