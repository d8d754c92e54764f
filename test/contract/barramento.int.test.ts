import { randomUUID } from 'node:crypto';
import {
  HandlerTimeoutError,
  PublishValidationError,
  SchemaValidationError,
  type Barramento,
  type EventoConsultado,
} from '../../sdk';
import { InMemoryEventBus, SAMPLE_PAYLOADS } from '../../sdk/testing';
import { createTestDatabase, groupLag, waitFor } from '../harness';
import { startTestBridge } from '../harness/bridge';
import { createTestBus } from '../harness/bus';

/**
 * The contract both buses keep (issue #16): every behaviour below runs against the real
 * `EventBus` (Kafka, the registry, the bridge writing PostgreSQL) and against
 * `InMemoryEventBus`, with the same assertions. Where the real bus is eventually consistent
 * (the bridge writes the log moments later) the test waits for the condition; the in-memory bus
 * meets it at once.
 */
/** A bus, and how to wait until a colony has consumed everything of a type published so far. */
type Factory = () => Promise<{ bus: Barramento; consumed(colonia: string, tipo: string): Promise<void> }>;

const real: Factory = async () => {
  const db = await createTestDatabase();
  const bus = await createTestBus({ pool: db.pool });
  await startTestBridge(bus, db);
  return {
    bus,
    consumed: (colonia, tipo) =>
      waitFor(
        async () => (await groupLag(`${bus.topics.namespace}.colonia.${colonia}`, bus.topics.evento(tipo))) === 0,
        {
          message: `${colonia} consumed and committed every ${tipo}`,
        },
      ).then(() => undefined),
  };
};
const memory: Factory = () => {
  const bus = new InMemoryEventBus();
  return Promise.resolve({ bus, consumed: () => bus.aguardarEntregas() });
};

const recebida = (patch: Record<string, unknown> = {}) => ({
  tipo: 'demanda.recebida',
  origem: 'D-1a',
  payload: { ...SAMPLE_PAYLOADS['demanda.recebida'], ...patch },
});
const categorizada = () => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});

