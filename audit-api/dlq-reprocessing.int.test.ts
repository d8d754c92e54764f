import type { EventoConsultado, ContextoEntrega, EventBus } from '../sdk';
import { DlqReprocessor, type DlqReprocessorDeps } from '../sdk/service';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { createTestDatabase, testKafka, waitFor, type TestDatabase } from '../test/harness';
import { operatorToken, startTestAuditApi, type TestAuditApi } from '../test/harness/audit';
import { dlqRow, startTestBridge } from '../test/harness/bridge';
import { createTestBus } from '../test/harness/bus';

interface Audit {
  linhas: Array<{
    id: string;
    solicitante: string;
    colonia: string;
    resultado: string;
    reprocessados: number;
    eventos: Array<{ event_id: string; status: string | null }>;
  }>;
  total: number;
}

describe('audit API: DLQ statistics, pending entries and audited reprocessing (seed 4.5, 003 §8)', () => {
  let db: TestDatabase;
  let bus: EventBus;
  let api: TestAuditApi;
  let failing = true;
  const runs: Array<{ evento: EventoConsultado; ctx: ContextoEntrega }> = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = await createTestBus({ pool: db.pool });
    await startTestBridge(bus, db);
    bus.inscrever(
      'demanda.recebida',
      'D-5',
      function priorizar(evento, ctx) {
        runs.push({ evento, ctx });
        if (failing) throw new Error('serviço de priorização fora do ar');
      },
      { tentativasExtras: 0 },
    );
    await bus.inscricoesProntas();
    api = await startTestAuditApi(bus, db);
  });

  const publishFailing = async (n: number): Promise<EventoConsultado[]> => {
    const sent: EventoConsultado[] = [];
    for (let i = 0; i < n; i++)
      sent.push(
        await bus.publicar({
          tipo: 'demanda.recebida',
          origem: 'D-1a',
          payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
        }),
      );
    await waitFor(async () => {
      const states = await Promise.all(sent.map((e) => dlqRow(db, e.event_id, 'D-5')));
      return states.every((s) => s?.status === 'pendente');
    });
    return sent;
  };

  it('reprocesses a colony end to end: statistics, pending list, 200 with counts, the entries end resolved, the handler gets the full payload', async () => {
    const sent = await publishFailing(2);
    const stats = (await (await api.call('/api/events/dlq/estatisticas')).json()) as Record<string, unknown>;
    expect(stats).toMatchObject({ pendentes_por_colonia: { 'D-5': 2 }, total_pendentes: 2 });
    const pending = (await (await api.call('/api/events/dlq/pendentes?colonia=D-5')).json()) as {
      pendentes: Array<{ event_id: string; sequence_number: string; handler_nome: string; mensagem_erro: string }>;
    };
    expect(pending.pendentes.map((p) => p.event_id).sort()).toEqual(sent.map((e) => e.event_id).sort());
    expect(typeof pending.pendentes[0]!.sequence_number).toBe('string');
    expect(pending.pendentes[0]).toMatchObject({
      handler_nome: 'priorizar',
      mensagem_erro: 'serviço de priorização fora do ar',
    });

    failing = false;
    runs.length = 0;
    const res = await api.call('/api/events/dlq/reprocessar', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ colonia: 'D-5' }),
    });
    expect(res.status).toBe(200);
    const result = (await res.json()) as Record<string, unknown>;
    expect(result).toMatchObject({ colonia: 'D-5', reprocessados: 2, originais: 2, redigidos: 0, restantes: 0 });

    await waitFor(async () => {
      const states = await Promise.all(sent.map((e) => dlqRow(db, e.event_id, 'D-5')));
      return states.every((s) => s?.status === 'resolved');
    });
    expect(runs.map((r) => r.evento.event_id).sort()).toEqual(sent.map((e) => e.event_id).sort());
    // the original full payload, read back from the DLQ topic
    expect(runs[0]!.evento.payload).toEqual(SAMPLE_PAYLOADS['demanda.recebida']);
    expect(runs[0]!.ctx.reprocessamento).toEqual({ pedido: result.pedido_id, redigido: false });

    const audit = (await (await api.call('/api/events/dlq/reprocessamentos?colonia=D-5')).json()) as Audit;
    expect(audit.linhas[0]).toMatchObject({
      id: result.pedido_id,
      solicitante: 'operador-42',
      colonia: 'D-5',
      resultado: 'concluido',
      reprocessados: 2,
    });
    expect(audit.linhas[0]!.eventos.map((e) => e.status)).toEqual(['resolved', 'resolved']);
  });

  it('a second request for the colony within the interval → 429 with Retry-After, recorded as refused', async () => {
    const res = await api.call('/api/events/dlq/reprocessar', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ colonia: 'D-5' }),
    });
    expect(res.status).toBe(429);
    const retry = Number(res.headers.get('retry-after'));
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(60);
    const audit = (await (await api.call('/api/events/dlq/reprocessamentos?colonia=D-5')).json()) as Audit;
    expect(audit.linhas.map((l) => l.resultado)).toEqual(['recusado', 'concluido']);
    // another colony is not throttled by D-5's request
    const other = await api.call('/api/events/dlq/reprocessar', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ colonia: 'D-6' }),
    });
    expect(other.status).toBe(200);
    expect(await other.json()).toMatchObject({ reprocessados: 0 });
  });

  it('sends the redacted log copy, flagged, once the DLQ topic no longer retains the original', async () => {
    failing = true;
    const [sent] = await publishFailing(1);
    // retention passed: the DLQ topic's records are gone
    const { admin } = testKafka();
    const a = await admin();
    const offsets = await a.fetchTopicOffsets(bus.topics.dlq('D-5'));
    await a.deleteTopicRecords({
      topic: bus.topics.dlq('D-5'),
      partitions: offsets.map((o) => ({ partition: o.partition, offset: o.high })),
    });
    failing = false;
    runs.length = 0;
    const result = await bus.reprocessarPendentesDLQ('D-5', { solicitante: 'rotina-noturna' });
    expect(result).toMatchObject({ reprocessados: 1, originais: 0, redigidos: 1 });
    await waitFor(async () => (await dlqRow(db, sent!.event_id, 'D-5'))?.status === 'resolved');
    expect(runs[0]!.ctx.reprocessamento?.redigido).toBe(true);
    expect(runs[0]!.evento.payload).not.toHaveProperty('cidadao_id');
    expect(JSON.stringify(runs[0]!.evento.payload)).not.toContain('Rua das Flores');
  });

  it('validates the body: missing or extra fields, wrong types, bad names, invalid JSON → 400', async () => {
    const post = (body: string, token?: string) =>
      api.call('/api/events/dlq/reprocessar', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        ...(token ? { token } : {}),
      });
    const cases: Array<[string, string]> = [
      ['{}', "'colonia' is required"],
      ['{"colonia": 5}', 'body.colonia: must be given once'],
      ['{"colonia": "D-5", "todas": true}', "unknown parameter 'todas'"],
      ['{"colonia": "D-5\'; DROP TABLE core.dead_letter_queue; --"}', 'body.colonia: must be a colony code'],
      ['{"colonia": ', 'not valid JSON'],
      ['[]', 'must be a JSON object'],
    ];
    for (const [body, detail] of cases) {
      const res = await post(body);
      expect(`${body} → ${res.status}`).toBe(`${body} → 400`);
      expect(((await res.json()) as { detail: string }).detail).toContain(detail);
    }
    expect((await post('{"colonia":"D-5"}', await operatorToken({ papel: 'leitor' }))).status).toBe(403);
  });

  it('a failure after the claim closes the audit row as failed with the reason and puts the entries back to pendente', async () => {
    failing = true;
    const [sent] = await publishFailing(1);
    // fault injection: the bus's own reprocessor dependencies, plus a crash right after the claim
    const own = (bus as unknown as { reprocessador(): DlqReprocessor }).reprocessador();
    const deps = (own as unknown as { d: DlqReprocessorDeps }).d;
    const crashing = new DlqReprocessor({
      ...deps,
      faultAfterClaim: () => Promise.reject(new Error('injected crash after the claim')),
    });
    await expect(crashing.reprocessar('D-5', { solicitante: 'operador-falha' })).rejects.toThrow('injected crash');
    const { rows } = await db.pool.query<{ resultado: string; detalhe: string; concluido_em: Date | null }>(
      `SELECT resultado, detalhe, concluido_em FROM core.dlq_reprocessamento WHERE solicitante = 'operador-falha'`,
    );
    expect(rows).toEqual([
      { resultado: 'falhou', detalhe: 'internal error (Error)', concluido_em: expect.any(Date) as unknown },
    ]);
    expect((await dlqRow(db, sent!.event_id, 'D-5'))?.status).toBe('pendente');
    const stuck = await db.pool.query(`SELECT 1 FROM core.dlq_reprocessamento WHERE resultado = 'em_andamento'`);
    expect(stuck.rowCount).toBe(0);
  });

  it('a request left in progress by a process that died is closed as failed once its entries are taken again', async () => {
    await db.pool.query(
      `INSERT INTO core.dlq_reprocessamento (id, solicitante, colonia, event_ids, resultado, solicitado_em)
       VALUES (gen_random_uuid(), 'operador-morto', 'D-5', '{}', 'em_andamento', now() - interval '1 hour')`,
    );
    await bus.reprocessarPendentesDLQ('D-5', { solicitante: 'operador-vivo', retryingExpiraMs: 60_000 });
    const { rows } = await db.pool.query<{ resultado: string; detalhe: string }>(
      `SELECT resultado, detalhe FROM core.dlq_reprocessamento WHERE solicitante = 'operador-morto'`,
    );
    expect(rows).toEqual([{ resultado: 'falhou', detalhe: 'abandoned: the request did not finish' }]);
  });

  it('the SDK refuses a requester or a colony that the shared rules refuse, before touching anything', async () => {
    for (const solicitante of ['maria@prefeitura.gov.br', 'cpf12345678909', '123.456.789-09', '']) {
      await expect(bus.reprocessarPendentesDLQ('D-5', { solicitante })).rejects.toMatchObject({
        code: 'BAD_REQUEST',
        message: expect.stringContaining('solicitante must be an operator id') as unknown,
      });
    }
    await expect(bus.reprocessarPendentesDLQ('a.b', { solicitante: 'operador-1' })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    const { rows } = await db.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM core.dlq_reprocessamento WHERE solicitante LIKE '%@%' OR solicitante ~ '[0-9]{7}'`,
    );
    expect(rows[0]?.n).toBe('0');
  });
});
