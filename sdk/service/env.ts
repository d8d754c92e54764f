/**
 * Typed reading of environment variables, validated once at start. Every service declares
 * its variables as a spec; a missing or malformed one fails start-up with an error naming
 * the variable and the expected form, e.g.
 * `KAFKA_BROKERS: expected a comma-separated list of host:port, got "localhost"`.
 *
 * Secrets (`env.secret`, `secret: true`) are never quoted back — an error says how long the
 * value was, not what it was — and each may come from a file instead: `NAME_FILE=/run/secrets/x`
 * (a mounted Kubernetes or Docker secret; one trailing newline is dropped). Setting both `NAME`
 * and `NAME_FILE` is an error, as is a file that cannot be read.
 */
import fs from 'node:fs';
import { ConfigError } from '../errors';

export interface EnvVar<T> {
  /** What the value must look like, quoted in errors and in `.env.example`. */
  form: string;
  /** Default when unset; `undefined` means required. */
  default?: T;
  /** One line for `.env.example`. */
  doc: string;
  /** A secret: never quoted in errors, and readable from `NAME_FILE`. */
  secret?: boolean;
  parse(raw: string): T | undefined;
}

export type EnvSpec = Record<string, EnvVar<unknown>>;
export type EnvValues<S extends EnvSpec> = { [K in keyof S]: S[K] extends EnvVar<infer T> ? T : never };

export function readEnv<S extends EnvSpec>(
  spec: S,
  env: Record<string, string | undefined> = process.env,
): EnvValues<S> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, v] of Object.entries(spec)) {
    let raw = env[name];
    const file = v.secret ? env[`${name}_FILE`] : undefined;
    if (file !== undefined && file.trim() !== '') {
      if (raw !== undefined && raw.trim() !== '') {
        problems.push(`${name}: set either ${name} or ${name}_FILE, not both`);
        continue;
      }
      try {
        raw = fs.readFileSync(file.trim(), 'utf8').replace(/\r?\n$/, '');
      } catch (err) {
        problems.push(
          `${name}_FILE: cannot read ${JSON.stringify(file.trim())} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
        );
        continue;
      }
    }
    if (raw === undefined || raw.trim() === '') {
      if (v.default === undefined) problems.push(`${name}: required, expected ${v.form}`);
      else out[name] = v.default;
      continue;
    }
    const parsed = v.parse(v.secret ? raw : raw.trim());
    const shown = v.secret ? `a value of ${raw.length} characters` : JSON.stringify(raw);
    if (parsed === undefined) problems.push(`${name}: expected ${v.form}, got ${shown}`);
    else out[name] = parsed;
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join('; ')}`, problems);
  return out as EnvValues<S>;
}

type Opt<T> = { default?: T; doc: string };

export const env = {
  string: (o: Opt<string> & { pattern?: RegExp; form?: string }): EnvVar<string> => ({
    form: o.form ?? 'a non-empty string',
    ...o,
    parse: (raw) => (o.pattern && !o.pattern.test(raw) ? undefined : raw),
  }),
  secret: (o: Opt<string> & { minLength: number }): EnvVar<string> => ({
    form: `a secret of at least ${o.minLength} characters`,
    secret: true,
    ...o,
    parse: (raw) => (raw.length >= o.minLength ? raw : undefined),
  }),
  int: (o: Opt<number> & { min?: number; max?: number; unit?: string }): EnvVar<number> => ({
    form: `an integer${o.min !== undefined ? ` >= ${o.min}` : ''}${o.max !== undefined ? ` <= ${o.max}` : ''}${
      o.unit ? ` (${o.unit})` : ''
    }`,
    ...o,
    parse: (raw) => {
      if (!/^-?\d+$/.test(raw)) return undefined;
      const n = Number(raw);
      if (o.min !== undefined && n < o.min) return undefined;
      if (o.max !== undefined && n > o.max) return undefined;
      return n;
    },
  }),
  bool: (o: Opt<boolean>): EnvVar<boolean> => ({
    form: 'true or false',
    ...o,
    parse: (raw) => (raw === 'true' || raw === '1' ? true : raw === 'false' || raw === '0' ? false : undefined),
  }),
  url: (o: Opt<string> & { protocols: string[] }): EnvVar<string> => ({
    form: `a URL (${o.protocols.join(', ')})`,
    ...o,
    parse: (raw) => {
      try {
        const u = new URL(raw);
        return o.protocols.includes(u.protocol.replace(':', '')) ? raw.replace(/\/+$/, '') : undefined;
      } catch {
        return undefined;
      }
    },
  }),
  brokers: (o: Opt<string[]>): EnvVar<string[]> => ({
    form: 'a comma-separated list of host:port',
    ...o,
    parse: (raw) => {
      const list = raw.split(',').map((s) => s.trim());
      return list.every((b) => /^[A-Za-z0-9.\-_[\]:]+:\d{1,5}$/.test(b)) ? list : undefined;
    },
  }),
  oneOf: <T extends string>(o: Opt<T> & { values: readonly T[] }): EnvVar<T> => ({
    form: `one of ${o.values.join(', ')}`,
    ...o,
    parse: (raw) => ((o.values as readonly string[]).includes(raw) ? (raw as T) : undefined),
  }),
  list: (o: Opt<string[]> & { form: string; item: RegExp }): EnvVar<string[]> => ({
    ...o,
    parse: (raw) => {
      const items = raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      return items.every((i) => o.item.test(i)) ? items : undefined;
    },
  }),
};

/** Renders a spec as `.env.example` lines (used to keep `.env.example` true; see its test). */
export function renderEnvExample(title: string, spec: EnvSpec): string {
  const lines = [`# --- ${title} ---`];
  for (const [name, v] of Object.entries(spec)) {
    lines.push(
      `# ${v.doc} Form: ${v.form}.${v.default === undefined ? ' Required.' : ''}${v.secret ? ` Or ${name}_FILE: a file holding it.` : ''}`,
    );
    const d = v.default;
    lines.push(
      `${d === undefined ? '# ' : ''}${name}=${Array.isArray(d) ? d.join(',') : typeof d === 'string' || typeof d === 'number' || typeof d === 'boolean' ? String(d) : ''}`,
    );
  }
  return lines.join('\n');
}
