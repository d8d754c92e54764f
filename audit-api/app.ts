import { randomUUID } from 'node:crypto';
import path from 'node:path';
import express, { type NextFunction, type Request, type Response } from 'express';
import type pg from 'pg';
import {
  type EventBus,
  MOTIVOS_ESTACIONAMENTO,
  ThrottledError,
  type Logger,
  type MotivoEstacionamento,
  type SelecaoDLQ,
} from '../sdk';
import { AddressSet, clientAddress } from './client-address';
import { tokenOptions, type AuditConfig } from './config';
import type { AuditMetrics } from './metrics';
import { OperatorAuth, type Operator } from './operator-auth';
import { Denied, HttpProblem, problemHandler, sendProblem } from './problem';
import { RateLimiter } from './rate-limiter';
import { listarLacunas } from './retention-gaps';
import {
  coloniaQuery,
  consultarEventosQuery,
  emptyQuery,
  entradasQuery,
  estacionarBody,
  reabrirBody,
  replayQuery,
  reprocessamentoBody,
  reprocessarBody,
  trailQuery,
  uuidParam,
  validator,
} from './request-validation';
import { RunningRequests } from './running-requests';
import { streamReplay } from './replay';

export type AuditAppConfig = Pick<
  AuditConfig,
  | 'AUDIT_JWT_SECRET'
  | 'AUDIT_JWT_ISSUER'
  | 'AUDIT_JWT_AUDIENCE'
  | 'AUDIT_OPERATOR_ROLES'
  | 'AUDIT_ALLOWED_CIDRS'
  | 'AUDIT_TRUSTED_PROXY'
  | 'AUDIT_JWT_MAX_AGE_SECONDS'
  | 'AUDIT_RATE_LIMIT_PER_MINUTE'
  | 'AUDIT_OPS_RATE_LIMIT_PER_MINUTE'
  | 'AUDIT_REPROCESS_INTERVAL_SECONDS'
  | 'AUDIT_REPROCESS_MAX_ROUNDS'
  | 'AUDIT_PAYLOAD_SEARCH_KEYS'
>;

export interface AuditAppDeps {
  bus: EventBus;
  /** Pinged by `/ready`. */
  pool: pg.Pool;
  config: AuditAppConfig;
  logger: Logger;
  metrics: AuditMetrics;
  /** Paced reprocessing requests running in this process (stopped at shutdown). Default: a new set. */
  requests?: RunningRequests;
}

type Query = Record<string, string | undefined>;
const int = (v: string | undefined): number | undefined => (v === undefined ? undefined : Number(v));

/**
 * The audit API (docs/audit-api.md). `/health`, `/ready`, `/metrics` need no token (probes and
 * scrapers) but are rate limited per address; every `/api/events` route goes through, in
 * order: client address allowlist (403), per-address rate limit (429), operator token
 * (401/403), request validation (400/415). Every response says `Cache-Control: no-store` and
 * `X-Content-Type-Options: nosniff`.
 */
