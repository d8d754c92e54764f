import pg from 'pg';
import { connectionEnv, env, readEnv, type EnvValues } from '../sdk/service';

const CIDR = /^[0-9a-fA-F:.]+\/\d{1,3}$/;

/** Every variable the audit API reads, validated once at start (`loadAuditConfig`). */
export const auditEnv = {
  ...connectionEnv,
  AUDIT_API_PORT: env.int({ min: 1, max: 65535, default: 8080, doc: 'HTTP port of the audit API.' }),
  AUDIT_JWT_SECRET: env.secret({ minLength: 32, doc: 'HS256 key that verifies operator tokens.' }),
  AUDIT_JWT_ISSUER: env.string({ default: 'feromonios', doc: 'Required `iss` of operator tokens.' }),
  AUDIT_JWT_AUDIENCE: env.string({ default: 'feromonios-audit', doc: 'Required `aud` of operator tokens.' }),
  AUDIT_OPERATOR_ROLES: env.list({
    default: ['operador', 'admin'],
    form: 'a comma-separated list of role names',
    item: /^[\w.-]+$/,
    doc: 'Roles (claim `papel` or `roles`) allowed on the operator routes.',
  }),
  AUDIT_ALLOWED_CIDRS: env.list({
    default: ['127.0.0.1/32', '::1/128'],
    form: 'a comma-separated list of CIDRs',
    item: CIDR,
    doc: 'Client addresses allowed on the operator routes.',
  }),
  AUDIT_TRUSTED_PROXY: env.list({
    default: [],
    form: 'a comma-separated list of CIDRs',
    item: CIDR,
    doc: 'Proxies whose X-Forwarded-For is believed (empty: none).',
  }),
  AUDIT_JWT_MAX_AGE_SECONDS: env.int({
    min: 60,
    default: 43200,
    doc: 'Oldest operator token accepted (`iat` at most this far back) and longest token lifetime (`exp` - `iat`), in seconds.',
  }),
  AUDIT_RATE_LIMIT_PER_MINUTE: env.int({ min: 1, default: 600, doc: 'Requests per minute per client address.' }),
  AUDIT_OPS_RATE_LIMIT_PER_MINUTE: env.int({
    min: 1,
    default: 1200,
    doc: 'Requests per minute per client address on /health, /ready and /metrics.',
  }),
  AUDIT_REPROCESS_INTERVAL_SECONDS: env.int({
    min: 0,
    default: 60,
    doc: 'Minimum time between two accepted reprocessing requests for one colony, in seconds.',
  }),
  AUDIT_PAYLOAD_SEARCH_KEYS: env.list({
    default: ['demanda_id'],
    form: 'a comma-separated list of payload keys',
    item: /^[a-z_][a-z0-9_]{0,63}$/,
    doc: 'Top-level payload keys GET /api/events may search by (payload_campo): non-personal keys the redaction policy keeps.',
  }),
  AUDIT_REPROCESS_MAX_ROUNDS: env.int({
    min: 1,
    max: 1000,
    default: 5,
    doc: 'Loop guard: a DLQ entry sent back this many times without success becomes failed_permanent at its next selection.',
  }),
  AUDIT_DB_POOL_SIZE: env.int({
    min: 1,
    max: 100,
    default: 8,
    doc: "Connections of the audit API's PostgreSQL pool (the bridge has its own).",
  }),
  AUDIT_DB_ACQUIRE_TIMEOUT_MS: env.int({
    min: 50,
    max: 60_000,
    default: 2_000,
    unit: 'milliseconds',
    doc: 'Longest a request waits for a free database connection; then it is answered 503 with Retry-After instead of hanging.',
  }),
  AUDIT_DB_STATEMENT_TIMEOUT_MS: env.int({
    min: 100,
    max: 3_600_000,
    default: 15_000,
    unit: 'milliseconds',
    doc: "PostgreSQL statement_timeout of the audit API's connections: a slow query is cancelled (503) instead of holding a connection.",
  }),
};

export type AuditConfig = EnvValues<typeof auditEnv>;

export const loadAuditConfig = (source: Record<string, string | undefined> = process.env): AuditConfig =>
  readEnv(auditEnv, source);

/** The options `OperatorAuth` and `signOperatorToken` take, from a loaded configuration. */
export const tokenOptions = (c: Pick<AuditConfig, 'AUDIT_JWT_SECRET' | 'AUDIT_JWT_ISSUER' | 'AUDIT_JWT_AUDIENCE'>) => ({
  secret: c.AUDIT_JWT_SECRET,
  issuer: c.AUDIT_JWT_ISSUER,
  audience: c.AUDIT_JWT_AUDIENCE,
});

/**
 * The audit API's PostgreSQL pool: bounded, with a bounded wait for a connection and a
 * statement timeout, so a slow query or a burst exhausts it into 503s with Retry-After
 * (audit-api/problem.ts), never into requests that hang. The bridge's pool is separate.
 */
export function auditDatabasePool(
  c: Pick<
    AuditConfig,
    'DATABASE_URL' | 'AUDIT_DB_POOL_SIZE' | 'AUDIT_DB_ACQUIRE_TIMEOUT_MS' | 'AUDIT_DB_STATEMENT_TIMEOUT_MS'
  >,
): pg.Pool {
  return new pg.Pool({
    connectionString: c.DATABASE_URL,
    max: c.AUDIT_DB_POOL_SIZE,
    connectionTimeoutMillis: c.AUDIT_DB_ACQUIRE_TIMEOUT_MS,
    statement_timeout: c.AUDIT_DB_STATEMENT_TIMEOUT_MS,
    // a connection the network dropped silently is noticed too: PostgreSQL cannot cancel what it
    // no longer hears, so the client gives up a little after the statement timeout
    query_timeout: c.AUDIT_DB_STATEMENT_TIMEOUT_MS + 5_000,
    keepAlive: true,
  });
}
