import type { NextFunction, Request, Response } from 'express';
import { FeromoniosError } from '../sdk/errors';
import type { Logger } from '../sdk/logger';

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
        instance: req.path,
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
 * The last middleware: problems as they are, client-caused SDK errors as 4xx, and everything
 * else as a 500 that reveals nothing (the log line with the same `request_id` has the cause).
 */
export function problemHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, next: NextFunction): void => {
    if (res.headersSent) return next(err);
    if (err instanceof HttpProblem) return sendProblem(req, res, err);
    if (err instanceof FeromoniosError) {
      const p = fromSdk(err);
      if (p) return sendProblem(req, res, p);
    }
    const body = err as { type?: string; status?: number };
    if (body.type === 'entity.parse.failed' || body.type === 'entity.too.large' || body.status === 400) {
      return sendProblem(
        req,
        res,
        new HttpProblem(
          body.status ?? 400,
          'corpo-invalido',
          'Invalid body',
          'the request body is not valid JSON (or too large)',
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
