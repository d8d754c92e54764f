import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import type pg from 'pg';
import type { EventBus } from '../sdk/event-bus';
import { ThrottledError } from '../sdk/dlq-reprocessing';
import type { Logger } from '../sdk/logger';
import { AddressSet, clientAddress } from './client-address';
import { tokenOptions, type AuditConfig } from './config';
import type { AuditMetrics } from './metrics';
import { OperatorAuth, type Operator } from './operator-auth';
import { HttpProblem, problemHandler, sendProblem } from './problem';
import { RateLimiter } from './rate-limiter';
import {
  coloniaQuery,
  consultarEventosQuery,
  emptyQuery,
  pageQuery,
  reprocessarBody,
  uuidParam,
  validator,
} from './request-validation';

export type AuditAppConfig = Pick<
  AuditConfig,
  | 'AUDIT_JWT_SECRET'
  | 'AUDIT_JWT_ISSUER'
  | 'AUDIT_JWT_AUDIENCE'
  | 'AUDIT_OPERATOR_ROLES'
  | 'AUDIT_ALLOWED_CIDRS'
  | 'AUDIT_TRUSTED_PROXY'
  | 'AUDIT_RATE_LIMIT_PER_MINUTE'
  | 'AUDIT_REPROCESS_INTERVAL_SECONDS'
>;

export interface AuditAppDeps {
  bus: EventBus;
  /** Pinged by `/ready`. */
  pool: pg.Pool;
  config: AuditAppConfig;
  logger: Logger;
  metrics: AuditMetrics;
}

type Query = Record<string, string | undefined>;
const int = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));

/**
 * The audit API (docs/audit-api.md). `/health`, `/ready`, `/metrics` are open; every
 * `/api/events` route goes through, in order: client address allowlist (403), per-address
 * rate limit (429), operator token (401/403), request validation (400).
 */
