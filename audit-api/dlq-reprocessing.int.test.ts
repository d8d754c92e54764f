import type { EventoConsultado } from '../sdk';
import type { ContextoEntrega } from '../sdk/subscriber';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { createTestDatabase, testKafka, waitFor, type TestDatabase } from '../test/harness';
import { operatorToken, startTestAuditApi, type TestAuditApi } from '../test/harness/audit';
import { dlqRow, startTestBridge } from '../test/harness/bridge';
import { createTestBus } from '../test/harness/bus';
import type { EventBus } from '../sdk';

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
      ['{"colonia": "D-5\'; DROP TABLE core.dead_letter_queue; --"}', 'body.colonia: must be a name'],
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
});
