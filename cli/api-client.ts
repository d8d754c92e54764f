import { CliError, EXIT, type ExitCode } from './exit-codes';

export interface ApiOptions {
  /** Base URL of the audit API, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** Operator token (JWT). */
  token: string | undefined;
  /** Per-request timeout, in milliseconds. */
  timeoutMs?: number;
}

/** An RFC 7807 problem as the audit API answers it. */
interface Problem {
  title?: string;
  detail?: string;
  status?: number;
}

const EXIT_OF_STATUS: Record<number, ExitCode> = {
  400: EXIT.USAGE,
  401: EXIT.UNAUTHORIZED,
  403: EXIT.UNAUTHORIZED,
  404: EXIT.NOT_FOUND,
  413: EXIT.USAGE,
  415: EXIT.USAGE,
  429: EXIT.THROTTLED,
};

/**
 * The audit API over HTTP — every `dlq`, `events` and `replay` command goes through it, so the
 * operator token, the throttle, the loop guard and the audit trail apply to the CLI exactly as
 * to any other client.
 */
export class AuditApiClient {
  private readonly base: string;

  constructor(private readonly o: ApiOptions) {
    this.base = o.url.replace(/\/+$/, '');
  }

  get<T>(path: string, query: Record<string, string | number | undefined> = {}): Promise<T> {
    return this.json<T>('GET', withQuery(path, query));
  }

  post<T>(path: string, body: unknown): Promise<{ status: number; body: T }> {
    return this.request('POST', path, body).then(async (res) => ({
      status: res.status,
      body: (await res.json()) as T,
    }));
  }

  /** A streaming GET (NDJSON): the response, its body not read yet. */
  stream(path: string, query: Record<string, string | number | undefined> = {}): Promise<Response> {
    return this.request('GET', withQuery(path, query), undefined, 0);
  }

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    return (await (await this.request(method, path, body)).json()) as T;
  }

  private async request(
    method: string,
    path: string,
    body?: unknown,
    timeoutMs = this.o.timeoutMs ?? 30_000,
  ): Promise<Response> {
    if (!this.o.token)
      throw new CliError(
        'no operator token: set FEROMONIOS_TOKEN (or pass --token) to a JWT the audit API accepts',
        EXIT.UNAUTHORIZED,
      );
    let res: Response;
    try {
      res = await fetch(this.base + path, {
        method,
        headers: {
          authorization: `Bearer ${this.o.token}`,
          accept: 'application/json, application/x-ndjson',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        ...(timeoutMs > 0 ? { signal: AbortSignal.timeout(timeoutMs) } : {}),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name;
      throw new CliError(`cannot reach the audit API at ${this.base} (${cause})`, EXIT.FAILED);
    }
    if (res.ok) return res;
    let problem: Problem = {};
    try {
      problem = (await res.json()) as Problem;
    } catch {
      // not a problem document: the status says enough
    }
    const retry = res.headers.get('retry-after');
    const detail = problem.detail ?? problem.title ?? res.statusText;
    throw new CliError(
      `${res.status} ${problem.title ?? ''}: ${detail}${retry ? ` (retry after ${retry} s)` : ''}`.replace(' :', ':'),
      EXIT_OF_STATUS[res.status] ?? EXIT.FAILED,
    );
  }
}

function withQuery(path: string, query: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}
