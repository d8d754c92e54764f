import http from 'node:http';
import type { Registry } from 'prom-client';

/** `/health` (process alive), `/ready` (dependencies reachable), `/metrics` (Prometheus). */
export function startOpsServer(
  port: number,
  registry: Registry,
  ready: () => boolean | Promise<boolean>,
): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    void (async () => {
      if (req.url === '/health') return send(res, 200, { status: 'ok' });
      if (req.url === '/ready') {
        const ok = await Promise.resolve(ready()).catch(() => false);
        return send(res, ok ? 200 : 503, { status: ok ? 'ready' : 'not-ready' });
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
