import http from 'node:http';
import type { Registry } from 'prom-client';

/** What a process says about its readiness: a yes/no, or that with the detail of why. */
export type Readiness = boolean | { ready: boolean }; // an object may carry its detail, sent as it is

/**
 * `/health` (process alive), `/ready` (dependencies reachable and work progressing; 503 with
 * the detail when not), `/metrics` (Prometheus).
 */
export function startOpsServer(
  port: number,
  registry: Registry,
  ready: () => Readiness | Promise<Readiness>,
): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    void (async () => {
      if (req.url === '/health') return send(res, 200, { status: 'ok' });
      if (req.url === '/ready') {
        const r = await Promise.resolve(ready()).catch((): Readiness => false);
        const { ready: ok, ...detail } = typeof r === 'boolean' ? { ready: r } : r;
        return send(res, ok ? 200 : 503, { status: ok ? 'ready' : 'not-ready', ...detail });
      }
      if (req.url === '/metrics') {
        res.writeHead(200, { 'content-type': registry.contentType });
        return res.end(await registry.metrics());
      }
      return send(res, 404, { status: 'not-found' });
    })();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => resolve(server));
  });
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
