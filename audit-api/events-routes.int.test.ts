import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createTestDatabase, waitFor, type TestDatabase } from '../test/harness';
import { startTestAuditApi, type TestAuditApi } from '../test/harness/audit';
import { startTestBridge } from '../test/harness/bridge';
import { createTestBus, SEED_EVENTS } from '../test/harness/bus';
import type { EventBus } from '../sdk';

interface Page {
  linhas: Array<Record<string, unknown> & { sequence_number: string; tipo: string; event_id: string }>;
  total: number;
  limite: number;
  deslocamento: number;
}

const json = async <T>(r: Response): Promise<T> => (await r.json()) as T;

describe('audit API: /api/events reads (seed 5.4)', () => {
  let db: TestDatabase;
  let bus: EventBus;
  let api: TestAuditApi;
  const corr = randomUUID();

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = await createTestBus({ pool: db.pool });
    await startTestBridge(bus, db);
    // The seed's sample flow through the real bridge (redacted on the way)…
    for (const e of SEED_EVENTS) await bus.publicar({ ...e, payload: { ...e.payload } });
    await waitFor(async () => (await bus.obterMaiorSequence()) === 3n);
    // …and volume as fixtures.
    await db.pool.query(
      `INSERT INTO core.event_log (event_id, tipo, origem, correlacao_id, timestamp, payload)
       SELECT gen_random_uuid(), CASE WHEN g % 2 = 0 THEN 'demanda.categorizada' ELSE 'parametros.atualizados' END,
              'D-x', CASE WHEN g <= 520 THEN $1::uuid END, '2026-07-01T00:00:00Z'::timestamptz + (g || ' seconds')::interval,
              jsonb_build_object('i', g)
         FROM generate_series(1, 1200) g`,
      [corr],
    );
    api = await startTestAuditApi(bus, db);
  });

  it('T3: filters by type and paginates, sequence_number as a string', async () => {
    const p1 = await json<Page>(await api.call('/api/events?tipo=demanda.categorizada&limite=50'));
    const p2 = await json<Page>(await api.call('/api/events?tipo=demanda.categorizada&limite=50&deslocamento=50'));
    expect(p1).toMatchObject({ total: 601, limite: 50, deslocamento: 0 });
    expect(p1.linhas).toHaveLength(50);
    expect(p1.linhas.every((e) => e.tipo === 'demanda.categorizada' && typeof e.sequence_number === 'string')).toBe(
      true,
    );
    expect(BigInt(p2.linhas[0]!.sequence_number)).toBeGreaterThan(BigInt(p1.linhas.at(-1)!.sequence_number));
  });

  it('keyset paging over REST: proximo_cursor (a string) as apos_sequence walks the filter once; with deslocamento it is a 400 naming both', async () => {
    const seen: string[] = [];
    let url = '/api/events?tipo=demanda.categorizada&limite=200';
    for (;;) {
      const p = await json<Page & { proximo_cursor: string | null; total_exato: boolean }>(await api.call(url));
      expect(p).toMatchObject({ total: 601, total_exato: true });
      seen.push(...p.linhas.map((e) => e.sequence_number));
      if (p.proximo_cursor === null) break;
      expect(typeof p.proximo_cursor).toBe('string');
      url = `/api/events?tipo=demanda.categorizada&limite=200&apos_sequence=${p.proximo_cursor}`;
    }
    expect(seen).toHaveLength(601);
    expect(new Set(seen).size).toBe(601);
    const both = await api.call('/api/events?apos_sequence=5&deslocamento=10');
    expect(both.status).toBe(400);
    expect(JSON.stringify(await both.json())).toContain('apos_sequence and deslocamento');
    const bad = await api.call('/api/events?apos_sequence=-3');
    expect(bad.status).toBe(400);
  });

  it('T14: a page holds at most 500 whatever limite asks', async () => {
    const r = await json<Page>(await api.call('/api/events?limite=10000'));
    expect(r.limite).toBe(500);
    expect(r.linhas).toHaveLength(500);
    expect(r.total).toBe(1203);
  });

  it('combines origin, time and sequence filters', async () => {
    const r = await json<Page>(
      await api.call(
        '/api/events?origem=D-x&timestamp_inicio=2026-07-01T00:00:10Z&timestamp_fim=2026-07-01T00:00:14Z&sequence_inicio=14&sequence_fim=100',
      ),
    );
    expect(r.linhas.map((e) => e.sequence_number)).toEqual(['14', '15', '16', '17']);
  });

  it('T5: one event by id, redacted; 404 problem for an unknown id', async () => {
    const [recebida] = SEED_EVENTS;
    const res = await api.call(`/api/events/${recebida.event_id}`);
    expect(res.status).toBe(200);
    const e = await json<Record<string, unknown> & { payload: Record<string, unknown> }>(res);
    const inLog = await bus.obterEventoPorId(recebida.event_id);
    expect(e).toMatchObject({
      event_id: recebida.event_id,
      sequence_number: String(inLog?.sequence_number),
      redigido: true,
    });
    expect(JSON.stringify(e)).not.toContain('Rua das Flores'); // texto_bruto is a keyed hash in the log
    expect(e.payload).not.toHaveProperty('cidadao_id');

    const missing = await api.call(`/api/events/${randomUUID()}`);
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('application/problem+json');
    expect(await missing.json()).toMatchObject({ status: 404, title: 'Not found', detail: 'Evento não encontrado' });
  });

  it('trace: the flow of one correlacao_id in sequence order, at most 500', async () => {
    const seed = await json<Page>(await api.call(`/api/events/trace/${SEED_EVENTS[0].correlacao_id}`));
    // one topic per type: the three landed in the log's order, which the trace follows
    expect(new Set(seed.linhas.map((e) => e.event_id))).toEqual(new Set(SEED_EVENTS.map((e) => e.event_id)));
    const seedSeqs = seed.linhas.map((e) => Number(e.sequence_number));
    expect(seedSeqs).toEqual([...seedSeqs].sort((a, b) => a - b));
    const big = await json<Page>(await api.call(`/api/events/trace/${corr}`));
    expect(big.total).toBe(520);
    expect(big.linhas).toHaveLength(500);
    const seqs = big.linhas.map((e) => BigInt(e.sequence_number));
    expect(seqs).toEqual([...seqs].sort((a, b) => (a < b ? -1 : 1)));
  });

  describe('malformed requests → 400 problem details naming the parameter', () => {
    it.each([
      ['/api/events?correlacao_id=not-a-uuid', 'query.correlacao_id: must be a UUID'],
      ['/api/events?timestamp_inicio=yesterday', 'query.timestamp_inicio: must be an ISO-8601 date-time'],
      ['/api/events?timestamp_fim=2026-07-01T00:00:00', 'query.timestamp_fim: must be an ISO-8601 date-time'],
      ['/api/events?limite=-1', 'query.limite: must be an integer from 1 to 10000'],
      ['/api/events?limite=0', 'query.limite'],
      ['/api/events?limite=99999999999999999999', 'query.limite'],
      ['/api/events?limite=1.5', 'query.limite'],
      ['/api/events?deslocamento=-3', 'query.deslocamento'],
      ['/api/events?sequence_inicio=9223372036854775808', 'sequence_inicio must be an integer between 0 and'],
      ['/api/events?sequence_fim=1e3', 'query.sequence_fim'],
      ['/api/events?tipo=a&tipo=b', 'query.tipo: must be given once'],
      ['/api/events?tipos=demanda.recebida', "unknown parameter 'tipos'"],
      ['/api/events?__proto__=x', "unknown parameter '__proto__'"],
      // dates the SDK's old check passed and PostgreSQL refused (500 before): the shared rule
      ['/api/events?timestamp_inicio=2026-01-01T00:00:00%2B23:00', 'query.timestamp_inicio: must be an ISO-8601'],
      ['/api/events?timestamp_inicio=2026-01-01T00:00:00%2B16:00', 'query.timestamp_inicio: must be an ISO-8601'],
      ['/api/events?timestamp_inicio=2026-01-01T00:00:00-2300', 'query.timestamp_inicio: must be an ISO-8601'],
      ['/api/events?timestamp_fim=0000-01-01T00:00:00Z', 'query.timestamp_fim: must be an ISO-8601'],
      ['/api/events?timestamp_fim=2026-02-30T10:00:00Z', 'query.timestamp_fim: must be an ISO-8601'],
      ['/api/events?timestamp_fim=2026-01-01T00:00:00+23:00', 'query.timestamp_fim: must be an ISO-8601'], // '+' is a space
      ['/api/events?origem=a.b', 'query.origem: must be a colony code'],
      ['/api/events?origem=52998224725', 'query.origem: must be a colony code'],
      ['/api/events?tipo=demanda%00recebida', 'query.tipo: must be an event type name'],
      ['/api/events/42', 'path.eventId: must be a UUID'],
      ['/api/events/trace/42', 'path.correlacaoId: must be a UUID'],
      [`/api/events/${randomUUID()}?x=1`, "unknown parameter 'x'"],
    ])('%s', async (path, message) => {
      const res = await api.call(path);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      const body = await json<{ status: number; detail: string; type: string }>(res);
      expect(body.status).toBe(400);
      expect(body.type).toMatch(/^https:\/\//);
      expect(body.detail).toContain(message);
    });
  });

  it('SQL-injection strings in every filter are harmless: refused or matching nothing, the log intact', async () => {
    const attacks = [
      "' OR '1'='1",
      "x'; DROP TABLE core.event_log; --",
      '1) OR (1=1',
      "demanda.recebida' UNION SELECT * FROM pg_user --",
      '%27%20OR%201%3D1',
    ];
    const filters = [
      'tipo',
      'origem',
      'correlacao_id',
      'timestamp_inicio',
      'timestamp_fim',
      'sequence_inicio',
      'sequence_fim',
      'limite',
      'deslocamento',
    ];
    for (const f of filters) {
      for (const a of attacks) {
        const res = await api.call(`/api/events?${f}=${encodeURIComponent(a)}`);
        const outcome = res.status === 200 ? `200 total=${(await json<Page>(res)).total}` : String(res.status);
        expect([`${f}: 400`, `${f}: 200 total=0`]).toContain(`${f}: ${outcome}`);
      }
    }
    for (const a of attacks) {
      expect((await api.call(`/api/events/${encodeURIComponent(a)}`)).status).toBe(400);
      expect((await api.call(`/api/events/trace/${encodeURIComponent(a)}`)).status).toBe(400);
    }
    const { rows } = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM core.event_log');
    expect(Number(rows[0]!.n)).toBe(1203);
  });

  it('an unknown route is a 404 problem; a failing dependency is an opaque 500 and /ready says 503', async () => {
    expect((await api.call('/api/eventos')).status).toBe(404);
    const broken = new pg.Pool({ connectionString: db.url, max: 1 });
    await broken.end();
    const brokenBus = await createTestBus({ pool: broken });
    const brokenApi = await startTestAuditApi(brokenBus, { ...db, pool: broken });
    const res = await brokenApi.call('/api/events');
    expect(res.status).toBe(500);
    const body = await json<Record<string, unknown>>(res);
    expect(body).toMatchObject({ status: 500, title: 'Internal error' });
    expect(JSON.stringify(body)).not.toMatch(/pool|pg|stack|at |core\.|SELECT/i);
    expect(brokenApi.logs.some((l) => l.includes('"unhandled error"') && l.includes(String(body.request_id)))).toBe(
      true,
    );
    expect((await fetch(`${brokenApi.url}/ready`)).status).toBe(503);
  });

  it('exposes health, readiness and Prometheus metrics; access logs carry no token', async () => {
    expect(await (await fetch(`${api.url}/health`)).json()).toEqual({ status: 'ok' });
    expect((await fetch(`${api.url}/ready`)).status).toBe(200);
    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    expect(metrics).toMatch(
      /feromonios_audit_http_requests_total\{method="GET",route="\/api\/events",status="200"\} \d+/,
    );
    expect(metrics).toContain('feromonios_audit_http_request_duration_seconds_bucket');
    const access = api.logs.filter((l) => l.includes('"msg":"http"'));
    expect(access.length).toBeGreaterThan(10);
    expect(access.every((l) => !/eyJ|authorization|bearer/i.test(l))).toBe(true);
    expect(JSON.parse(access[0]!)).toMatchObject({
      level: 'info',
      component: 'audit-api',
      method: 'GET',
      sub: 'operador-42',
    });
  });

  it('tenant_id filters the log (seed 003): only that tenant, combined with the others; a non-UUID is a 400 naming it', async () => {
    const tenant = randomUUID();
    await db.pool.query(
      `INSERT INTO core.event_log (event_id, tipo, origem, correlacao_id, timestamp, payload, tenant_id)
       SELECT gen_random_uuid(), 'demanda.categorizada', CASE WHEN g = 1 THEN 'D-t' ELSE 'D-x' END, gen_random_uuid(),
              '2026-08-01T00:00:00Z'::timestamptz, jsonb_build_object('i', g), $1::uuid
         FROM generate_series(1, 3) g`,
      [tenant],
    );
    const all = await json<Page & { linhas: Array<{ tenant_id: string | null }> }>(
      await api.call(`/api/events?tenant_id=${tenant}`),
    );
    expect(all.total).toBe(3);
    expect(all.linhas.every((e) => e.tenant_id === tenant)).toBe(true);
    const one = await json<Page>(await api.call(`/api/events?tenant_id=${tenant.toUpperCase()}&origem=D-t`));
    expect(one.total).toBe(1);
    const none = await json<Page>(await api.call(`/api/events?tenant_id=${randomUUID()}`));
    expect(none.total).toBe(0);
    const bad = await api.call("/api/events?tenant_id=1' OR '1'='1");
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain('tenant_id');
  });
});
