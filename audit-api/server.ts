import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { Duplex } from 'node:stream';
import type express from 'express';
import type { Logger } from '../sdk';
import type { AuditMetrics } from './metrics';
import { PROBLEM_BASE } from './problem';

/**
 * The HTTP server of the audit API. Requests Node's parser refuses before express sees them
 * (headers over `maxHeaderSize`, a malformed request line) get an RFC 7807 body with the same
 * headers as every other response, are counted by reason, and logged — instead of Node's bare
 * 431/400 or a reset.
 */
export function createAuditServer(app: express.Express, logger: Logger, metrics: AuditMetrics): http.Server {
  const server = http.createServer(app);
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    // a response already on its way (the error came from bytes after the request): no second one
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? 431 : 400;
    const reason = tooLarge ? 'header-too-large' : 'invalid-request';
    const requestId = randomUUID();
    const body = JSON.stringify({
      type: `${PROBLEM_BASE}${tooLarge ? 'cabecalhos-grandes-demais' : 'requisicao-invalida'}`,
      title: tooLarge ? 'Request header fields too large' : 'Bad request',
      status,
      detail: tooLarge ? 'the request headers are too large' : 'the request could not be parsed as HTTP',
      instance: `urn:uuid:${requestId}`,
      request_id: requestId,
    });
    metrics.denied.inc({ reason });
    logger.info('http', { request_id: requestId, status, reason, error_code: err.code });
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\n` +
        'Content-Type: application/problem+json\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n' +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}

/** `createAuditServer` listening on `port` (0: any free port) and `host`. */
export function listenAuditServer(
  app: express.Express,
  logger: Logger,
  metrics: AuditMetrics,
  port: number,
  host: string,
): Promise<http.Server> {
  const server = createAuditServer(app, logger, metrics);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
