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
