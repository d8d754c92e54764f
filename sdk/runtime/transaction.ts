import type pg from 'pg';

const ROLLBACK = Symbol('feromonios.rollback');

/** What a transaction's body returns to roll back instead of committing (see `withTransaction`). */
export interface Rollback<T> {
  readonly [ROLLBACK]: true;
  readonly value: T;
}

/** Ends the transaction with ROLLBACK, `withTransaction` then returns `value`. */
export const rollback = <T>(value: T): Rollback<T> => ({ [ROLLBACK]: true, value });

const isRollback = <T>(v: T | Rollback<T>): v is Rollback<T> => typeof v === 'object' && v !== null && ROLLBACK in v;

/**
 * The one way the project runs a PostgreSQL transaction: BEGIN, `body`, COMMIT — or ROLLBACK
 * when `body` throws (the error is rethrown) or returns `rollback(value)`. A connection whose
 * ROLLBACK fails, or that reported an error while checked out (it broke mid-transaction), is
 * discarded, never handed back to the pool, so the next caller cannot get a dead connection or
 * one stuck in a failed transaction.
 *
 * `comBegin`: one statement without parameters (values as literals, `client.escapeLiteral`) sent with
 * BEGIN in the same round trip — one write and one answer instead of two; its result is `body`'s
 * second argument. For a statement run once per event (the inbox's claim), where each round trip
 * is a system call pair on both sides.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  body: (client: pg.PoolClient, primeiro: pg.QueryResult | undefined) => Promise<T | Rollback<T>>,
  comBegin?: (client: pg.PoolClient) => string,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // a connection that dies while checked out emits 'error' on the client, which pg's pool does
  // not listen to then: unheard, it would crash the process. It is kept, and the client discarded.
  const onError = (err: Error): void => void (broken ??= err);
  client.on('error', onError);
  try {
    // a simple query of two statements answers with both results
    const opened = (await client.query(comBegin === undefined ? 'BEGIN' : `BEGIN; ${comBegin(client)}`)) as
      pg.QueryResult | pg.QueryResult[];
    const out = await body(client, Array.isArray(opened) ? opened[1] : undefined);
    if (isRollback(out)) {
      await client.query('ROLLBACK');
      return out.value;
    }
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch((e: Error) => (broken = e));
    throw err;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}
