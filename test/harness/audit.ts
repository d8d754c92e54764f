import type { AddressInfo } from 'node:net';
import type http from 'node:http';
import type { JWTPayload } from 'jose';
import { createAuditApp, type AuditAppConfig } from '../../audit-api/app';
import { loadAuditConfig, tokenOptions } from '../../audit-api/config';
import { AuditMetrics } from '../../audit-api/metrics';
import { signOperatorToken } from '../../audit-api/operator-auth';
import type { EventBus } from '../../sdk';
import { jsonLogger } from '../../sdk/logger';
import { registerCleanup, type TestDatabase } from './index';

export const TEST_JWT_SECRET = 'test-only-audit-jwt-secret-0123456789abcdef';

export const defaultTestAuditConfig: AuditAppConfig = loadAuditConfig({
  AUDIT_JWT_SECRET: TEST_JWT_SECRET,
  AUDIT_RATE_LIMIT_PER_MINUTE: '10000',
});

export interface TestAuditApi {
  url: string;
  /** Every log line the API wrote. */
  logs: string[];
  /** `fetch` against the API, with an operator token unless `token` is given (`null`: none). */
  call(path: string, init?: RequestInit & { token?: string | null }): Promise<Response>;
}

/** An operator token for the test API (claims overridable; `exp` one hour ahead). */
export function operatorToken(
  claims: JWTPayload = {},
  o: { secret?: string; alg?: string; expiresIn?: string | number } = {},
): Promise<string> {
  return signOperatorToken(
    { ...tokenOptions(defaultTestAuditConfig), secret: o.secret ?? TEST_JWT_SECRET },
    { sub: 'operador-42', papel: 'operador', ...claims },
    o,
  );
}

/** The audit API in process, on an ephemeral port, over the bus and the test database; closed at file end. */
export async function startTestAuditApi(
  bus: EventBus,
  db: TestDatabase,
  config: Partial<AuditAppConfig> = {},
): Promise<TestAuditApi> {
  const logs: string[] = [];
  const app = createAuditApp({
    bus,
    pool: db.pool,
    config: { ...defaultTestAuditConfig, ...config },
    logger: jsonLogger('audit-api', 'info', (l) => logs.push(l)),
    metrics: new AuditMetrics(),
  });
  const server = await new Promise<http.Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  registerCleanup(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const token = await operatorToken();
  return {
    url,
    logs,
    call: (path, init = {}) => {
      const { token: t, ...rest } = init;
      const headers = new Headers(rest.headers);
      const bearer = t === undefined ? token : t;
      if (bearer !== null) headers.set('authorization', `Bearer ${bearer}`);
      return fetch(url + path, { ...rest, headers });
    },
  };
}
