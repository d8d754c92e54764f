import { backoffDelay, sleep } from '../runtime/retry';
import { ConfigError, isRetriableHttpStatus, RegistryError } from '../errors';

/** The schema registry, behind a port: code speaks only the Confluent REST API. */
export interface SchemaRegistry {
  /** Registers a JSON schema under a subject (idempotent: same text → same id). */
  register(subject: string, schema: string): Promise<number>;
  /** The id of a schema already registered under the subject, or `undefined`. */
  lookup(subject: string, schema: string): Promise<{ id: number; version: number } | undefined>;
  /** The schema text of an id. */
  schemaById(id: number): Promise<string>;
  /** Whether `schema` is compatible with the subject's latest version (true when none). */
  compatible(subject: string, schema: string): Promise<{ compatible: boolean; messages: string[] }>;
  setCompatibility(subject: string, level: 'BACKWARD' | 'BACKWARD_TRANSITIVE' | 'FULL' | 'NONE'): Promise<void>;
  subjects(): Promise<string[]>;
  /** The subject's latest version (schema text), or `undefined` when it has none. */
  latest(subject: string): Promise<{ id: number; version: number; schema: string } | undefined>;
}

export interface OpcoesRegistroConfluent {
  /** Base URL, e.g. `http://127.0.0.1:8081` (Redpanda) or `…/apis/ccompat/v7` (Apicurio). */
  url: string;
  /** Per-request timeout, in milliseconds. */
  timeoutMs?: number;
  /** Retries of a retriable failure (network, 408/425/429/5xx). */
  retries?: number;
  /**
   * Basic-auth credentials (Confluent Cloud's API key and secret, Redpanda's SASL user). A URL
   * with `user:password@` gives them too; they are taken out of it, so errors never show them.
   */
  auth?: { username: string; password: string };
}

const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';

/** Confluent-API adapter (Redpanda, Confluent, Apicurio's `ccompat/v7`). */
export class ConfluentSchemaRegistry implements SchemaRegistry {
  private readonly url: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly authorization: string | undefined;

  constructor(options: OpcoesRegistroConfluent) {
    const { url, auth } = withoutCredentials(options.url);
    this.url = url.replace(/\/+$/, '');
    const a = options.auth ?? auth;
    this.authorization = a ? `Basic ${Buffer.from(`${a.username}:${a.password}`).toString('base64')}` : undefined;
    this.timeoutMs = options.timeoutMs ?? 3000;
    this.retries = options.retries ?? 2;
  }

  async register(subject: string, schema: string): Promise<number> {
    const body = await this.request<{ id: number }>('POST', `/subjects/${enc(subject)}/versions`, {
      schema,
      schemaType: 'JSON',
    });
    return body.id;
  }

  async lookup(subject: string, schema: string): Promise<{ id: number; version: number } | undefined> {
    try {
      return await this.request<{ id: number; version: number }>('POST', `/subjects/${enc(subject)}`, {
        schema,
        schemaType: 'JSON',
      });
    } catch (err) {
      if (err instanceof RegistryError && err.status === 404) return undefined;
      throw err;
    }
  }

  async schemaById(id: number): Promise<string> {
    return (await this.request<{ schema: string }>('GET', `/schemas/ids/${id}`)).schema;
  }

  async compatible(subject: string, schema: string): Promise<{ compatible: boolean; messages: string[] }> {
    try {
      const r = await this.request<{ is_compatible: boolean; messages?: string[] }>(
        'POST',
        `/compatibility/subjects/${enc(subject)}/versions/latest?verbose=true`,
        { schema, schemaType: 'JSON' },
      );
      return { compatible: r.is_compatible, messages: r.messages ?? [] };
    } catch (err) {
      if (err instanceof RegistryError && err.status === 404) return { compatible: true, messages: [] }; // no version yet
      throw err;
    }
  }

  async setCompatibility(subject: string, level: 'BACKWARD' | 'BACKWARD_TRANSITIVE' | 'FULL' | 'NONE'): Promise<void> {
    await this.request('PUT', `/config/${enc(subject)}`, { compatibility: level });
  }

  async subjects(): Promise<string[]> {
    return this.request<string[]>('GET', '/subjects');
  }

  async latest(subject: string): Promise<{ id: number; version: number; schema: string } | undefined> {
    try {
      const r = await this.request<{ id: number; version: number; schema: string }>(
        'GET',
        `/subjects/${enc(subject)}/versions/latest`,
      );
      return { id: r.id, version: r.version, schema: r.schema };
    } catch (err) {
      if (err instanceof RegistryError && err.status === 404) return undefined;
      throw err;
    }
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let lastErr: RegistryError | undefined;
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      if (attempt > 0) await sleep(backoffDelay(attempt, { initialMs: 100, maxMs: 2_000 }));
      let res: Response;
      try {
        res = await fetch(`${this.url}${path}`, {
          method,
          headers: {
            'content-type': CONTENT_TYPE,
            accept: CONTENT_TYPE,
            ...(this.authorization ? { authorization: this.authorization } : {}),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (err) {
        lastErr = new RegistryError(
          'REGISTRY_UNAVAILABLE',
          `schema registry at ${this.url} unreachable: ${(err as Error).message}`,
          undefined,
          err,
        );
        continue;
      }
      if (res.ok) return (await res.json()) as T;
      const text = await res.text().catch(() => '');
      if (res.status === 404 && confluentErrorCode(text) === undefined) {
        // every Confluent-compatible registry says *what* is missing (40401 subject, 40403
        // schema…); a bare 404 means this URL is not such an API at all
        throw new ConfigError(
          `registryUrl ${this.url} is not a Confluent-compatible schema registry API: ${method} ${path} answered 404 without a registry error code. ` +
            'Give the base of the Confluent API: http://host:8081/apis/ccompat/v7 for Apicurio, http://host:8081 for Redpanda or Confluent',
          [`registryUrl: ${this.url} answered 404 without a registry error code`],
        );
      }
      const err = new RegistryError(
        res.status === 409
          ? 'SCHEMA_INCOMPATIBLE'
          : isRetriableHttpStatus(res.status)
            ? 'REGISTRY_UNAVAILABLE'
            : 'REGISTRY_REJECTED',
        `schema registry ${method} ${path}: HTTP ${res.status} ${text.slice(0, 300)}`,
        res.status,
      );
      if (!err.retriable) throw err;
      lastErr = err;
    }
    throw lastErr ?? new RegistryError('REGISTRY_UNAVAILABLE', 'schema registry unreachable');
  }
}

const enc = encodeURIComponent;

/** The `error_code` of a Confluent-API error body (`{"error_code":40401,"message":…}`), if any. */
function confluentErrorCode(body: string): number | undefined {
  try {
    const code = (JSON.parse(body) as { error_code?: unknown }).error_code;
    return typeof code === 'number' ? code : undefined;
  } catch {
    return undefined;
  }
}

/** Splits `https://user:pass@host/…` into the URL without them and the credentials. */
function withoutCredentials(raw: string): { url: string; auth?: { username: string; password: string } } {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { url: raw };
  }
  if (!u.username && !u.password) return { url: raw };
  const auth = { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
  u.username = '';
  u.password = '';
  return { url: u.toString(), auth };
}
