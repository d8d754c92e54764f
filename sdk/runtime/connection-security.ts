import fs from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import type { KafkaConfig, SASLOptions } from 'kafkajs';
import { ConfigError } from '../errors';
import { env, type EnvValues } from '../service/env';

/**
 * TLS and SASL for the brokers and credentials for the registry (docs/security.md). The same
 * options for every process: the SDK (`EventBus`'s `seguranca`), the bridge, the audit API, the
 * outbox relay and the CLI, in code or from the environment (`securityEnv`). Secrets are only
 * handed to kafkajs and `fetch`; nothing here logs them, and no error quotes them.
 */

/** TLS towards the brokers. PEM text (or buffers), not paths; `tlsFromFiles` reads paths. */
export interface TlsCliente {
  /** CA certificates to trust instead of the system's (a private CA, a test CA). */
  ca?: string | Buffer | Array<string | Buffer>;
  /** Client certificate and key, for brokers that require mutual TLS. */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** Passphrase of an encrypted `key`. */
  passphrase?: string;
  /** Server name to verify, when it differs from the broker's host (SNI). */
  servername?: string;
}

/** SASL towards the brokers. OAUTHBEARER asks `token()` at every (re)authentication. */
export type SaslCliente =
  | { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string }
  | { mechanism: 'oauthbearer'; token: () => string | Promise<string> };

export interface SegurancaKafka {
  /** `true`: TLS with the system's CAs; an object: with these. Absent: plaintext. */
  tls?: true | TlsCliente;
  sasl?: SaslCliente;
}

/** Basic auth for the schema registry (a custom CA: `NODE_EXTRA_CA_CERTS`, docs/security.md). */
export interface SegurancaRegistry {
  username: string;
  password: string;
}

const MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'] as const;

/** The kafkajs `ssl`/`sasl` options of a `SegurancaKafka` (none for plaintext). */
export function kafkaSecurity(s: SegurancaKafka | undefined): Pick<KafkaConfig, 'ssl' | 'sasl'> {
  if (!s) return {};
  const out: Pick<KafkaConfig, 'ssl' | 'sasl'> = {};
  if (s.tls) out.ssl = s.tls === true ? true : ({ ...s.tls, rejectUnauthorized: true } satisfies ConnectionOptions);
  if (s.sasl) {
    const sasl = s.sasl;
    if (!(MECHANISMS as readonly string[]).includes(sasl.mechanism))
      throw new ConfigError(`seguranca.sasl.mechanism: expected one of ${MECHANISMS.join(', ')}`, [
        `seguranca.sasl.mechanism: got ${JSON.stringify(sasl.mechanism)}`,
      ]);
    if (sasl.mechanism === 'oauthbearer') {
      const token = sasl.token;
      out.sasl = { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: await token() }) };
    } else {
      if (!sasl.username || !sasl.password)
        throw new ConfigError(`seguranca.sasl: ${sasl.mechanism} needs a username and a password`, [
          'seguranca.sasl: username and password required',
        ]);
      out.sasl = { mechanism: sasl.mechanism, username: sasl.username, password: sasl.password } as SASLOptions;
    }
  }
  return out;
}

/** Environment variables of the connections' security, for every process (`.env.example`). */
export const securityEnv = {
  KAFKA_TLS: env.bool({ default: false, doc: 'TLS towards the brokers (implied by any KAFKA_TLS_*_FILE).' }),
  KAFKA_TLS_CA_FILE: env.string({ default: '', doc: 'PEM file of the CA(s) to trust for the brokers.' }),
  KAFKA_TLS_CERT_FILE: env.string({ default: '', doc: 'PEM client certificate (brokers requiring mutual TLS).' }),
  KAFKA_TLS_KEY_FILE: env.string({ default: '', doc: 'PEM private key of KAFKA_TLS_CERT_FILE.' }),
  KAFKA_TLS_KEY_PASSWORD: env.secret({
    minLength: 1,
    default: '',
    doc: 'Passphrase of an encrypted KAFKA_TLS_KEY_FILE.',
  }),
  KAFKA_SASL_MECHANISM: env.oneOf({
    values: ['none', ...MECHANISMS] as const,
    default: 'none',
    doc: 'SASL mechanism towards the brokers.',
  }),
  KAFKA_SASL_USERNAME: env.string({ default: '', doc: 'SASL user (PLAIN, SCRAM).' }),
  KAFKA_SASL_PASSWORD: env.secret({ minLength: 1, default: '', doc: 'SASL password (PLAIN, SCRAM).' }),
  KAFKA_SASL_OAUTH_TOKEN_FILE: env.string({
    default: '',
    doc: 'OAUTHBEARER: file holding the token, read again at every authentication (rotated by whoever writes it).',
  }),
  SCHEMA_REGISTRY_USERNAME: env.string({ default: '', doc: 'Schema registry basic-auth user.' }),
  SCHEMA_REGISTRY_PASSWORD: env.secret({ minLength: 1, default: '', doc: 'Schema registry basic-auth password.' }),
};

