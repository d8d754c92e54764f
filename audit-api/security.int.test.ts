import { createTestDatabase, type TestDatabase } from '../test/harness';
import { operatorToken, rawRequest, startTestAuditApi, type TestAuditApi } from '../test/harness/audit';
import { createTestBus } from '../test/harness/bus';
import type { EventBus } from '../sdk';

const b64 = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('audit API: the operator guard (seed PapelOperadorGuard)', () => {
  let db: TestDatabase;
  let bus: EventBus;
  let api: TestAuditApi;

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = await createTestBus({ pool: db.pool });
    api = await startTestAuditApi(bus, db);
  });

  it('accepts an operator token, and an admin one through the `roles` claim', async () => {
    expect((await api.call('/api/events')).status).toBe(200);
    const admin = await operatorToken({ papel: undefined, roles: ['leitor', 'admin'] });
    expect((await api.call('/api/events', { token: admin })).status).toBe(200);
  });

  /** The access-log line of a response (by its X-Request-Id). */
  const logLine = (res: Response, logs: string[] = api.logs): Record<string, unknown> | undefined =>
    logs
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.request_id === res.headers.get('x-request-id') && l.msg === 'http');

  describe('refuses every bad token with 401 (WWW-Authenticate) or, for a valid token without the right, 403; the body is generic, the reason is logged and counted', () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, () => Promise<string | null> | string | null, number, string]> = [
      ['no Authorization header', () => null, 401, 'token-missing'],
      ['a Basic scheme', () => 'x', 401, 'token-malformed'],
      ['garbage', () => 'not.a.jwt!', 401, 'token-malformed'],
      [
        'alg none',
        () =>
          `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'op', papel: 'admin', iss: 'feromonios', aud: 'feromonios-audit', exp: now + 600, iat: now })}.`,
        401,
        'token-algorithm',
      ],
      [
        'another secret',
        () => operatorToken({}, { secret: 'another-secret-another-secret-another-secret' }),
        401,
        'token-signature',
      ],
      ['HS512 with the right secret', () => operatorToken({}, { alg: 'HS512' }), 401, 'token-algorithm'],
      ['expired', () => operatorToken({}, { expiresIn: now - 60 }), 401, 'token-expired'],
      ['wrong issuer', () => operatorToken({ iss: 'someone-else' }), 401, 'token-claims'],
      ['wrong audience', () => operatorToken({ aud: 'another-api' }), 401, 'token-claims'],
      ['no subject', () => operatorToken({ sub: undefined }), 401, 'token-claims'],
      ['no iat', () => operatorToken({ iat: undefined }), 401, 'token-age'],
      ['iat 13 hours ago', () => operatorToken({ iat: now - 13 * 3600 }, { expiresIn: now + 600 }), 401, 'token-age'],
      ['iat in the future', () => operatorToken({ iat: now + 3600 }, { expiresIn: now + 7200 }), 401, 'token-age'],
      ['exp 100 years ahead', () => operatorToken({}, { expiresIn: '100y' }), 401, 'token-age'],
      ['no role', () => operatorToken({ papel: undefined }), 403, 'role'],
      ['a non-operator role', () => operatorToken({ papel: 'cidadao', roles: ['leitor'] }), 403, 'role'],
      ['an e-mail as subject', () => operatorToken({ sub: 'maria@prefeitura.gov.br' }), 403, 'subject'],
      ['a CPF as subject', () => operatorToken({ sub: '123.456.789-09' }), 403, 'subject'],
      ['a CPF after an underscore', () => operatorToken({ sub: 'cpf_123.456.789-09' }), 403, 'subject'],
      ['a CPF glued to letters', () => operatorToken({ sub: 'cpf12345678909' }), 403, 'subject'],
      ['a CPF before a letter', () => operatorToken({ sub: '12345678909x' }), 403, 'subject'],
      ['a formatted CPF inside an id', () => operatorToken({ sub: 'op:123.456.789-09x' }), 403, 'subject'],
      ['a number as subject', () => operatorToken({ sub: 123 as never }), 403, 'subject'],
      ['a boolean as subject', () => operatorToken({ sub: true as never }), 403, 'subject'],
      ['an array as subject', () => operatorToken({ sub: ['op-arr'] as never }), 403, 'subject'],
    ];
    const bodies = new Map<number, Set<string>>();
    it.each(cases)('%s', async (_name, make, status, reason) => {
      const token = await make();
      const res =
        token === 'x'
          ? await api.call('/api/events', { token: null, headers: { authorization: 'Basic b3A6cGFzcw==' } })
          : await api.call('/api/events', { token });
      expect(res.status).toBe(status);
      // a challenge on 401 only: a 403 token was understood, it just lacks the right
      expect(res.headers.get('www-authenticate')).toBe(status === 401 ? 'Bearer realm="feromonios-audit"' : null);
      const body = (await res.json()) as { detail: string; reason?: string };
      expect(body.reason).toBeUndefined();
      bodies.set(status, (bodies.get(status) ?? new Set()).add(body.detail));
      expect(logLine(res)).toMatchObject({ status, reason });
      const metrics = await (await fetch(`${api.url}/metrics`)).text();
      expect(metrics).toMatch(new RegExp(`feromonios_audit_denied_total\\{reason="${reason}"\\} [1-9]`));
      // never a subject that is not an operator id in the log, verified or not
      expect(api.logs.join('\n')).not.toMatch(/cpf|12345678909|prefeitura|op-arr/);
    });
    it('says the same thing for every 401, and the same for every 403', () => {
      expect(bodies.get(401)?.size).toBe(1);
      expect(bodies.get(403)?.size).toBe(1);
      expect([...(bodies.get(403) ?? [])][0]).not.toMatch(/operador|admin/); // the accepted roles stay unsaid
    });
  });

  it('logs the subject of a refused token when it is a readable operator id', async () => {
    const res = await api.call('/api/events', { token: await operatorToken({ sub: 'operador-7', papel: 'leitor' }) });
    expect(res.status).toBe(403);
    expect(logLine(res)).toMatchObject({ reason: 'role', sub: 'operador-7' });
  });

  it('refuses a duplicated Authorization header instead of reading the first', async () => {
    const token = await operatorToken();
    const res = await rawRequest(api.url, {
      path: '/api/events',
      headers: [
        ['authorization', `Bearer ${token}`],
        ['authorization', `Bearer ${token}`],
      ],
    });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body) as unknown).toMatchObject({
      status: 401,
      type: expect.stringContaining('nao-autenticado') as unknown,
    });
  });

  it('refuses a client address outside the allowlist, before looking at the token', async () => {
    const closed = await startTestAuditApi(bus, db, { AUDIT_ALLOWED_CIDRS: ['10.0.0.0/8'] });
    const res = await closed.call('/api/events');
    expect(res.status).toBe(403);
    expect(((await res.json()) as { detail: string }).detail).toContain('address is not allowed');
    expect(logLine(res, closed.logs)).toMatchObject({ reason: 'address' });
    // a spoofed X-Forwarded-For is ignored when the peer is not a trusted proxy
    expect((await closed.call('/api/events', { headers: { 'x-forwarded-for': '10.1.2.3' } })).status).toBe(403);
  });

  it('believes X-Forwarded-For from a trusted proxy only, up to the first untrusted hop', async () => {
    const proxied = await startTestAuditApi(bus, db, {
      AUDIT_ALLOWED_CIDRS: ['203.0.113.0/24'],
      AUDIT_TRUSTED_PROXY: ['127.0.0.1/32', '10.0.0.0/8'],
    });
    const via = (xff: string) => proxied.call('/api/events', { headers: { 'x-forwarded-for': xff } });
    expect((await via('203.0.113.7')).status).toBe(200);
    expect((await via('203.0.113.7, 10.0.0.5')).status).toBe(200); // two trusted hops
    expect((await via('203.0.113.7, 198.51.100.9')).status).toBe(403); // the client is the untrusted hop
    expect((await via('not-an-address')).status).toBe(403);
    expect((await proxied.call('/api/events')).status).toBe(403); // the proxy itself is not a client
  });

  it('limits each client address (429 with Retry-After), also before authentication', async () => {
    const limited = await startTestAuditApi(bus, db, { AUDIT_RATE_LIMIT_PER_MINUTE: 3 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await limited.call('/api/events', { token: null })).status);
    expect(statuses).toEqual([401, 401, 401]);
    const res = await limited.call('/api/events');
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
  });

  it('leaves /health and /metrics open, and never logs the token', async () => {
    expect((await fetch(`${api.url}/health`)).status).toBe(200);
    expect((await fetch(`${api.url}/metrics`)).status).toBe(200);
    const token = await operatorToken();
    await api.call('/api/events', { token });
    expect(api.logs.join('\n')).not.toContain(token.split('.')[2]);
  });
});
