/**
 * Structured JSON logs, one object per line, with `event_id` / `correlacao_id` / `colonia`
 * wherever an event is involved. Inject your own `Logger` (pino, winston…) through the options.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function jsonLogger(
  component: string,
  level: LogLevel = (process.env.LOG_LEVEL as LogLevel | undefined) ?? 'info',
  write: (line: string) => void = (l) => process.stdout.write(l + '\n'),
): Logger {
  const min = RANK[level] ?? RANK.info;
  const log =
    (lvl: LogLevel) =>
    (msg: string, fields: LogFields = {}): void => {
      if (RANK[lvl] < min) return;
      write(JSON.stringify({ time: new Date().toISOString(), level: lvl, component, msg, ...fields }, bigintSafe));
    };
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}

/** A logger that discards everything (tests, benchmarks). */
export const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

function bigintSafe(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}
