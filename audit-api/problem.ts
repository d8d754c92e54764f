import type { NextFunction, Request, Response } from 'express';
import { FeromoniosError, isRetriable, type Logger } from '../sdk';

/** Base of the `type` URI of every problem this API answers with (RFC 7807). */
export const PROBLEM_BASE = 'https://feromonios.dev/problemas/';

/** An HTTP failure rendered as `application/problem+json`. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly slug: string,
    readonly title: string,
    readonly detail: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

/**
 * Why a request was refused before reaching a route: a closed list, used as the `reason` label
 * of `feromonios_audit_denied_total` and in the access log — never in the response body,
 * which stays generic so a caller learns nothing about which check failed.
 */
export const DENIAL_REASONS = [
  'address',
  'rate',
  'token-missing',
  'token-duplicated',
  'token-malformed',
  'token-algorithm',
  'token-signature',
  'token-expired',
  'token-age',
  'token-claims',
  'subject',
  'role',
  'throttle',
  'invalid-request',
  'invalid-body',
  'unsupported-media-type',
  'invalid-path',
  'header-too-large',
] as const;
export type DenialReason = (typeof DENIAL_REASONS)[number];

/** A refused request: the problem the caller sees, plus the reason and subject the log keeps. */
export class Denied extends HttpProblem {
  constructor(
    status: number,
    slug: string,
    title: string,
    detail: string,
    readonly reason: DenialReason,
    /** The token's subject when it could be read and is a valid operator id (unverified for 401s). */
    readonly subject?: string,
    headers: Record<string, string> = {},
    extra: Record<string, unknown> = {},
  ) {
    super(status, slug, title, detail, extra, headers);
  }
}

export function sendProblem(req: Request, res: Response, p: HttpProblem): void {
  for (const [k, v] of Object.entries(p.headers)) res.setHeader(k, v);
  res
    .status(p.status)
    .type('application/problem+json')
    .send(
      JSON.stringify({
        type: `${PROBLEM_BASE}${p.slug}`,
        title: p.title,
        status: p.status,
        detail: p.detail,
        // the occurrence, not the path: a path is caller input and may carry anything
        instance: `urn:uuid:${res.locals.requestId as string}`,
        request_id: res.locals.requestId as string | undefined,
        ...p.extra,
      }),
    );
}

/** SDK errors that a client caused map to 4xx; anything else is an opaque 500. */
function fromSdk(err: FeromoniosError): HttpProblem | undefined {
  switch (err.code) {
    case 'BAD_REQUEST':
      return new HttpProblem(400, 'requisicao-invalida', 'Invalid request', err.message);
    case 'NOT_FOUND':
      return new HttpProblem(404, 'nao-encontrado', 'Not found', err.message);
    default:
      return undefined;
  }
}

/**
 * Errors express and body-parser raise for a malformed request, each kept at its 4xx: an
 * undecodable path (400), a body that is not JSON (400), too large (413), in a charset or
 * content encoding it cannot read (415), aborted or of the wrong length (400).
 */
function clientProblem(err: unknown): Denied | undefined {
  const e = err as { type?: unknown; status?: unknown; statusCode?: unknown };
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined;
  const make = (st: number, slug: string, title: string, detail: string, reason: DenialReason) =>
    new Denied(st, slug, title, detail, reason);
  if (err instanceof URIError)
    return make(
      400,
      'caminho-invalido',
      'Invalid path',
      'the request path is not valid percent-encoding',
      'invalid-path',
    );
  switch (e.type) {
    case 'entity.parse.failed':
      return make(400, 'corpo-invalido', 'Invalid body', 'the request body is not valid JSON', 'invalid-body');
    case 'entity.too.large':
      return make(413, 'corpo-grande-demais', 'Body too large', 'the request body is too large', 'invalid-body');
    case 'charset.unsupported':
    case 'encoding.unsupported':
      return make(
        415,
        'tipo-nao-suportado',
        'Unsupported media type',
        'the body must be application/json in UTF-8, without a content encoding other than gzip or deflate',
        'unsupported-media-type',
      );
  }
  if (status !== undefined && status >= 400 && status < 500)
    return make(status, 'requisicao-invalida', 'Invalid request', 'the request could not be read', 'invalid-request');
  return undefined;
}

/**
 * PostgreSQL errors that are the service's state, not the request's fault, as a 503 with
 * Retry-After: the pool exhausted (no connection free within AUDIT_DB_ACQUIRE_TIMEOUT_MS — a
 * burst, or slow queries holding every connection), a statement cancelled at
 * AUDIT_DB_STATEMENT_TIMEOUT_MS (SQLSTATE 57014), the database unreachable or restarting.
 */
export function databaseUnavailable(
  err: unknown,
): { cause: 'pool' | 'statement-timeout' | 'down'; detail: string; retryAfter: string } | undefined {
  if (err instanceof FeromoniosError) return undefined;
  const e = err as { code?: unknown; message?: unknown } | null;
  if (typeof e?.message === 'string' && /timeout exceeded when trying to connect/i.test(e.message))
    return { cause: 'pool', detail: 'no database connection became free in time; try again', retryAfter: '1' };
  if (e?.code === '57014')
    return {
      cause: 'statement-timeout',
      detail: 'the query took longer than the database statement timeout; narrow the filter or try again later',
      retryAfter: '5',
    };
  if (isRetriable(err)) return { cause: 'down', detail: 'the database is unavailable; try again', retryAfter: '5' };
  return undefined;
}

/**
 * The last middleware: problems as they are, client-caused SDK errors as 4xx, and everything
 * else as a 500 that reveals nothing (the log line with the same `request_id` has the cause).
 */
export function problemHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (res.headersSent) return next(err);
    if (err instanceof HttpProblem) {
      if (err instanceof Denied) res.locals.denied = err; // counted and logged with its reason
      return sendProblem(req, res, err);
    }
    if (err instanceof FeromoniosError) {
      const p = fromSdk(err);
      if (p) return sendProblem(req, res, p);
    }
    const client = clientProblem(err);
    if (client) {
      res.locals.denied = client;
      return sendProblem(req, res, client);
    }
    const db = databaseUnavailable(err);
    if (db) {
      logger.warn('database unavailable', {
        request_id: res.locals.requestId as string | undefined,
        cause: db.cause,
        error: (err as Error).message,
      });
      return sendProblem(
        req,
        res,
        new HttpProblem(
          503,
          'indisponivel',
          'Service unavailable',
          db.detail,
          { causa: db.cause },
          { 'Retry-After': db.retryAfter },
        ),
      );
    }
    logger.error('unhandled error', {
      request_id: res.locals.requestId as string | undefined,
      error: (err as Error).message,
      stack: (err as Error).stack,
      code: err instanceof FeromoniosError ? err.code : undefined,
    });
    const retriable = err instanceof FeromoniosError && err.retriable;
    sendProblem(
      req,
      res,
      retriable
        ? new HttpProblem(
            503,
            'indisponivel',
            'Service unavailable',
            'a dependency is unavailable; try again',
            {},
            { 'Retry-After': '5' },
          )
        : new HttpProblem(
            500,
            'erro-interno',
            'Internal error',
            'the request failed; quote request_id when reporting it',
          ),
    );
  };
}