export function createAuditApp(d: AuditAppDeps): express.Express {
  const { bus, config: c, logger, metrics } = d;
  const allowed = new AddressSet(c.AUDIT_ALLOWED_CIDRS);
  const proxies = new AddressSet(c.AUDIT_TRUSTED_PROXY);
  const limiter = new RateLimiter(c.AUDIT_RATE_LIMIT_PER_MINUTE);
  const auth = new OperatorAuth({ ...tokenOptions(c), roles: c.AUDIT_OPERATOR_ROLES });

  const app = express();
  app.disable('x-powered-by');
  app.set('json replacer', (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  app.set('query parser', 'simple');

  // Access log and metrics: method, route pattern, status, duration, client, subject — never headers.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const t0 = process.hrtime.bigint();
    res.locals.requestId = randomUUID();
    res.setHeader('X-Request-Id', res.locals.requestId as string);
    res.on('finish', () => {
      const route = routeOf(req);
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      metrics.requests.inc({ method: req.method, route, status: String(res.statusCode) });
      metrics.duration.observe({ method: req.method, route }, seconds);
      if (route === '/metrics' || route === '/health' || route === '/ready') return;
      logger.info('http', {
        request_id: res.locals.requestId as string,
        method: req.method,
        route,
        path: req.path,
        status: res.statusCode,
        duration_ms: Math.round(seconds * 1000),
        client: res.locals.client as string | undefined,
        sub: (res.locals.operator as Operator | undefined)?.sub,
        correlacao_id: typeof req.query.correlacao_id === 'string' ? req.query.correlacao_id : req.params.correlacaoId,
        colonia: res.locals.colonia as string | undefined,
      });
    });
    next();
  });

  app.get('/health', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/ready', async (_req, res) => {
    const ok = await d.pool.query('SELECT 1').then(
      () => true,
      () => false,
    );
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not-ready' });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  // The seed's PapelOperadorGuard: address, rate, token.
  const guard = express.Router();
  guard.use(async (req, res, next) => {
    const client = clientAddress(req, proxies);
    res.locals.client = client;
    if (!allowed.has(client)) {
      metrics.denied.inc({ reason: 'address' });
      throw new HttpProblem(403, 'endereco-nao-permitido', 'Forbidden', 'this client address is not allowed');
    }
    const rate = limiter.take(client);
    res.setHeader('RateLimit-Limit', String(c.AUDIT_RATE_LIMIT_PER_MINUTE));
    res.setHeader('RateLimit-Remaining', String(rate.remaining));
    if (!rate.ok) {
      metrics.denied.inc({ reason: 'rate' });
      throw new HttpProblem(
        429,
        'limite-de-requisicoes',
        'Too many requests',
        'rate limit for this address exceeded',
        {},
        {
          'Retry-After': String(Math.ceil(rate.retryAfterMs / 1000)),
        },
      );
    }
    try {
      res.locals.operator = await auth.verify(req.headers.authorization);
    } catch (err) {
      metrics.denied.inc({ reason: err instanceof HttpProblem && err.status === 403 ? 'role' : 'token' });
      throw err;
    }
    next();
  });

  const eventsQuery = validator<Query>(consultarEventosQuery, 'query');
  const page = validator<Query>(pageQuery, 'query');
  const coloniaQ = validator<{ colonia: string }>(coloniaQuery, 'query');
  const none = validator<Query>(emptyQuery, 'query');
  const eventIdParam = validator<{ eventId: string }>(uuidParam('eventId'), 'path');
  const correlacaoParam = validator<{ correlacaoId: string }>(uuidParam('correlacaoId'), 'path');
  const reprocessar = validator<{ colonia: string }>(reprocessarBody, 'body');

  guard.get('/api/events', async (req, res) => {
    const q = eventsQuery(req.query);
    res.json(
      await bus.consultarEventos({
        ...q,
        limite: int(q.limite),
        deslocamento: int(q.deslocamento),
      }),
    );
  });

  guard.get('/api/events/trace/:correlacaoId', async (req, res) => {
    none(req.query);
    const { correlacaoId } = correlacaoParam(req.params);
    res.json(await bus.consultarEventos({ correlacao_id: correlacaoId, limite: 500 }));
  });

  guard.get('/api/events/dlq/estatisticas', async (req, res) => {
    none(req.query);
    res.json(await bus.obterEstatisticasDLQ());
  });

  guard.get('/api/events/dlq/pendentes', async (req, res) => {
    const { colonia } = coloniaQ(req.query);
    res.locals.colonia = colonia;
    res.json({ colonia, pendentes: await bus.obterPendentesDLQ(colonia) });
  });

  guard.get('/api/events/dlq/reprocessamentos', async (req, res) => {
    const q = page(req.query);
    res.json(
      await bus.listarReprocessamentosDLQ({
        ...(q.colonia ? { colonia: q.colonia } : {}),
        limite: int(q.limite),
        deslocamento: int(q.deslocamento),
      }),
    );
  });

  guard.post('/api/events/dlq/reprocessar', express.json({ limit: '4kb', strict: true }), async (req, res) => {
    none(req.query);
    const { colonia } = reprocessar(req.body);
    res.locals.colonia = colonia;
    const operator = res.locals.operator as Operator;
    try {
      const result = await bus.reprocessarPendentesDLQ(colonia, {
        solicitante: operator.sub,
        intervaloMinimoMs: c.AUDIT_REPROCESS_INTERVAL_SECONDS * 1000,
      });
      res.json(result);
    } catch (err) {
      if (!(err instanceof ThrottledError)) throw err;
      metrics.denied.inc({ reason: 'throttle' });
      throw new HttpProblem(
        429,
        'reprocessamento-limitado',
        'Too many requests',
        err.message,
        { colonia },
        {
          'Retry-After': String(Math.ceil(err.retryAfterMs / 1000)),
        },
      );
    }
  });

  guard.get('/api/events/:eventId', async (req, res) => {
    none(req.query);
    const { eventId } = eventIdParam(req.params);
    const evento = await bus.obterEventoPorId(eventId);
    if (!evento) throw new HttpProblem(404, 'evento-nao-encontrado', 'Not found', 'Evento não encontrado');
    res.json(evento);
  });

  app.use(guard);
  app.use((req, res) =>
    sendProblem(
      req,
      res,
      new HttpProblem(404, 'rota-nao-encontrada', 'Not found', `no route ${req.method} ${req.path}`),
    ),
  );
  app.use(problemHandler(logger));
  return app;
}

/** The route pattern (never the raw path: ids would explode the metric's cardinality). */
function routeOf(req: Request): string {
  const route = req.route as { path?: string } | undefined;
  return route?.path ?? 'unmatched';
}
