import type { EventoConsultado } from './contract';

/**
 * Every failure the SDK, the bridge and the audit API raise is a `FeromoniosError` with a
 * `code` from the closed list below and a `retriable` decision. Retry loops ask the error
 * (`isRetriable(err)`), never its message.
 */
export const ERROR_CODES = [
  'CONFIG_INVALID',
  'PAYLOAD_NOT_OBJECT',
  'INVALID_EVENT_ID',
  'INVALID_CORRELACAO_ID',
  'INVALID_CAUSATION_ID',
  'INVALID_TENANT_ID',
  'INVALID_TIMESTAMP',
  'INVALID_FIELD',
  'UNKNOWN_TYPE',
  'DEPRECATED_TYPE',
  'ORIGEM_NOT_ALLOWED',
  'UNKNOWN_VERSION',
  'SCHEMA_VALIDATION',
  'PAYLOAD_TOO_LARGE',
  'CATALOG_INVALID',
  'REGISTRY_UNAVAILABLE',
  'REGISTRY_REJECTED',
  'SCHEMA_INCOMPATIBLE',
  'BROKER_UNAVAILABLE',
  'BROKER_REJECTED',
  'BROKER_AUTHENTICATION',
  'BROKER_AUTHORIZATION',
  'WIRE_FORMAT',
  'DATABASE_UNAVAILABLE',
  'HANDLER_FAILED',
  'HANDLER_TIMEOUT',
  'CONFIRMATION_TIMEOUT',
  'BUS_CLOSED',
  'NOT_FOUND',
  'BAD_REQUEST',
  'RATE_LIMITED',
  'INTERRUPTED',
  'ARCHIVE_UNAVAILABLE',
  'ARCHIVE_CORRUPT',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export class FeromoniosError extends Error {
  override name = 'FeromoniosError';
  readonly code: ErrorCode;
  readonly retriable: boolean;

  constructor(code: ErrorCode, message: string, options: { retriable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.retriable = options.retriable ?? false;
  }
}

/** A bad option or environment variable; `problems` names each one. */
export class ConfigError extends FeromoniosError {
  override name = 'ConfigError';
  constructor(
    message: string,
    readonly problems: string[],
  ) {
    super('CONFIG_INVALID', message);
  }
}

/** The step of the publish validation pipeline (seed 3.3) that rejected an event. */
export type PublishStep =
  | 'payload'
  | 'event_id'
  | 'correlacao_id'
  | 'causation_id'
  | 'tenant_id'
  | 'timestamp'
  | 'field'
  | 'registry'
  | 'origem'
  | 'schema'
  | 'size';

/** An event that failed one of the publish checks; nothing of it reached Kafka. */
export class PublishValidationError extends FeromoniosError {
  override name = 'PublishValidationError';
  constructor(
    code: ErrorCode,
    readonly step: PublishStep,
    message: string,
    /** Which event of a `publicarLote` call failed (0-based), when it was a batch. */
    readonly index?: number,
  ) {
    super(code, message);
  }
}

/** Ajv rejected the payload: carries the schema's registry id (when known) and Ajv's errors. */
export class SchemaValidationError extends PublishValidationError {
  override name = 'SchemaValidationError';
  constructor(
    message: string,
    readonly tipo: string,
    readonly versao: string,
    readonly schemaId: number | undefined,
    readonly phase: 'publish' | 'sink',
    readonly errors: ReadonlyArray<{ instancePath: string; keyword: string; message?: string }>,
  ) {
    super('SCHEMA_VALIDATION', 'schema', message);
  }
}

/** A schema file in `schemas/` is malformed, lacks its policy, or breaks compatibility. */
export class CatalogError extends FeromoniosError {
  override name = 'CatalogError';
  constructor(
    message: string,
    readonly file: string,
  ) {
    super('CATALOG_INVALID', `${file}: ${message}`);
  }
}

export class RegistryError extends FeromoniosError {
  override name = 'RegistryError';
  constructor(
    code: 'REGISTRY_UNAVAILABLE' | 'REGISTRY_REJECTED' | 'SCHEMA_INCOMPATIBLE',
    message: string,
    readonly status?: number,
    cause?: unknown,
  ) {
    super(code, message, { retriable: code === 'REGISTRY_UNAVAILABLE', cause });
  }
}

export class BrokerError extends FeromoniosError {
  override name = 'BrokerError';
  constructor(message: string, cause?: unknown) {
    super('BROKER_UNAVAILABLE', message, { retriable: true, cause });
  }
}

/** The broker refused a record for good (too large for its topic, invalid): retrying cannot help. */
export class BrokerRejectedError extends FeromoniosError {
  override name = 'BrokerRejectedError';
  constructor(message: string, cause?: unknown) {
    super('BROKER_REJECTED', message, { retriable: false, cause });
  }
}

/**
 * The brokers refused who we are or what we asked (docs/security.md): `BROKER_AUTHENTICATION`
 * for a SASL failure or a TLS handshake that cannot succeed (an untrusted or expired
 * certificate, a name mismatch), `BROKER_AUTHORIZATION` for an ACL that denies the topic, the
 * group or the cluster action. Not retriable: waiting does not fix a credential. `causa` says
 * which; the message names the broker's or TLS's reason, never a secret.
 */
export class BrokerSecurityError extends FeromoniosError {
  override name = 'BrokerSecurityError';
  constructor(
    code: 'BROKER_AUTHENTICATION' | 'BROKER_AUTHORIZATION',
    readonly causa: CausaSeguranca,
    message: string,
    cause?: unknown,
  ) {
    super(code, message, { retriable: false, cause });
  }
}

/**
 * Why the brokers refused: `sasl` (credentials), `tls-untrusted` / `tls-expired` /
 * `tls-hostname` (the broker's certificate, as this client judged it), `tls-client-certificate`
 * (the broker refused ours), `tls-handshake` (any other TLS failure), `topic` / `group` /
 * `cluster` (an ACL denied that resource).
 */
export type CausaSeguranca =
  | 'sasl'
  | 'tls-untrusted'
  | 'tls-expired'
  | 'tls-hostname'
  | 'tls-client-certificate'
  | 'tls-handshake'
  | 'topic'
  | 'group'
  | 'cluster';

const TLS_UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);
const AUTHORIZATION: Record<string, CausaSeguranca> = {
  TOPIC_AUTHORIZATION_FAILED: 'topic',
  GROUP_AUTHORIZATION_FAILED: 'group',
  CLUSTER_AUTHORIZATION_FAILED: 'cluster',
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 'cluster',
};

/**
 * The security failure `err` is, looking through kafkajs's wrappers (its retrier nests the
 * cause; its aggregate errors list one per topic), or `undefined`. kafkajs marks TLS failures as retriable connection errors; they are not.
 */
export function brokerSecurityFailure(err: unknown, depth = 0): BrokerSecurityError | undefined {
  if (!(err instanceof Error) || depth > 5) return undefined;
  if (err instanceof BrokerSecurityError) return err;
  const e = err as Error & { code?: unknown; type?: unknown; cause?: unknown; originalError?: unknown };
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (e.name === 'KafkaJSSASLAuthenticationError')
    return new BrokerSecurityError(
      'BROKER_AUTHENTICATION',
      'sasl',
      `broker refused the credentials: ${e.message}`,
      err,
    );
  if (code && TLS_UNTRUSTED.has(code))
    return new BrokerSecurityError(
      'BROKER_AUTHENTICATION',
      'tls-untrusted',
      `broker certificate not trusted (${code}): give the CA that signed it (seguranca.tls.ca, KAFKA_TLS_CA_FILE)`,
      err,
    );
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID')
    return new BrokerSecurityError(
      'BROKER_AUTHENTICATION',
      'tls-expired',
      `broker certificate not valid now (${code})`,
      err,
    );
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return new BrokerSecurityError(
      'BROKER_AUTHENTICATION',
      'tls-hostname',
      `broker certificate is for another name: ${e.message}`,
      err,
    );
  if (
    code &&
    /^ERR_SSL_.*ALERT_(CERTIFICATE_(UNKNOWN|EXPIRED|REVOKED|REQUIRED)|BAD_CERTIFICATE|UNKNOWN_CA)$/.test(code)
  )
    return new BrokerSecurityError(
      'BROKER_AUTHENTICATION',
      'tls-client-certificate',
      `the broker refused the client certificate (${code}): expired, revoked, missing or signed by a CA the broker does not trust (seguranca.tls.cert, KAFKA_TLS_CERT_FILE)`,
      err,
    );
  if (code?.startsWith('ERR_SSL_'))
    return new BrokerSecurityError(
      'BROKER_AUTHENTICATION',
      'tls-handshake',
      `TLS handshake with the broker failed (${code})`,
      err,
    );
  const type = typeof e.type === 'string' ? e.type : undefined;
  const authz = type ? AUTHORIZATION[type] : undefined;
  if (type && authz)
    return new BrokerSecurityError('BROKER_AUTHORIZATION', authz, `broker denied it (${type}): ${e.message}`, err);
  // kafkajs's aggregate errors (`createTopics`: "Topic creation errors") list one error per topic
  const errors = (e as { errors?: unknown }).errors;
  for (const inner of Array.isArray(errors) ? errors.slice(0, 20) : []) {
    const found = brokerSecurityFailure(inner, depth + 1);
    if (found) return found;
  }
  return brokerSecurityFailure(e.cause, depth + 1) ?? brokerSecurityFailure(e.originalError, depth + 1);
}

export class WireFormatError extends FeromoniosError {
  override name = 'WireFormatError';
  constructor(
    readonly reason:
      | 'not-wire-format'
      | 'unknown-schema-id'
      | 'invalid-json'
      | 'schema-invalid'
      | 'too-large'
      | 'missing-header'
      | 'invalid-header'
      | 'deprecated-type'
      | 'origem-not-allowed',
    message: string,
  ) {
    super('WIRE_FORMAT', message);
  }
}

/**
 * Confirmed publishing: the broker acknowledged the event but it was not in `core.event_log`
 * within the timeout (the bridge is behind or down). Retriable: publishing the same `evento`
 * again (same event_id) is safe and returns the logged record once it lands.
 */
export class ConfirmationTimeoutError extends FeromoniosError {
  override name = 'ConfirmationTimeoutError';
  constructor(
    readonly evento: EventoConsultado,
    readonly timeoutMs: number,
  ) {
    super(
      'CONFIRMATION_TIMEOUT',
      `event ${evento.event_id} was acknowledged by the broker but not written to core.event_log within ${timeoutMs} ms`,
      { retriable: true },
    );
  }
}

/** Registry HTTP statuses worth retrying: timeouts, throttling, server errors. */
export const isRetriableHttpStatus = (status: number): boolean =>
  status === 408 || status === 425 || status === 429 || status >= 500;

/** PostgreSQL SQLSTATEs worth retrying: serialization, deadlock, admin shutdown, starting up. */
const RETRIABLE_PG = new Set(['40001', '40P01', '57P01', '57P03', '08000', '08003', '08006', '08001', '08004']);
const RETRIABLE_NET = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']);

export function isRetriable(err: unknown): boolean {
  if (err instanceof FeromoniosError) return err.retriable;
  if (brokerSecurityFailure(err)) return false; // a credential or a certificate: waiting does not help
  const e = err as { code?: unknown; retriable?: unknown; message?: unknown } | null;
  if (!e) return false;
  if (typeof e.code === 'string' && (RETRIABLE_PG.has(e.code) || RETRIABLE_NET.has(e.code))) return true;
  // kafkajs wraps the last error in a non-retriable one once its own (short) retries are
  // exhausted: the cause says whether waiting longer can help.
  const cause = (e as { cause?: unknown }).cause;
  const name = (e as { name?: unknown }).name;
  if ((name === 'KafkaJSNonRetriableError' || name === 'KafkaJSNumberOfRetriesExceeded') && cause && cause !== e)
    return isRetriable(cause);
  if (typeof e.retriable === 'boolean') return e.retriable; // kafkajs errors carry this
  // node-postgres reports a dropped socket, a read past query_timeout and a pool that found no
  // free connection in time without a code
  return (
    typeof e.message === 'string' &&
    /Connection terminated|connection timeout|Query read timeout|timeout exceeded when trying to connect/i.test(
      e.message,
    )
  );
}

/** A handler did not settle within `timeoutMs` (then it is retried, and dead-lettered when out of tries). */
export class HandlerTimeoutError extends FeromoniosError {
  override name = 'HandlerTimeoutError';
  constructor(handler: string, ms: number) {
    super('HANDLER_TIMEOUT', `manipulador '${handler}' did not settle within ${ms} ms`);
  }
}

/** A reprocessing request refused by the per-colony throttle; `retryAfterMs` says when to ask again. */
export class ThrottledError extends FeromoniosError {
  override name = 'ThrottledError';
  constructor(
    readonly colonia: string,
    readonly retryAfterMs: number,
  ) {
    super(
      'RATE_LIMITED',
      `colony ${colonia}'s DLQ was reprocessed moments ago; try again in ${Math.ceil(retryAfterMs / 1000)} s`,
    );
  }
}