export function createAuditApp(d: AuditAppDeps): express.Express {
  const { bus, config: c, logger, metrics } = d;
  const allowed = new AddressSet(c.AUDIT_ALLOWED_CIDRS);
  const proxies = new AddressSet(c.AUDIT_TRUSTED_PROXY);
  const limiter = new RateLimiter(c.AUDIT_RATE_LIMIT_PER_MINUTE);
  const opsLimiter = new RateLimiter(c.AUDIT_OPS_RATE_LIMIT_PER_MINUTE);
  const auth = new OperatorAuth({
    ...tokenOptions(c),
    roles: c.AUDIT_OPERATOR_ROLES,
    maxAgeSeconds: c.AUDIT_JWT_MAX_AGE_SECONDS,
  });
  const readiness = cachedFor(1000, () =>
    d.pool.query('SELECT 1').then(
      () => true,
      () => false,
    ),
  );

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('json replacer', (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  app.set('query parser', 'simple');

  // Access log and metrics: method, route pattern, status, duration, client, subject — never headers.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const t0 = process.hrtime.bigint();
    res.locals.requestId = randomUUID();
    res.setHeader('X-Request-Id', res.locals.requestId as string);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.on('finish', () => {
      const route = routeOf(req);
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      metrics.requests.inc({ method: req.method, route, status: String(res.statusCode) });
      metrics.duration.observe({ method: req.method, route }, seconds);
      const denied = res.locals.denied as Denied | undefined;
      if (denied) metrics.denied.inc({ reason: denied.reason });
      if ((route === '/metrics' || route === '/health' || route === '/ready') && !denied) return;
      logger.info('http', {
        request_id: res.locals.requestId as string,
        method: req.method,
        route,
        status: res.statusCode,
        duration_ms: Math.round(seconds * 1000),
        client: res.locals.client as string | undefined,
        sub: (res.locals.operator as Operator | undefined)?.sub ?? denied?.subject,
        ...(denied ? { reason: denied.reason } : {}),
        correlacao_id: res.locals.correlacaoId as string | undefined,
        colonia: res.locals.colonia as string | undefined,
      });
    });
    next();
  });

  // Open to probes and scrapers (no token), rate limited per address like everything else.
  const opsRate = (req: Request, res: Response, next: NextFunction): void => {
    const client = clientAddress(req, proxies);
    res.locals.client = client;
    const rate = opsLimiter.take(client);
    if (!rate.ok) throw rateLimited(rate.retryAfterMs);
    next();
  };
  app.get('/health', opsRate, (_req, res) => void res.json({ status: 'ok' }));
  app.get('/ready', opsRate, async (_req, res) => {
    const ok = await readiness(); // cached for a second: probes cannot load PostgreSQL
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not-ready' });
  });
  app.get('/metrics', opsRate, async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  // The console (docs/console.md): static files, no data. Address allowlist and rate limit as
  // for the API; the token is entered in the page and sent by it on every API call. The CSP
  // keeps every request on this origin and forbids inline code.
  app.use(
    '/console',
    (req, res, next) => {
      const client = clientAddress(req, proxies);
      res.locals.client = client;
      if (!allowed.has(client))
        throw new Denied(403, 'endereco-nao-permitido', 'Forbidden', 'this client address is not allowed', 'address');
      const rate = limiter.take(client);
      if (!rate.ok) throw rateLimited(rate.retryAfterMs);
      res.setHeader('Content-Security-Policy', CONSOLE_CSP);
      res.setHeader('X-Frame-Options', 'DENY');
      res.setHeader('Referrer-Policy', 'no-referrer');
      next();
    },
    express.static(CONSOLE_DIR, { index: 'index.html', dotfiles: 'deny', etag: false, lastModified: false }),
  );

  // The seed's PapelOperadorGuard: address, rate, token.
  const guard = express.Router();
  guard.use(async (req, res, next) => {
    const client = clientAddress(req, proxies);
    res.locals.client = client;
    if (!allowed.has(client))
      throw new Denied(403, 'endereco-nao-permitido', 'Forbidden', 'this client address is not allowed', 'address');
    const rate = limiter.take(client);
    res.setHeader('RateLimit-Limit', String(c.AUDIT_RATE_LIMIT_PER_MINUTE));
    res.setHeader('RateLimit-Remaining', String(rate.remaining));
    if (!rate.ok) throw rateLimited(rate.retryAfterMs);
    res.locals.operator = await auth.verify(req.headersDistinct.authorization);
    next();
  });

  const eventsQuery = validator<Query>(consultarEventosQuery, 'query');
  // a selection of 1000 event_ids is ~40 KB of JSON
  const jsonBody = express.json({ limit: '64kb', strict: true, type: () => true });
  const trail = validator<Query>(trailQuery, 'query');
  const entradas = validator<Query>(entradasQuery, 'query');
  const replay = validator<{ apos_sequence: string; tipos?: string }>(replayQuery, 'query');
  const idParam = validator<{ id: string }>(uuidParam('id'), 'path');
  const reprocessamento = validator<Body>(reprocessamentoBody, 'body');
  const estacionar = validator<Body & { motivo: MotivoEstacionamento; referencia?: string }>(estacionarBody, 'body');
  const reabrir = validator<Body>(reabrirBody, 'body');
  const requests = d.requests ?? new RunningRequests(logger);
  const reprocessOptions = (operator: Operator) => ({
    solicitante: operator.sub,
    intervaloMinimoMs: c.AUDIT_REPROCESS_INTERVAL_SECONDS * 1000,
    maxReprocessamentos: c.AUDIT_REPROCESS_MAX_ROUNDS,
  });
  const coloniaQ = validator<{ colonia: string }>(coloniaQuery, 'query');
  const none = validator<Query>(emptyQuery, 'query');
  const eventIdParam = validator<{ eventId: string }>(uuidParam('eventId'), 'path');
  const correlacaoParam = validator<{ correlacaoId: string }>(uuidParam('correlacaoId'), 'path');
  const reprocessar = validator<{ colonia: string }>(reprocessarBody, 'body');

  guard.get('/api/events', async (req, res) => {
    const q = eventsQuery(req.query);
    res.locals.correlacaoId = q.correlacao_id;
    if (q.payload_campo !== undefined && !c.AUDIT_PAYLOAD_SEARCH_KEYS.includes(q.payload_campo))
      throw new Denied(
        400,
        'requisicao-invalida',
        'Invalid request',
        `query.payload_campo: must be one of ${c.AUDIT_PAYLOAD_SEARCH_KEYS.join(', ')} (AUDIT_PAYLOAD_SEARCH_KEYS)`,
        'invalid-request',
      );
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
    res.locals.correlacaoId = correlacaoId;
    res.json(await bus.consultarEventos({ correlacao_id: correlacaoId, limite: 500 }));
  });

  // What a search may filter the payload by (the console builds its payload search from it).
  guard.get('/api/events/campos-pesquisaveis', (req, res) => {
    none(req.query);
    res.json({ payload: c.AUDIT_PAYLOAD_SEARCH_KEYS });
  });

  // Records retention deleted before the bridge read them: in neither Kafka nor the log (docs/reliability.md).
  guard.get('/api/events/lacunas', async (req, res) => {
    none(req.query);
    res.json({ lacunas: await listarLacunas(d.pool) });
  });

  // The parking reason codes (the console's select; the SDK's list is the only one).
  guard.get('/api/events/dlq/motivos', (req, res) => {
    none(req.query);
    res.json({ motivos: MOTIVOS_ESTACIONAMENTO });
  });

  guard.get('/api/events/trace/:correlacaoId/dlq', async (req, res) => {
    none(req.query);
    const { correlacaoId } = correlacaoParam(req.params);
    res.locals.correlacaoId = correlacaoId;
    res.json({ correlacao_id: correlacaoId, entradas: await bus.obterEntradasDLQDoFluxo(correlacaoId) });
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
    const q = trail(req.query);
    res.json(
      await bus.listarReprocessamentosDLQ({
        ...(q.colonia ? { colonia: q.colonia } : {}),
        ...(q.acao ? { acao: q.acao as 'reprocessar' } : {}),
        ...(q.event_id ? { event_id: q.event_id } : {}),
        limite: int(q.limite),
        deslocamento: int(q.deslocamento),
      }),
    );
  });

  guard.get('/api/events/dlq/reprocessamentos/:id', async (req, res) => {
    none(req.query);
    const { id } = idParam(req.params);
    const row = await bus.obterReprocessamentoDLQ(id);
    if (!row) throw new HttpProblem(404, 'pedido-nao-encontrado', 'Not found', 'no action with this id');
    res.json(row);
  });

  guard.get('/api/events/dlq/resumo', async (req, res) => {
    none(req.query);
    res.json(await bus.obterResumoDLQ());
  });

  guard.get('/api/events/dlq/entradas', async (req, res) => {
    const q = entradas(req.query);
    res.locals.colonia = q.colonia;
    const { limite, deslocamento, status, ...selecao } = q;
    res.json(
      await bus.listarEntradasDLQ({
        ...(selecao as unknown as SelecaoDLQ),
        ...(status ? { status: status as 'pendente' } : {}),
        limite: int(limite),
        deslocamento: int(deslocamento),
      }),
    );
  });

  guard.get('/api/events/dlq/entradas/:eventId', async (req, res) => {
    none(req.query);
    const { eventId } = eventIdParam(req.params);
    const [entradasDoEvento, evento, acoes] = await Promise.all([
      bus.obterEntradasDLQ(eventId),
      bus.obterEventoPorId(eventId),
      bus.listarReprocessamentosDLQ({ event_id: eventId, limite: 100 }),
    ]);
    if (entradasDoEvento.length === 0)
      throw new HttpProblem(404, 'entrada-nao-encontrada', 'Not found', 'no DLQ entry for this event');
    res.json({ event_id: eventId, evento, entradas: entradasDoEvento, acoes: acoes.linhas });
  });

  // Reprocessing v2 (docs/reprocessing.md): a dry run answers 200 with the plan; a request is
  // claimed and audited before 202 answers, then sent paced in the background.
  guard.post('/api/events/dlq/reprocessamentos', requireJson, jsonBody, async (req, res) => {
    none(req.query);
    const { max, taxa, dry_run, ...selecao } = reprocessamento(req.body);
    res.locals.colonia = selecao.colonia;
    const operator = res.locals.operator as Operator;
    const opcoes = {
      ...reprocessOptions(operator),
      ...(max !== undefined ? { maxEventos: max } : {}),
      ...(taxa !== undefined ? { taxa } : {}),
    };
    if (dry_run) {
      res.json(await bus.simularReprocessamentoDLQ(selecao, opcoes));
      return;
    }
    const started = await throttled(operator, () =>
      requests.start((sinal) => bus.iniciarReprocessamentoDLQ(selecao, { ...opcoes, sinal })),
    );
    const { concluido: _done, ...claim } = started;
    res
      .status(202)
      .location(`/api/events/dlq/reprocessamentos/${started.pedido_id}`)
      .json({
        ...claim,
        resultado: 'em_andamento',
        acompanhar: `/api/events/dlq/reprocessamentos/${started.pedido_id}`,
      });
  });

  guard.post('/api/events/dlq/estacionar', requireJson, jsonBody, async (req, res) => {
    none(req.query);
    const { max, dry_run, motivo, referencia, ...selecao } = estacionar(req.body);
    res.locals.colonia = selecao.colonia;
    const operator = res.locals.operator as Operator;
    res.json(
      await bus.estacionarDLQ(
        selecao,
        { motivo, ...(referencia ? { referencia } : {}) },
        {
          solicitante: operator.sub,
          ...(max !== undefined ? { maxEventos: max } : {}),
          simular: dry_run === true,
        },
      ),
    );
  });

  guard.post('/api/events/dlq/reabrir', requireJson, jsonBody, async (req, res) => {
    none(req.query);
    const { max, dry_run, ...selecao } = reabrir(req.body);
    res.locals.colonia = selecao.colonia;
    const operator = res.locals.operator as Operator;
    res.json(
      await bus.reabrirDLQ(selecao, {
        solicitante: operator.sub,
        ...(max !== undefined ? { maxEventos: max } : {}),
        simular: dry_run === true,
      }),
    );
  });

  // The log as NDJSON, from a sequence up to the last one at the start (the CLI's `replay`).
  guard.get('/api/events/replay', async (req, res) => {
    const q = replay(req.query);
    await streamReplay(bus, res, BigInt(q.apos_sequence), q.tipos?.split(','), logger);
  });

  guard.post('/api/events/dlq/reprocessar', requireJson, jsonBody, async (req, res) => {
    none(req.query);
    const { colonia } = reprocessar(req.body);
    res.locals.colonia = colonia;
    const operator = res.locals.operator as Operator;
    res.json(await throttled(operator, () => bus.reprocessarPendentesDLQ(colonia, reprocessOptions(operator))));
  });

  guard.get('/api/events/:eventId', async (req, res) => {
    none(req.query);
    const { eventId } = eventIdParam(req.params);
    const [evento, posicao_kafka] = await Promise.all([bus.obterEventoPorId(eventId), bus.obterPosicaoKafka(eventId)]);
    if (!evento) throw new HttpProblem(404, 'evento-nao-encontrado', 'Not found', 'Evento não encontrado');
    res.json({ ...evento, posicao_kafka });
  });

  app.use(guard);
  app.use((req, res) =>
    sendProblem(req, res, new HttpProblem(404, 'rota-nao-encontrada', 'Not found', 'no such route')),
  );
  app.use(problemHandler(logger));
  return app;
}

/** The console's files (audit-api/console): plain ES modules, no build step (ADR 0011). */
const CONSOLE_DIR = path.join(__dirname, 'console');
const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

type Body = SelecaoDLQ & { max?: number; taxa?: number; dry_run?: boolean };

/** A reprocessing call; the colony's throttle becomes a 429 with Retry-After. */
async function throttled<T>(operator: Operator, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof ThrottledError)) throw err;
    throw new Denied(429, 'reprocessamento-limitado', 'Too many requests', err.message, 'throttle', operator.sub, {
      'Retry-After': String(Math.ceil(err.retryAfterMs / 1000)),
    });
  }
}

const rateLimited = (retryAfterMs: number): Denied =>
  new Denied(
    429,
    'limite-de-requisicoes',
    'Too many requests',
    'rate limit for this address exceeded',
    'rate',
    undefined,
    {
      'Retry-After': String(Math.ceil(retryAfterMs / 1000)),
    },
  );

/** A JSON body, and only that: another media type (or charset) is a 415, not a parse error. */
function requireJson(req: Request, _res: Response, next: NextFunction): void {
  const type = req.headers['content-type'];
  if (type === undefined || !/^application\/json\s*(;|$)/i.test(type))
    throw new Denied(
      415,
      'tipo-nao-suportado',
      'Unsupported media type',
      'the body must be application/json (UTF-8)',
      'unsupported-media-type',
    );
  next();
}

/** `fn`'s last result for `ms` milliseconds; concurrent callers share one call. */
function cachedFor<T>(ms: number, fn: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = Date.now();
    if (!last || now - last.at >= ms) last = { at: now, value: fn() };
    return last.value;
  };
}

/** The route pattern (never the raw path: ids would explode the metric's cardinality). */
function routeOf(req: Request): string {
  const route = req.route as { path?: string } | undefined;
  return route?.path ?? 'unmatched';
}