export type SecurityEnv = EnvValues<typeof securityEnv>;

/**
 * The `SegurancaKafka` and `SegurancaRegistry` the variables describe (`undefined`: plaintext,
 * anonymous). Inconsistent variables fail naming them: a mechanism without its user, a
 * certificate without its key, a file that cannot be read (its path, never its content).
 */
export function securityFromEnv(e: SecurityEnv): { kafka?: SegurancaKafka; registry?: SegurancaRegistry } {
  const problems: string[] = [];
  const read = (name: string, file: string): string | undefined => {
    if (!file) return undefined;
    try {
      return fs.readFileSync(file, 'utf8');
    } catch (err) {
      problems.push(`${name}: cannot read ${JSON.stringify(file)} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      return undefined;
    }
  };
  const tlsFiles = e.KAFKA_TLS_CA_FILE || e.KAFKA_TLS_CERT_FILE || e.KAFKA_TLS_KEY_FILE;
  let tls: SegurancaKafka['tls'];
  if (tlsFiles) {
    if (!!e.KAFKA_TLS_CERT_FILE !== !!e.KAFKA_TLS_KEY_FILE)
      problems.push(
        'KAFKA_TLS_CERT_FILE and KAFKA_TLS_KEY_FILE: set both (a client certificate needs its key) or neither',
      );
    const t: TlsCliente = {};
    const ca = read('KAFKA_TLS_CA_FILE', e.KAFKA_TLS_CA_FILE);
    const cert = read('KAFKA_TLS_CERT_FILE', e.KAFKA_TLS_CERT_FILE);
    const key = read('KAFKA_TLS_KEY_FILE', e.KAFKA_TLS_KEY_FILE);
    if (ca) t.ca = ca;
    if (cert) t.cert = cert;
    if (key) t.key = key;
    if (e.KAFKA_TLS_KEY_PASSWORD) t.passphrase = e.KAFKA_TLS_KEY_PASSWORD;
    tls = t;
  } else if (e.KAFKA_TLS) tls = true;
  let sasl: SaslCliente | undefined;
  const m = e.KAFKA_SASL_MECHANISM;
  if (m === 'oauthbearer') {
    const file = e.KAFKA_SASL_OAUTH_TOKEN_FILE;
    if (!file) problems.push('KAFKA_SASL_OAUTH_TOKEN_FILE: required with KAFKA_SASL_MECHANISM=oauthbearer');
    else {
      read('KAFKA_SASL_OAUTH_TOKEN_FILE', file); // readable now, or start-up fails
      sasl = { mechanism: 'oauthbearer', token: () => fs.promises.readFile(file, 'utf8').then((t) => t.trim()) };
    }
  } else if (m !== 'none') {
    if (!e.KAFKA_SASL_USERNAME) problems.push(`KAFKA_SASL_USERNAME: required with KAFKA_SASL_MECHANISM=${m}`);
    if (!e.KAFKA_SASL_PASSWORD)
      problems.push(`KAFKA_SASL_PASSWORD (or KAFKA_SASL_PASSWORD_FILE): required with KAFKA_SASL_MECHANISM=${m}`);
    sasl = { mechanism: m, username: e.KAFKA_SASL_USERNAME, password: e.KAFKA_SASL_PASSWORD };
  }
  if (!!e.SCHEMA_REGISTRY_USERNAME !== !!e.SCHEMA_REGISTRY_PASSWORD)
    problems.push('SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD: set both or neither');
  if (problems.length > 0) throw new ConfigError(`invalid connection security: ${problems.join('; ')}`, problems);
  return {
    ...(tls || sasl ? { kafka: { ...(tls ? { tls } : {}), ...(sasl ? { sasl } : {}) } } : {}),
    ...(e.SCHEMA_REGISTRY_USERNAME
      ? { registry: { username: e.SCHEMA_REGISTRY_USERNAME, password: e.SCHEMA_REGISTRY_PASSWORD } }
      : {}),
  };
}

/** `securityFromEnv` as `EventBus` options: `new EventBus({ ...busSecurityFromEnv(cfg), … })`. */
export function busSecurityFromEnv(e: SecurityEnv): { seguranca?: SegurancaKafka; registryAuth?: SegurancaRegistry } {
  const s = securityFromEnv(e);
  return { ...(s.kafka ? { seguranca: s.kafka } : {}), ...(s.registry ? { registryAuth: s.registry } : {}) };
}