describe.each([
  ['EventBus (Kafka + bridge + PostgreSQL)', real],
  ['InMemoryEventBus', memory],
])('the Barramento contract: %s', (_name, make) => {
  let bus: Barramento;
  let consumed: (colonia: string, tipo: string) => Promise<void>;
  beforeAll(async () => {
    ({ bus, consumed } = await make());
  }, 60_000);
  afterAll(() => bus.encerrar());

  it('refuses invalid events with the same typed errors, in the seed order, and publishes none of a bad batch', async () => {
    await expect(
      bus.publicar({ ...recebida(), payload: null as unknown as Record<string, unknown> }),
    ).rejects.toMatchObject({
      code: 'PAYLOAD_NOT_OBJECT',
      step: 'payload',
      message: expect.stringContaining('Payload deve ser um objeto não nulo') as string,
    });
    await expect(bus.publicar({ ...recebida(), tipo: 'nao.existe' })).rejects.toMatchObject({ code: 'UNKNOWN_TYPE' });
    await expect(bus.publicar({ ...recebida(), tipo: 'demanda.legada' })).rejects.toMatchObject({
      code: 'DEPRECATED_TYPE',
    });
    const schema = await bus.publicar(recebida({ canal: 42 })).catch((e: unknown) => e);
    expect(schema).toBeInstanceOf(SchemaValidationError);
    const id = randomUUID();
    const batch = await bus
      .publicarLote([
        { ...recebida(), event_id: id },
        { ...recebida(), origem: '' },
      ])
      .catch((e: unknown) => e);
    expect(batch).toBeInstanceOf(PublishValidationError);
    expect(batch).toMatchObject({ code: 'INVALID_FIELD', index: 1 });
    expect(await bus.obterEventoPorId(id)).toBeNull();
  });

  it('delivers the full payload to every colony subscribed to the type, once, without a sequence number', async () => {
    const got: Record<string, EventoConsultado[]> = { 'D-4': [], 'D-5': [] };
    bus.inscrever('demanda.categorizada', 'D-4', (e) => void got['D-4']!.push(e));
    bus.inscrever('demanda.categorizada', 'D-5', (e) => void got['D-5']!.push(e));
    await bus.inscricoesProntas();
    const sent = await bus.publicar(categorizada());
    await bus.publicar({ ...categorizada(), event_id: sent.event_id }); // a retry: the same event again
    await waitFor(() => got['D-4']!.length >= 1 && got['D-5']!.length >= 1);
    await waitFor(async () => (await bus.obterEventoPorId(sent.event_id)) !== null); // it reached the log
    await consumed('D-4', 'demanda.categorizada'); // both copies taken: a second delivery would be here by now
    await consumed('D-5', 'demanda.categorizada');
    for (const colonia of ['D-4', 'D-5']) {
      expect(got[colonia]!.map((e) => e.event_id)).toEqual([sent.event_id]);
      expect(got[colonia]![0]).toMatchObject({
        payload: SAMPLE_PAYLOADS['demanda.categorizada'],
        sequence_number: null,
      });
    }
  });

  it('retries a failing handler in place, then keeps a DLQ entry naming it; the other handlers are not affected', async () => {
    let calls = 0;
    const ok: string[] = [];
    bus.inscrever(
      'demanda.normalizada',
      'D-7',
      function falha() {
        calls++;
        throw new Error('boom');
      },
      { tentativasExtras: 2, backoffInicialMs: 10 },
    );
    bus.inscrever('demanda.normalizada', 'D-7', function anota(e) {
      ok.push(e.event_id);
    });
    await bus.inscricoesProntas();
    const e = await bus.publicar({
      tipo: 'demanda.normalizada',
      origem: 'D-1b',
      payload: { ...SAMPLE_PAYLOADS['demanda.normalizada'] },
    });
    const entry = await waitFor(
      async () => (await bus.obterPendentesDLQ('D-7')).find((d) => d.event_id === e.event_id),
      { timeoutMs: 30_000, message: 'the DLQ entry of D-7' },
    );
    // tentativas counts reprocessing rounds (seed: 1 at entry); the in-place retries were the 3 calls
    expect(entry).toMatchObject({ colonia: 'D-7', handler_nome: 'falha', tentativas: 1, status: 'pendente' });
    expect(entry.mensagem_erro).toContain('boom');
    expect(calls).toBe(3);
    expect(ok).toEqual([e.event_id]);
    expect((await bus.obterEstatisticasDLQ()).pendentes_por_colonia['D-7']).toBe(1);
  });

  it('fails a handler slower than its timeout with HandlerTimeoutError, without retrying it', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    bus.inscrever(
      'parametros.atualizados',
      'D-8',
      async function lento(_e, ctx) {
        calls++;
        await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r(), { once: true }));
        errors.push(ctx.signal.aborted);
      },
      { timeoutMs: 200, tentativasExtras: 3 },
    );
    await bus.inscricoesProntas();
    const e = await bus.publicar({
      tipo: 'parametros.atualizados',
      origem: 'D-6',
      payload: { ...SAMPLE_PAYLOADS['parametros.atualizados'] },
    });
    const entry = await waitFor(
      async () => (await bus.obterPendentesDLQ('D-8')).find((d) => d.event_id === e.event_id),
      { timeoutMs: 30_000, message: 'the DLQ entry of D-8' },
    );
    expect(entry).toMatchObject({ handler_nome: 'lento', tentativas: 1 });
    expect(entry.mensagem_erro).toContain(new HandlerTimeoutError('lento', 200).message);
    expect(calls).toBe(1);
    expect(errors).toEqual([true]); // the handler's signal was aborted at the timeout
  });

  it('reads the log redacted: by id, by correlation in sequence order, replayed from a cursor by type', async () => {
    const cursor = await bus.obterMaiorSequence();
    const correlacao_id = randomUUID();
    const a = await bus.publicar({ ...recebida(), correlacao_id });
    const b = await bus.publicar({ ...categorizada(), correlacao_id, causation_id: a.event_id });
    const row = await waitFor(() => bus.obterEventoPorId(a.event_id), { message: 'the event in the log' });
    expect(row.redigido).toBe(true);
    expect(typeof row.sequence_number).toBe('bigint');
    expect(String(row.payload.texto_bruto)).toMatch(/^hmac-sha256:/);
    expect(row.payload).not.toHaveProperty('cidadao_id');
    expect(JSON.stringify(row.payload)).not.toContain('Rua das Flores');
    await waitFor(async () => (await bus.consultarEventos({ correlacao_id })).total === 2);
    const flow = await bus.consultarEventos({ correlacao_id });
    expect(flow.linhas.map((l) => l.event_id).sort()).toEqual([a.event_id, b.event_id].sort());
    expect(flow.linhas[0]!.sequence_number < flow.linhas[1]!.sequence_number).toBe(true);
    const replay = await bus.replayDeSequence(cursor, ['demanda.categorizada']);
    expect(replay.map((e) => e.event_id)).toContain(b.event_id);
    expect(replay.every((e) => e.tipo === 'demanda.categorizada' && e.sequence_number > cursor)).toBe(true);
    const streamed: string[] = [];
    for await (const e of bus.replayStream(cursor, ['demanda.categorizada'])) streamed.push(e.event_id);
    expect(streamed).toEqual(replay.map((e) => e.event_id));
    expect(await bus.obterMaiorSequence()).toBeGreaterThanOrEqual(row.sequence_number);
    await expect(bus.consultarEventos({ correlacao_id: 'nope' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    await expect(bus.consultarEventos({ limite: 0 })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    expect(await bus.obterEventoPorId('not-a-uuid')).toBeNull();
  });

  it('carries tenant_id (seed 003): given on publish, inherited inside a handler, null when absent, a read filter', async () => {
    const tenant = randomUUID();
    const correlacao_id = randomUUID();
    const handled: EventoConsultado[] = [];
    bus.inscrever('demanda.recebida', 'D-7', async (e) => {
      handled.push(e);
      if (e.correlacao_id === correlacao_id) await bus.publicar(categorizada()); // no tenant given: the handled event's
    });
    await bus.inscricoesProntas();
    await expect(bus.publicar({ ...recebida(), tenant_id: 'tenant-1' })).rejects.toMatchObject({
      code: 'INVALID_TENANT_ID',
      step: 'tenant_id',
    });
    const a = await bus.publicar({ ...recebida(), correlacao_id, tenant_id: tenant.toUpperCase() });
    expect(a.tenant_id).toBe(tenant); // canonical lowercase, as the log returns it
    const none = await bus.publicar({ ...categorizada(), correlacao_id });
    expect(none.tenant_id).toBeNull();
    let last: unknown;
    await waitFor(
      async () => {
        const flow = await bus.consultarEventos({ correlacao_id });
        last = { handled: handled.map((e) => e.event_id), logged: flow.linhas.map((e) => [e.tipo, e.tenant_id]) };
        return flow.total === 3;
      },
      { message: 'the event, its effect and the tenant-less event in the log' },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; ${JSON.stringify(last)}; a=${a.event_id}`);
    });
    expect(handled.find((e) => e.event_id === a.event_id)?.tenant_id).toBe(tenant); // delivered with it
    const ofTenant = await bus.consultarEventos({ tenant_id: tenant });
    expect(ofTenant.linhas.map((e) => e.tipo).sort()).toEqual(['demanda.categorizada', 'demanda.recebida']);
    expect(ofTenant.linhas.every((e) => e.tenant_id === tenant && e.correlacao_id === correlacao_id)).toBe(true);
    const withoutTenant = await bus.consultarEventos({ correlacao_id, tenant_id: null });
    expect(withoutTenant.linhas.map((e) => e.event_id)).toEqual([none.event_id]);
    expect((await bus.obterEventoPorId(none.event_id))?.tenant_id).toBeNull();
    await expect(bus.consultarEventos({ tenant_id: 'x' })).rejects.toMatchObject({ code: 'BAD_REQUEST' });
  });
});

describe.each([
  ['EventBus', real],
  ['InMemoryEventBus', memory],
])('the Barramento contract after encerrar: %s', (_name, make) => {
  it('refuses every call with BUS_CLOSED', async () => {
    const { bus } = await make();
    await bus.encerrar();
    await expect(bus.publicar(categorizada())).rejects.toMatchObject({ code: 'BUS_CLOSED' });
    expect(() => bus.inscrever('demanda.categorizada', 'D-4', () => undefined)).toThrow(
      expect.objectContaining({ code: 'BUS_CLOSED' }) as Error,
    );
    await bus.encerrar(); // idempotent
  }, 60_000);
});
