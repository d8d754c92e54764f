import { isRetriable } from '../sdk';

/** SQLSTATE classes of a row PostgreSQL refuses for its content (data exception, integrity, limits). */
const REFUSED_ROW_SQLSTATE = /^(22|23|54)/;

/** The SQLSTATE of a PostgreSQL error, if it has a well-formed one. */
export const sqlstateOf = (err: unknown): string | undefined => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
};

/**
 * The SQLSTATE when `err` is PostgreSQL refusing a row for its content (retrying cannot help:
 * the row is isolated and quarantined), else `undefined` (an outage: retry).
 */
export function refusalOf(err: unknown): string | undefined {
  const state = sqlstateOf(err);
  return !isRetriable(err) && state && REFUSED_ROW_SQLSTATE.test(state) ? state : undefined;
}

/**
 * `fn`'s result, or `{ refused: SQLSTATE }` when PostgreSQL refuses the row for its content (a
 * data, integrity or limit error): the caller quarantines the record instead of retrying it.
 */
export async function refusable<T>(fn: () => Promise<T>): Promise<T | { refused: string }> {
  try {
    return await fn();
  } catch (err) {
    const refused = refusalOf(err);
    if (refused) return { refused };
    throw err;
  }
}

/**
 * Writes `items` with one `write` call; if PostgreSQL refuses that for a row's content, writes
 * each half the same way, in order, down to single rows, and hands each refused one to
 * `onRefused` with its SQLSTATE, so one bad row never blocks the others. One bad row among `n`
 * costs ~2·log₂(n) writes, not `n` (the sequencer writes chunks of up to 20,000 events). Returns
 * the results of the writes that went through, in the items' order. Any other error (an outage)
 * escapes: the caller retries.
 */
export async function writeIsolatingRefused<T, R>(
  items: T[],
  write: (items: T[]) => Promise<R>,
  onRefused: (item: T, sqlstate: string) => Promise<void>,
): Promise<R[]> {
  const results: R[] = [];
  const attempt = async (part: T[]): Promise<void> => {
    const r = await refusable(() => write(part));
    if (typeof r !== 'object' || r === null || !('refused' in r)) {
      results.push(r);
      return;
    }
    if (part.length === 1) {
      await onRefused(part[0] as T, r.refused);
      return;
    }
    const mid = part.length >> 1;
    await attempt(part.slice(0, mid));
    await attempt(part.slice(mid));
  };
  if (items.length > 0) await attempt(items);
  return results;
}
