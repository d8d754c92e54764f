import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import type pg from 'pg';
import { createAuditApp } from './app';
import { AuditMetrics } from './metrics';
import { createTestDatabase, type TestDatabase } from '../test/harness';
import {
  defaultTestAuditConfig,
  operatorToken,
  rawRequest as raw,
  startTestAuditApi,
  type TestAuditApi,
} from '../test/harness/audit';
import { createTestBus } from '../test/harness/bus';
import { jsonLogger, type EventBus } from '../sdk';

const post = (api: TestAuditApi, body: string, headers: Record<string, string>) =>
  api.call('/api/events/dlq/reprocessar', { method: 'POST', headers, body });

describe('audit API hardening (issue #13)', () => {
  let db: TestDatabase;
  let bus: EventBus;
  let api: TestAuditApi;
  let token: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = await createTestBus({ pool: db.pool });
    api = await startTestAuditApi(bus, db);
    token = await operatorToken();
  });

  it('colony names the SDK refuses are a 400 naming the rule, and leave no audit row behind', async () => {
    for (const colonia of ['a.b', 'X.x', '-X', '_X', '.', '..', 'D 4', '52998224725', 'D\u00004']) {
      const res = await post(api, JSON.stringify({ colonia }), { 'content-type': 'application/json' });
      expect(`${JSON.stringify(colonia)} → ${res.status}`).toBe(`${JSON.stringify(colonia)} → 400`);
      expect(((await res.json()) as { detail: string }).detail).toContain('must be a colony code');
    }
    const { rows } = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM core.dlq_reprocessamento');
    expect(rows[0]?.n).toBe('0');
  });

  it('an unsupported charset, content encoding or media type is a 415, not a 500', async () => {
    const body = JSON.stringify({ colonia: 'D-5' });
    for (const headers of [
      { 'content-type': 'application/json; charset=latin1' } as Record<string, string>,
      { 'content-type': 'application/json', 'content-encoding': 'br2' },
      { 'content-type': 'text/plain' },
      { 'content-type': 'application/x-www-form-urlencoded' },
    ]) {
      const res = await post(api, body, headers);
      expect(`${JSON.stringify(headers)} → ${res.status}`).toBe(`${JSON.stringify(headers)} → 415`);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    const noType = await raw(api.url, {
      method: 'POST',
      path: '/api/events/dlq/reprocessar',
      headers: [['authorization', `Bearer ${token}`]],
      body,
    });
    expect(noType.status).toBe(415);
  });

  it('oversized headers and an undecodable path answer problem bodies with their 4xx', async () => {
    const big = await raw(api.url, {
      path: '/api/events',
      headers: [['authorization', `Bearer ${'a'.repeat(80_000)}`]],
    });
    expect(big.status).toBe(431);
    expect(big.headers['content-type']).toBe('application/problem+json');
    expect(JSON.parse(big.body)).toMatchObject({ status: 431 });
    expect(big.headers['cache-control']).toBe('no-store');

    const bad = await raw(api.url, { path: '/api/events/%E0%A4%A', headers: [['authorization', `Bearer ${token}`]] });
    expect(bad.status).toBe(400);
    expect(JSON.parse(bad.body) as unknown).toMatchObject({
      status: 400,
      type: expect.stringContaining('caminho-invalido') as unknown,
    });

    const garbage = await new Promise<string>((resolve) => {
      const { port } = new URL(api.url);
      const s = net.connect(Number(port), '127.0.0.1', () => s.write('GARBAGE\r\n\r\n'));
      let out = '';
      s.on('data', (d: Buffer) => (out += d.toString()));
      s.on('close', () => resolve(out));
    });
    expect(garbage).toMatch(/^HTTP\/1\.1 400/);
    expect(garbage).toContain('application/problem+json');
  });

  it('every response says Cache-Control: no-store and X-Content-Type-Options: nosniff', async () => {
    for (const r of [
      await api.call('/api/events'),
      await api.call('/api/events', { token: null }),
      await api.call('/api/nada'),
      await api.call('/api/events?limite=0'),
      await fetch(`${api.url}/health`),
      await fetch(`${api.url}/ready`),
      await fetch(`${api.url}/metrics`),
    ]) {
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  it('/health, /ready and /metrics are rate limited per address', async () => {
    const limited = await startTestAuditApi(bus, db, { AUDIT_OPS_RATE_LIMIT_PER_MINUTE: 3 });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await fetch(`${limited.url}/health`)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const metricsRes = await fetch(`${limited.url}/metrics`);
    expect(metricsRes.status).toBe(429);
    expect(metricsRes.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('/ready asks PostgreSQL at most once a second, however often it is called', async () => {
    let queries = 0;
    const counting = new Proxy(db.pool, {
      get(target, prop, receiver) {
        if (prop === 'query')
          return (...args: Parameters<pg.Pool['query']>) => {
            queries++;
            return (target.query as (...a: unknown[]) => unknown).apply(target, args);
          };
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    const app = createAuditApp({
      bus,
      pool: counting,
      config: defaultTestAuditConfig,
      logger: jsonLogger('audit-api', 'error', () => undefined),
      metrics: new AuditMetrics(),
    });
    const server = await new Promise<http.Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ready`;
      const t0 = Date.now();
      const statuses = await Promise.all(Array.from({ length: 30 }, () => fetch(url).then((r) => r.status)));
      expect(statuses.every((s) => s === 200)).toBe(true);
      expect(queries).toBeLessThanOrEqual(Math.ceil((Date.now() - t0) / 1000) + 1);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('a reprocessing request for a colony without entries adds no metric series', async () => {
    const name = `Fantasma-${randomUUID().slice(0, 4).replace(/\d/g, 'x')}`;
    const res = await post(api, JSON.stringify({ colonia: name }), { 'content-type': 'application/json' });
    expect(res.status).toBe(200);
    expect(await (await fetch(`${api.url}/metrics`)).text()).not.toContain(name);
  });

  /**
   * Hostile requests over every route, from valid and invalid tokens: no 5xx while PostgreSQL
   * is up, every 4xx an RFC 7807 body, and no response or log line repeats a planted
   * secret-looking or personal-looking value.
   */
  it('property: hostile paths, queries, headers and bodies never get a 5xx or an echo of what they carried', async () => {
    const valid = await operatorToken();
    const personal = fc.constantFrom(
      '529.982.247-25',
      '52998224725',
      'maria.silva@prefeitura.gov.br',
      'joão@cidade.br',
      '+55 11 98765-4321',
      'sk_live_PLANTED0secret',
      'Rua das Flores, 123',
    );
    const hostileText = fc.oneof(
      personal,
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.constantFrom(
        '2026-01-01T00:00:00+23:00',
        '2026-02-30T10:00:00Z',
        '0000-01-01T00:00:00Z',
        '9223372036854775808',
        "' OR 1=1 --",
        '__proto__',
        '\u0000',
        '\ud800',
        '%',
        '%E0%A4%A',
        '../../etc/passwd',
        'a'.repeat(3000),
      ),
    );
    const enc = (s: string): string => {
      try {
        return encodeURIComponent(s);
      } catch {
        return '%ED%A0%80'; // a lone surrogate, as raw bytes would carry it
      }
    };
    const segment = fc.oneof(hostileText.map(enc), fc.constantFrom('%E0%A4%A', '%', '%00', '..', randomUUID()));
    // weights keep the known routes common enough that every run reaches them (not only the guard)
    const pathArb = fc.oneof(
      {
        weight: 8,
        arbitrary: fc.constantFrom(
          '/api/events',
          '/api/events/dlq/estatisticas',
          '/api/events/dlq/pendentes',
          '/api/events/dlq/reprocessamentos',
          '/api/events/dlq/reprocessar',
          '/api/events/dlq/estacionar',
          '/api/events/dlq/reabrir',
          '/api/events/dlq/entradas',
          '/api/events/dlq/resumo',
          '/api/events/replay',
          '/api/events/campos-pesquisaveis',
          '/api/events/dlq/motivos',
          '/console/',
          '/console/app.js',
          '/health',
          '/ready',
          '/metrics',
        ),
      },
      segment.map((s) => `/api/events/${s}`),
      segment.map((s) => `/api/events/trace/${s}`),
      segment.map((s) => `/api/events/dlq/entradas/${s}`),
      segment.map((s) => `/api/events/trace/${s}/dlq`),
      segment.map((s) => `/console/${s}`),
      segment.map((s) => `/api/events/dlq/reprocessamentos/${s}`),
      segment.map((s) => `/${s}`),
    );
    const params = fc.constantFrom(
      'tipo',
      'origem',
      'correlacao_id',
      'timestamp_inicio',
      'timestamp_fim',
      'sequence_inicio',
      'sequence_fim',
      'limite',
      'deslocamento',
      'colonia',
      'manipulador',
      'fingerprint',
      'falhou_desde',
      'falhou_ate',
      'status',
      'acao',
      'event_id',
      'apos_sequence',
      'tipos',
      'payload_campo',
      'payload_valor',
      'x',
    );
    const query = fc.oneof(
      { weight: 1, arbitrary: fc.constant('') },
      {
        weight: 1,
        arbitrary: fc
          .array(fc.tuple(fc.oneof(params, hostileText.map(enc)), hostileText.map(enc)), { maxLength: 4 })
          .map((pairs) => (pairs.length ? `?${pairs.map(([k, v]) => `${k}=${v}`).join('&')}` : '')),
      },
    );
    const auth = fc.oneof(
      { weight: 3, arbitrary: fc.constant<Array<[string, string]>>([['authorization', `Bearer ${valid}`]]) },
      fc.constant<Array<[string, string]>>([]),
      fc.constant<Array<[string, string]>>([
        ['authorization', `Bearer ${valid}`],
        ['authorization', `Bearer ${valid}`],
      ]),
      personal.map((p): Array<[string, string]> => [
        ['authorization', `Bearer ${Buffer.from(p).toString('base64url')}`],
      ]),
      fc
        .string({ maxLength: 60 })
        .map((s): Array<[string, string]> => [['authorization', `Bearer ${s.replace(/[^\x21-\x7e]/g, '')}`]]),
    );
    const extraHeaders = fc.array(
      fc.tuple(
        fc.constantFrom('content-type', 'content-encoding', 'x-forwarded-for', 'accept', 'x-request-id'),
        fc.oneof(
          personal,
          fc.constantFrom(
            'application/json',
            'application/json; charset=latin1',
            'application/json; charset=utf-8',
            'text/plain',
            'gzip',
            'br2',
            '10.0.0.1, 529.982.247-25',
          ),
        ),
      ),
      { maxLength: 3 },
    );
    const body = fc.oneof(
      fc.constant(undefined),
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'null'),
      personal.map((p) => JSON.stringify({ colonia: p })),
      fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
      // reprocessing v2 bodies: right shape, hostile values (a reason or a handler carrying personal data…)
      fc
        .record(
          {
            colonia: fc.oneof(fc.constant('D-5'), hostileText),
            manipulador: hostileText,
            event_ids: fc.array(fc.oneof(fc.constant(randomUUID()), hostileText), { maxLength: 3 }),
            fingerprint: hostileText,
            falhou_desde: hostileText,
            motivo: fc.oneof(fc.constant('outro'), hostileText),
            referencia: hostileText,
            max: fc.oneof(fc.integer(), fc.double(), hostileText),
            taxa: fc.oneof(fc.double(), hostileText),
            dry_run: fc.oneof(fc.boolean(), hostileText),
          },
          { requiredKeys: ['colonia'] },
        )
        .map((v) => JSON.stringify(v)),
    );
    const method = fc.constantFrom('GET', 'GET', 'POST', 'PUT', 'DELETE');
    const planted = [
      '529.982.247-25',
      '52998224725',
      'maria.silva@prefeitura.gov.br',
      'joão@cidade.br',
      '98765-4321',
      'PLANTED0secret',
      'Rua das Flores',
    ];

    const seen: string[] = [];
    await fc.assert(
      fc.asyncProperty(method, pathArb, query, auth, extraHeaders, body, async (m, p, q, a, h, b) => {
        const before = api.logs.length;
        const headers = [...a, ...h.map(([k, v]): [string, string] => [k, v.replace(/[^\x20-\x7e]/g, '')])];
        const res = await raw(api.url, {
          method: m,
          path: `${p}${q}`,
          headers,
          ...(b === undefined ? {} : { body: b }),
        });
        seen.push(`${m} ${res.status}`);
        expect(`${m} ${p}${q} → ${res.status}`).not.toMatch(/→ 5\d\d$/);
        // every answer that is not a success is a problem body with its own status
        const problem = res.status >= 400 ? (JSON.parse(res.body) as { status?: unknown; type?: unknown }) : undefined;
        expect(res.status < 400 || String(res.headers['content-type']).startsWith('application/problem+json')).toBe(
          true,
        );
        expect(
          problem === undefined || (problem.status === res.status && /^https:\/\//.test(String(problem.type))),
        ).toBe(true);
        const logged = api.logs.slice(before).join('\n');
        for (const value of planted) {
          expect(res.body).not.toContain(value);
          expect(logged).not.toContain(value);
        }
      }),
      {
        numRuns: 400,
        // always among the runs, so the final check below never depends on the draw
        examples: [
          ['GET', '/api/events', '', [['authorization', `Bearer ${valid}`]], [], undefined],
          ['GET', '/api/events/dlq/resumo', '', [['authorization', `Bearer ${valid}`]], [], undefined],
          ['GET', '/api/events', '?limite=0', [['authorization', `Bearer ${valid}`]], [], undefined],
        ],
      },
    );
    // nothing planted reached a table: the trail's `parametros`, a `motivo`, anything
    await api.requests.stopAll();
    for (const value of planted)
      for (const table of ['core.dlq_reprocessamento', 'core.dead_letter_queue', 'core.event_log']) {
        const { rows } = await db.pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM ${table} t WHERE strpos(lower(t::text), lower($1)) > 0`,
          [value],
        );
        expect(`${table} ${value} ${rows[0]?.n}`).toBe(`${table} ${value} 0`);
      }
    // the run really reached the routes, not only the guard
    expect(seen.some((s) => s.endsWith(' 200'))).toBe(true);
    expect(seen.some((s) => s.endsWith(' 400'))).toBe(true);
  }, 180_000);
});
