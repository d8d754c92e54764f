import { randomUUID } from 'node:crypto';
import type { EventBus, EventoConsultado } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { createTestDatabase, waitFor, type TestDatabase } from '../test/harness';
import { startTestAuditApi, type TestAuditApi } from '../test/harness/audit';
import { startTestBridge } from '../test/harness/bridge';
import { coloniesWithDlq, type ColoniesWithDlq } from '../test/harness/dlq';
import { createTestBus } from '../test/harness/bus';

/**
 * Reprocessing v2 at the HTTP boundary (docs/reprocessing.md): what each route accepts and
 * refuses, 202 and progress, a request stopped at shutdown, the throttle, the replay stream.
 * The CLI's end-to-end test (cli/cli.int.test.ts) covers the verbs; this covers the API's edges.
 */
describe('audit API: reprocessing v2 and replay', () => {
  let db: TestDatabase;
  let bus: EventBus;
  let api: TestAuditApi;
  let colonies: ColoniesWithDlq;

  const post = (path: string, body: unknown, a: TestAuditApi = api) =>
    a.call(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  const publish = (colonia: string, n: number) => colonies.publish(colonia, n);
  const states = (colonia: string, events: EventoConsultado[]) => colonies.states(colonia, events);

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = await createTestBus({ pool: db.pool });
    await startTestBridge(bus, db, { dlqMaxTentativas: 10 });
    colonies = await coloniesWithDlq(bus, db, ['R-1', 'R-2', 'R-3', 'R-4']);
    api = await startTestAuditApi(bus, db, { AUDIT_REPROCESS_INTERVAL_SECONDS: 0 });
  });

  it('refuses bad bodies with 400 naming the field, before anything is claimed or recorded', async () => {
    const trail = async () =>
      Number((await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM core.dlq_reprocessamento')).rows[0]?.n);
    const before = await trail();
    const cases: Array<[string, unknown, string]> = [
      ['reprocessamentos', { colonia: 'R-1', todas: true }, "unknown parameter 'todas'"],
      ['reprocessamentos', { colonia: 'R-1', max: 0 }, 'body.max: must be >= 1'],
      ['reprocessamentos', { colonia: 'R-1', max: 10001 }, 'body.max: must be <= 10000'],
      ['reprocessamentos', { colonia: 'R-1', max: 2.5 }, 'body.max: must be integer'],
      ['reprocessamentos', { colonia: 'R-1', taxa: 0 }, 'body.taxa: must be >= 0.1'],
      ['reprocessamentos', { colonia: 'R-1', taxa: '5' }, 'body.taxa: must be number'],
      ['reprocessamentos', { colonia: 'R-1', dry_run: 'yes' }, 'body.dry_run: must be boolean'],
      [
        'reprocessamentos',
        { colonia: 'R-1', manipulador: 'maria@cidade.br' },
        'body.manipulador: must be a handler name',
      ],
      ['reprocessamentos', { colonia: 'R-1', manipulador: 'h 1' }, 'body.manipulador: must be a handler name'],
      ['reprocessamentos', { colonia: 'R-1', event_ids: ['x'] }, 'body.event_ids.0: must be a UUID'],
      ['reprocessamentos', { colonia: 'R-1', event_ids: [] }, 'body.event_ids: must NOT have fewer than 1 items'],
      ['reprocessamentos', { colonia: 'R-1', fingerprint: 'zz' }, 'body.fingerprint: must be 12 lowercase hex digits'],
      [
        'reprocessamentos',
        { colonia: 'R-1', falhou_desde: '2026-02-30T00:00:00Z' },
        'body.falhou_desde: must be an ISO-8601',
      ],
      [
        'reprocessamentos',
        { colonia: 'R-1', falhou_desde: '2026-12-02T00:00:00Z', falhou_ate: '2026-12-01T00:00:00Z' },
        'falhou_desde must not be after falhou_ate',
      ],
      ['estacionar', { colonia: 'R-1' }, "'motivo' is required"],
      [
        'estacionar',
        { colonia: 'R-1', motivo: 'o cidadão José reclamou' },
        'body.motivo: must be one of colonia-retirada',
      ],
      [
        'estacionar',
        { colonia: 'R-1', motivo: 'outro', referencia: 'José' },
        'body.referencia: must be a ticket reference',
      ],
      ['estacionar', { colonia: 'R-1', motivo: 'outro' }, "referencia is required when motivo is 'outro'"],
      ['reabrir', { colonia: 'R-1', motivo: 'duplicado' }, "unknown parameter 'motivo'"],
    ];
    for (const [route, body, detail] of cases) {
      const res = await post(`/api/events/dlq/${route}`, body);
      const text = ((await res.json()) as { detail: string }).detail;
      expect(`${route} ${JSON.stringify(body)} → ${res.status} ${text}`).toContain(`→ 400 `);
      expect(text).toContain(detail);
    }
    expect(await trail()).toBe(before);
  });

  it('each selection criterion narrows what a dry run would take: handler, fingerprint, failure time range, ids', async () => {
    const [e] = await publish('R-4', 1);
    const { linhas } = (await (await api.call('/api/events/dlq/entradas?colonia=R-4')).json()) as {
      linhas: Array<{ erro_fingerprint: string }>;
    };
    const hour = 3_600_000;
    const cases: Array<[Record<string, unknown>, number]> = [
      [{}, 1],
      [{ manipulador: 'priorizar' }, 1],
      [{ manipulador: 'outro' }, 0],
      [{ fingerprint: linhas[0]!.erro_fingerprint }, 1],
      [{ fingerprint: '000000000000' }, 0],
      [
        {
          falhou_desde: new Date(Date.now() - hour).toISOString(),
          falhou_ate: new Date(Date.now() + hour).toISOString(),
        },
        1,
      ],
      [{ falhou_ate: '2000-01-01T00:00:00Z' }, 0],
      [{ event_ids: [e!.event_id] }, 1],
      [{ event_ids: [randomUUID()] }, 0],
    ];
    for (const [selection, n] of cases) {
      const res = await post('/api/events/dlq/reprocessamentos', { colonia: 'R-4', ...selection, dry_run: true });
      const plan = (await res.json()) as { reprocessariam: number };
      expect(`${JSON.stringify(selection)} → ${plan.reprocessariam}`).toBe(`${JSON.stringify(selection)} → ${n}`);
    }
  });

  it('202 with Location; the action shows its progress while paced and ends concluido with every entry resolved', async () => {
    const sent = await publish('R-1', 6);
    colonies.failing.delete('R-1');
    const res = await post('/api/events/dlq/reprocessamentos', { colonia: 'R-1', taxa: 2 });
    expect(res.status).toBe(202);
    const claim = (await res.json()) as { pedido_id: string; selecionados: number; duracao_estimada_ms: number };
    expect(claim).toMatchObject({ selecionados: 6, duracao_estimada_ms: 2500 });
    expect(res.headers.get('location')).toBe(`/api/events/dlq/reprocessamentos/${claim.pedido_id}`);
    const seen: number[] = [];
    const row = await waitFor(
      async () => {
        const r = (await (await api.call(res.headers.get('location')!)).json()) as {
          resultado: string;
          reprocessados: number;
        };
        seen.push(r.reprocessados);
        return r.resultado === 'concluido' && r;
      },
      { intervalMs: 200 },
    );
    expect(row.reprocessados).toBe(6);
    // progress was visible in between: some reading saw part of the entries sent
    expect(seen.some((n) => n > 0 && n < 6)).toBe(true);
    await waitFor(async () => (await states('R-1', sent)).every((s) => s === 'resolved'));
    expect((await api.call(`/api/events/dlq/reprocessamentos/${randomUUID()}`)).status).toBe(404);
  });

  it('a paced request stopped at shutdown puts what it did not send back to pendente and closes its row as failed', async () => {
    const sent = await publish('R-2', 5);
    // one every 2 s: the request is surely still sending when it is stopped
    const res = await post('/api/events/dlq/reprocessamentos', { colonia: 'R-2', taxa: 0.5 });
    expect(res.status).toBe(202);
    const { pedido_id } = (await res.json()) as { pedido_id: string };
    await waitFor(() => colonies.handled.filter((h) => h.colonia === 'R-2').length >= 5 + 1); // the first one was sent back
    await api.requests.stopAll();
    const { rows } = await db.pool.query<{ resultado: string; detalhe: string; reprocessados: number }>(
      'SELECT resultado, detalhe, reprocessados FROM core.dlq_reprocessamento WHERE id = $1',
      [pedido_id],
    );
    expect(rows[0]).toMatchObject({ resultado: 'falhou', detalhe: expect.stringContaining('INTERRUPTED') as unknown });
    const sentBack = rows[0]!.reprocessados;
    expect(sentBack).toBeGreaterThanOrEqual(1);
    expect(sentBack).toBeLessThan(5);
    // the ones sent fail again (R-2 still fails) → pendente; the ones never sent were released → pendente
    await waitFor(async () => (await states('R-2', sent)).every((s) => s === 'pendente'));
    const { rows: rounds } = await db.pool.query<{ reprocessamentos: number }>(
      `SELECT reprocessamentos FROM core.dead_letter_queue WHERE colonia = 'R-2' ORDER BY sequence_number`,
    );
    expect(rounds.map((r) => r.reprocessamentos)).toEqual(Array.from({ length: 5 }, (_, i) => (i < sentBack ? 1 : 0)));
  });

  it('a low rate takes only what it can send within the retrying expiry; the rest stays pending', async () => {
    await publish('R-3', 3);
    const started = await bus.iniciarReprocessamentoDLQ(
      { colonia: 'R-3' },
      { solicitante: 'rotina', taxa: 1, retryingExpiraMs: 2_500, sinal: AbortSignal.timeout(60_000) },
    );
    expect(started).toMatchObject({ selecionados: 2, restantes: 1 });
    await expect(started.concluido).resolves.toMatchObject({ reprocessados: 2, restantes: 1 });
  });

  it('throttle: a second request within the interval is 429; dry runs are never throttled and do not count', async () => {
    const strict = await startTestAuditApi(bus, db, { AUDIT_REPROCESS_INTERVAL_SECONDS: 60 });
    const dry = await post('/api/events/dlq/reprocessamentos', { colonia: 'R-9', dry_run: true }, strict);
    expect(dry.status).toBe(200);
    const first = await post('/api/events/dlq/reprocessamentos', { colonia: 'R-9' }, strict);
    expect(first.status).toBe(202);
    const again = await post('/api/events/dlq/reprocessamentos', { colonia: 'R-9', max: 1 }, strict);
    expect(again.status).toBe(429);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await post('/api/events/dlq/reprocessamentos', { colonia: 'R-9', dry_run: true }, strict)).status).toBe(
      200,
    );
    const trail = (await (await strict.call('/api/events/dlq/reprocessamentos?colonia=R-9')).json()) as {
      linhas: Array<{ simulacao: boolean; resultado: string; parametros: Record<string, unknown> }>;
    };
    expect(trail.linhas.map((l) => [l.simulacao, l.resultado])).toEqual([
      [true, 'concluido'],
      [false, 'recusado'],
      [false, 'concluido'],
      [true, 'concluido'],
    ]);
    expect(trail.linhas[1]!.parametros).toMatchObject({ max: 1 });
  });

  it('search by a payload key of AUDIT_PAYLOAD_SEARCH_KEYS; other keys and half a pair are 400', async () => {
    const demanda_id = randomUUID();
    const e = await bus.publicar(
      { tipo: 'demanda.recebida', origem: 'D-1a', payload: { ...SAMPLE_PAYLOADS['demanda.recebida'], demanda_id } },
      { confirmar: true },
    );
    const found = (await (
      await api.call(`/api/events?payload_campo=demanda_id&payload_valor=${demanda_id}`)
    ).json()) as { linhas: Array<{ event_id: string }>; total: number };
    expect(found).toMatchObject({ total: 1, linhas: [{ event_id: e.event_id }] });
    for (const [q, detail] of [
      ['payload_campo=texto_bruto&payload_valor=x', 'must be one of demanda_id'],
      ['payload_campo=demanda_id', "'payload_valor' is required with 'payload_campo'"],
      ['payload_valor=x', "'payload_campo' is required with 'payload_valor'"],
      ['payload_campo=Demanda-Id&payload_valor=x', 'must be a payload key'],
    ]) {
      const res = await api.call(`/api/events?${q}`);
      expect(`${q} → ${res.status}`).toBe(`${q} → 400`);
      expect(((await res.json()) as { detail: string }).detail).toContain(detail);
    }
  });

  it('replay: NDJSON in sequence order up to the sequence at the start, validated query', async () => {
    const { rows } = await db.pool.query<{ s: string }>('SELECT max(sequence_number)::text AS s FROM core.event_log');
    const max = BigInt(rows[0]!.s);
    const res = await api.call(`/api/events/replay?apos_sequence=${max - 3n}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/x-ndjson');
    expect(res.headers.get('x-feromonios-ate-sequence')).toBe(max.toString());
    const lines = (await res.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { sequence_number: string; redigido: boolean });
    expect(lines.map((l) => l.sequence_number)).toEqual([max - 2n, max - 1n, max].map(String));
    expect(lines.every((l) => l.redigido)).toBe(true);
    const none = await api.call(`/api/events/replay?apos_sequence=${max}&tipos=demanda.recebida,demanda.normalizada`);
    expect(await none.text()).toBe('');
    for (const q of ['', '?apos_sequence=-1', '?apos_sequence=1&tipos=a;b', '?apos_sequence=1&extra=1'])
      expect(`${q} → ${(await api.call(`/api/events/replay${q}`)).status}`).toBe(`${q} → 400`);
  });
});
