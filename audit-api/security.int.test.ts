import { createTestDatabase, type TestDatabase } from '../test/harness';
import { operatorToken, startTestAuditApi, type TestAuditApi } from '../test/harness/audit';
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

  describe('refuses every bad token with 401 (WWW-Authenticate) or, for a valid token without the right, 403', () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, () => Promise<string | null> | string | null, number, string]> = [
      ['no Authorization header', () => null, 401, 'Authorization: Bearer'],
      ['a Basic scheme', () => 'x', 401, 'Authorization: Bearer'],
      ['garbage', () => 'not.a.jwt!', 401, 'Bearer'],
      [
        'alg none',
        () =>
          `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'op', papel: 'admin', iss: 'feromonios', aud: 'feromonios-audit', exp: now + 600 })}.`,
        401,
        'algorithm is not accepted',
      ],
      [
        'another secret',
        () => operatorToken({}, { secret: 'another-secret-another-secret-another-secret' }),
        401,
        'signature is invalid',
      ],
      ['HS512 with the right secret', () => operatorToken({}, { alg: 'HS512' }), 401, 'algorithm is not accepted'],
      ['expired', () => operatorToken({}, { expiresIn: now - 60 }), 401, 'expired'],
      ['wrong issuer', () => operatorToken({ iss: 'someone-else' }), 401, '`iss`'],
      ['wrong audience', () => operatorToken({ aud: 'another-api' }), 401, '`aud`'],
      ['no subject', () => operatorToken({ sub: undefined }), 401, '`sub`'],
      ['no role', () => operatorToken({ papel: undefined }), 403, 'operator role is required'],
      [
        'a non-operator role',
        () => operatorToken({ papel: 'cidadao', roles: ['leitor'] }),
        403,
        'operator role is required',
      ],
      ['an e-mail as subject', () => operatorToken({ sub: 'maria@prefeitura.gov.br' }), 403, 'opaque operator id'],
      ['a CPF as subject', () => operatorToken({ sub: '123.456.789-09' }), 403, 'opaque operator id'],
    ];
    it.each(cases)('%s', async (_name, make, status, detail) => {
      const token = await make();
      const res =
        token === 'x'
          ? await api.call('/api/events', { token: null, headers: { authorization: 'Basic b3A6cGFzcw==' } })
          : await api.call('/api/events', { token });
      expect(res.status).toBe(status);
      // a challenge on 401 only: a 403 token was understood, it just lacks the right
      expect(res.headers.get('www-authenticate')).toBe(status === 401 ? 'Bearer realm="feromonios-audit"' : null);
      const body = (await res.json()) as { detail: string };
      expect(body.detail).toContain(detail);
    });
  });

  it('refuses a client address outside the allowlist, before looking at the token', async () => {
    const closed = await startTestAuditApi(bus, db, { AUDIT_ALLOWED_CIDRS: ['10.0.0.0/8'] });
    const res = await closed.call('/api/events');
    expect(res.status).toBe(403);
    expect(((await res.json()) as { detail: string }).detail).toContain('address is not allowed');
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
