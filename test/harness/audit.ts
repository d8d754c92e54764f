import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JWTPayload } from 'jose';
import { createAuditApp, type AuditAppConfig } from '../../audit-api/app';
import { loadAuditConfig, tokenOptions } from '../../audit-api/config';
import { AuditMetrics } from '../../audit-api/metrics';
import { signOperatorToken } from '../../audit-api/operator-auth';
import { RunningRequests } from '../../audit-api/running-requests';
import { listenAuditServer } from '../../audit-api/server';
import { type EventBus, jsonLogger } from '../../sdk';
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
  /** Paced reprocessing requests still running in this API. */
  requests: RunningRequests;
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
  const logger = jsonLogger('audit-api', 'info', (l) => logs.push(l));
  const metrics = new AuditMetrics();
  const requests = new RunningRequests(logger);
  const app = createAuditApp({
    bus,
    pool: db.pool,
    config: { ...defaultTestAuditConfig, ...config },
    logger,
    metrics,
    requests,
  });
  const server = await listenAuditServer(app, logger, metrics, 0, '127.0.0.1');
  registerCleanup(async () => {
    await requests.stopAll();
    await new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const token = await operatorToken();
  return {
    url,
    logs,
    requests,
    call: (path, init = {}) => {
      const { token: t, ...rest } = init;
      const headers = new Headers(rest.headers);
      const bearer = t === undefined ? token : t;
      if (bearer !== null) headers.set('authorization', `Bearer ${bearer}`);
      return fetch(url + path, { ...rest, headers });
    },
  };
}

/** A raw HTTP exchange (fetch normalises what an attacker would not: paths, repeated headers). */
export function rawRequest(
  url: string,
  o: { method?: string; path: string; headers?: Array<[string, string]>; body?: Buffer | string },
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        hostname,
        port,
        method: o.method ?? 'GET',
        path: o.path,
        // a name given twice is sent as two header lines (Node writes an array that way)
        headers: (o.headers ?? []).reduce<Record<string, string | string[]>>((h, [k, v]) => {
          const prev = h[k];
          h[k] = prev === undefined ? v : [...(Array.isArray(prev) ? prev : [prev]), v];
          return h;
        }, {}),
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(o.body);
  });
}
