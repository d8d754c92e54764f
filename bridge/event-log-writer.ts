import type pg from 'pg';
import { withTransaction } from '../sdk/service';
import { binaryTuples, carried, copyBinary, type CopyValue } from './copy-binary';
import { refusalOf, sqlstateOf } from './refused-rows';
import {
  LOG_COLUMNS,
  STAGING_COLUMN_TYPES,
  STAGING_COLUMNS,
  logValues,
  type HeldLine,
  type StagedRow,
} from './log-lines';

/** NOTIFY channel a staging commit signals on: the sequencer (any instance) wakes up. */
export const STAGING_CHANNEL = 'feromonios_event_staging';

/**
 * Stages a chunk of one partition in one transaction. The fast path is one `COPY` (binary
 * format, bridge/copy-binary.ts); when it fails for a row's content or because an event is staged
 * already (a redelivery: unique violation), or a value cannot be carried in binary
 * (`CopyValueError`: none the wire checks let through), the chunk is staged again by an `INSERT`
 * that leaves out events already staged (returned as duplicates) — and if PostgreSQL refuses
 * that too, the caller isolates the refused row. Events already in the log may be staged again: the sequencer
 * drops them without a sequence number. Commit signals `STAGING_CHANNEL`. The caller commits
 * the Kafka offsets afterwards: a committed offset means "staged up to here", which is what the
 * sequencer waits for.
 */
export async function stageEvents(
  pool: pg.Pool,
  rows: StagedRow[],
): Promise<{ staged: string[]; duplicates: string[] }> {
  if (rows.length === 0) return { staged: [], duplicates: [] };
  const tuples = new Set(rows.map((r) => r.event_id)).size === rows.length ? stagingTuples(rows) : undefined;
  if (tuples) {
    try {
      await withTransaction(pool, async (client) => {
        await copyBinary(client, 'core.event_staging', STAGING_COLUMNS, tuples);
        await client.query(`SELECT pg_notify('${STAGING_CHANNEL}', '')`);
      });
      return { staged: rows.map((r) => r.event_id), duplicates: [] };
    } catch (err) {
      if (!refusalOf(err)) throw err; // an outage: the caller retries the chunk
    }
  }
  return insertStaging(pool, rows);
}

/** Rows as binary `COPY` tuples of `STAGING_COLUMNS`; `undefined` for a value binary cannot carry (the `INSERT` takes it as text). */
function stagingTuples(rows: StagedRow[]): Buffer | undefined {
  return carried(() => binaryTuples(rows.map(stagingValues), STAGING_COLUMNS, STAGING_COLUMN_TYPES));
}

/** A staged row's values in `STAGING_COLUMNS` order: the log's, then where and when it was published. */
const stagingValues = (r: StagedRow): CopyValue[] => {
  const v = logValues(r);
  v.push(r.publicado_em, r.ordem_sessao, r.ordem_contador, r.ordem_firme);
  return v;
};

/**
 * The slow path of `stageEvents`: one INSERT that skips events already staged — keeping, of a
 * copy sent again by the same producer session, its higher settled mark (`ordem_firme`: the
 * retry of an outbox pass says the gaps its first attempt left are settled, docs/ordering.md).
 */
async function insertStaging(pool: pg.Pool, rows: StagedRow[]): Promise<{ staged: string[]; duplicates: string[] }> {
  // one row per event (an ON CONFLICT DO UPDATE cannot touch a row twice): the first copy, with
  // the highest mark of the copies of its session
  const first = new Map<string, StagedRow>();
  for (const r of rows) {
    const kept = first.get(r.event_id);
    if (!kept) first.set(r.event_id, r);
    else if (kept.ordem_sessao === r.ordem_sessao && (r.ordem_firme ?? 0) > (kept.ordem_firme ?? 0))
      first.set(r.event_id, { ...kept, ordem_firme: r.ordem_firme });
  }
  const values = [...first.values()].map(stagingValues);
  return withTransaction(pool, async (client) => {
    const res = await client.query<{ event_id: string; novo: boolean }>(
      `INSERT INTO core.event_staging (${STAGING_COLUMNS.join(', ')})
       SELECT e, t, v, ts, o, c, ca, te, p, kt, kp, ko, pe, os, oc, of
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::uuid[], $7::uuid[], $8::uuid[],
                     $9::jsonb[], $10::text[], $11::int[], $12::bigint[], $13::timestamptz[], $14::uuid[], $15::bigint[], $16::bigint[])
              AS x(e, t, v, ts, o, c, ca, te, p, kt, kp, ko, pe, os, oc, of)
       ON CONFLICT (event_id) DO UPDATE SET ordem_firme = EXCLUDED.ordem_firme
        WHERE EXCLUDED.ordem_sessao = core.event_staging.ordem_sessao
          AND EXCLUDED.ordem_firme > coalesce(core.event_staging.ordem_firme, 0)
       RETURNING event_id::text, xmax = 0 AS novo`,
      STAGING_COLUMNS.map((_c, i) => values.map((v) => v[i])),
    );
    await client.query(`SELECT pg_notify('${STAGING_CHANNEL}', '')`);
    const staged = new Set(res.rows.filter((r) => r.novo).map((r) => r.event_id));
    const seen = new Set<string>();
    const duplicates: string[] = [];
    for (const r of rows) {
      if (!staged.has(r.event_id) || seen.has(r.event_id)) duplicates.push(r.event_id);
      seen.add(r.event_id);
    }
    return { staged: [...staged], duplicates };
  });
}

export interface WriteResult {
  inserted: Array<{ event_id: string; tipo: string }>;
  /** event_ids already in the log: dropped, no sequence consumed. */
  duplicates: string[];
  /** The sequence number of the last event written, if any. */
  lastSequence: string | null;
}

/**
 * Key of the transaction-scoped advisory lock taken before assigning sequence numbers. Writers
 * are serialised, so rows commit in sequence order and a reader polling
 * `sequence_number > cursor` can never see N+1 before N (the skip bug Marten and Emmett
 * shipped). docs/adr/0004-global-sequence.md explains the choice.
 */
export const EVENT_LOG_LOCK_KEY = 0x6665726f6c6f67n; // 'ferolog'

/**
 * One stretch of a chunk the sequencer writes, in its order: events staged in
 * `core.event_staging` (moved by their ids) or held in the leader's memory (copied; ADR 0029).
 */
export type LogRun = { from: 'staging'; ids: string[] } | { from: 'memory'; rows: HeldLine[] };

/** A run of held events made ready before the lock: the ones not in the log yet as binary `COPY` tuples. */
interface PreparedCopy {
  rows: HeldLine[];
  duplicates: string[];
  tuples: Buffer;
}

/** A chunk made ready to write (`prepareLogChunk`): its runs, the held ones probed and their tuples joined. */
export interface PreparedChunk {
  runs: Array<{ from: 'staging'; ids: string[] } | ({ from: 'memory' } & PreparedCopy)>;
}

/** The ids of `rows` found in `core.event_ids` (in the log already): one query. */
async function loggedAmong(db: pg.Pool | pg.PoolClient, rows: HeldLine[]): Promise<ReadonlySet<string>> {
  if (rows.length === 0) return new Set();
  const { rows: found } = await db.query<{ event_id: string }>(
    'SELECT event_id::text FROM core.event_ids WHERE event_id = ANY($1::uuid[])',
    [rows.map((r) => r.event_id)],
  );
  return new Set(found.map((f) => f.event_id));
}

/** A run of held events as binary `COPY` tuples (their lines joined), those in `logged` left out (returned as duplicates). */
function joinHeld(rows: HeldLine[], logged: ReadonlySet<string>): PreparedCopy {
  const fresh = logged.size === 0 ? rows : rows.filter((r) => !logged.has(r.event_id));
  return {
    rows: fresh,
    duplicates: logged.size === 0 ? [] : rows.filter((r) => logged.has(r.event_id)).map((r) => r.event_id),
    tuples: Buffer.concat(fresh.map((r) => r.line)),
  };
}

/** A run of a chunk ready to write: staged ids, or held events probed and their tuples joined. */
type PreparedRun = PreparedChunk['runs'][number];

/**
 * Makes a chunk ready to write: its held events probed against `core.event_ids` (which are in
 * the log already) by one query, however many runs they make (a chunk interleaving the sources
 * event by event has thousands), and the others' tuples joined for a binary `COPY`. The sequencer does
 * this before the log's lock, while the chunk before commits, so the lock is held for the write
 * alone.
 */
export async function prepareLogChunk(db: pg.Pool | pg.PoolClient, runs: LogRun[]): Promise<PreparedChunk> {
  return { runs: await readyRuns(db, runs) };
}

/** `runs` with those of held events not prepared yet probed (one query) and their lines joined. */
async function readyRuns(db: pg.Pool | pg.PoolClient, runs: Array<LogRun | PreparedRun>): Promise<PreparedRun[]> {
  const logged = await loggedAmong(
    db,
    runs.flatMap((r) => (r.from === 'memory' && !('tuples' in r) ? r.rows : [])),
  );
  return runs.map((r) =>
    r.from === 'staging' || 'tuples' in r ? r : { from: 'memory' as const, ...joinHeld(r.rows, logged) },
  );
}

/**
 * Writes a chunk to `core.event_log` in one transaction, taking sequence numbers in the given
 * order (the sequencer's causal order, bridge/causal-order.ts), run after run: staged events are
 * moved out of `core.event_staging` (an event_id already in the log is dropped from staging
 * without a sequence number — a redelivery staged again); held events are copied, those the
 * probe found in the log left out. An event logged since the probe (another leader's last
 * write) makes the `core.event_ids` trigger fail the `COPY` with a unique violation: the chunk
 * is then written again with every run probed under the lock, where nothing else writes the log
 * — a duplicate is never mistaken for a refused row (ADR 0029, rule 6).
 */
export async function writeEventLog(
  pool: pg.Pool,
  chunk: PreparedChunk,
  /** Fault injection only: up to this many milliseconds of random delay before COMMIT. */
  commitJitterMs = 0,
): Promise<WriteResult> {
  try {
    return await writeChunk(pool, chunk.runs, commitJitterMs);
  } catch (err) {
    if (sqlstateOf(err) !== '23505' || !chunk.runs.some((r) => r.from === 'memory')) throw err;
  }
  const again = await writeChunk(
    pool,
    chunk.runs.map((r) => (r.from === 'memory' ? { from: 'memory' as const, rows: r.rows } : r)),
    commitJitterMs,
  );
  // the probe's own finds were left out of the runs written again
  for (const r of chunk.runs) if (r.from === 'memory') again.duplicates.push(...r.duplicates);
  return again;
}

async function writeChunk(
  pool: pg.Pool,
  given: Array<LogRun | PreparedRun>,
  commitJitterMs: number,
): Promise<WriteResult> {
  if (given.every((r) => (r.from === 'staging' ? r.ids.length === 0 : r.rows.length === 0)))
    return {
      inserted: [],
      duplicates: given.flatMap((r) => ('duplicates' in r ? r.duplicates : [])),
      lastSequence: null,
    };
  return withTransaction(
    pool,
    async (client) => {
      // runs not prepared are probed here, under the lock (the retry after a unique violation)
      const runs = await readyRuns(client, given);
      const result =
        runs.some((r) => r.from === 'staging') && runs.some((r) => r.from === 'memory')
          ? await moveInterleaved(client, runs)
          : await moveRuns(client, runs);
      if (commitJitterMs > 0) await client.query('SELECT pg_sleep($1)', [(Math.random() * commitJitterMs) / 1000]);
      return result;
    },
    // the lock with BEGIN, in one round trip (a constant key, no parameter to bind)
    () => `SELECT pg_advisory_xact_lock(${EVENT_LOG_LOCK_KEY.toString()})`,
  );
}

/** Writes a chunk run after run (each of one source), under the caller's lock. */
async function moveRuns(client: pg.PoolClient, runs: PreparedRun[]): Promise<WriteResult> {
  const inserted: WriteResult['inserted'] = [];
  const duplicates: string[] = [];
  let lastSequence: string | null = null;
  for (const run of runs) {
    if (run.from === 'staging') {
      const r = await moveStaged(client, run.ids);
      inserted.push(...r.inserted);
      duplicates.push(...r.duplicates);
      lastSequence = r.lastSequence ?? lastSequence;
      continue;
    }
    duplicates.push(...run.duplicates);
    if (run.rows.length === 0) continue;
    await copyBinary(client, 'core.event_log', LOG_COLUMNS, run.tuples);
    for (const r of run.rows) inserted.push({ event_id: r.event_id, tipo: r.tipo });
    const { rows } = await client.query<{ s: string }>(
      "SELECT currval('core.event_log_sequence_number_seq')::text AS s",
    );
    lastSequence = rows[0]?.s ?? lastSequence;
  }
  return { inserted, duplicates, lastSequence };
}

/** The log's columns, as the statements moving rows into it list them. */
const LOG_LIST = LOG_COLUMNS.join(', ');

/**
 * Writes a chunk whose staged and held events interleave (the leader's memory overflowed into
 * the table, ADR 0029) in one statement, not one per run: runs alternating event by event would
 * cost a statement each (measured: 147–220 µs per event, against 57–68 for a chunk of one
 * source). The held events not in the log yet are copied into a temporary table of the session
 * (emptied at commit), then moved with the staged ones in the chunk's order. Inside the caller's
 * transaction, under the log's lock, so the check against `core.event_ids` is exact; an event
 * both staged and held is written once, from staging (as `readRound` settles it).
 */
async function moveInterleaved(client: pg.PoolClient, runs: PreparedRun[]): Promise<WriteResult> {
  const order: string[] = [];
  const duplicates: string[] = [];
  const held: Buffer[] = [];
  for (const run of runs) {
    if (run.from === 'staging') {
      for (const id of run.ids) order.push(id);
      continue;
    }
    for (const id of run.duplicates) duplicates.push(id);
    for (const r of run.rows) order.push(r.event_id);
    held.push(run.tuples);
  }
  await client.query(
    `CREATE TEMP TABLE IF NOT EXISTS feromonios_held ON COMMIT DELETE ROWS AS
       SELECT ${LOG_LIST} FROM core.event_log WITH NO DATA`,
  );
  await copyBinary(client, 'pg_temp.feromonios_held', LOG_COLUMNS, Buffer.concat(held));
  const res = await client.query<MovedRow>(moveStatement(true), [order]);
  return written(res.rows, duplicates);
}

/** A row a move returns: an event of the chunk, with its sequence number if it was written. */
interface MovedRow {
  event_id: string;
  sequence_number: string | null;
  tipo: string;
}

/**
 * The statement that moves a chunk into the log, its ids in order as `$1`: the staged ones out of
 * `core.event_staging` and, with `held`, those copied into `pg_temp.feromonios_held`. Sequence
 * numbers follow the chunk's order (ORDER BY ord below the insert); an event in the log
 * already (`core.event_ids`) is dropped without one. Returns every event of the chunk in order.
 */
function moveStatement(held: boolean): string {
  const cols = (alias: string) => LOG_COLUMNS.map((c) => `${alias}.${c}`).join(', ');
  const chunk = held
    ? `held AS (SELECT ${cols('h')}, ids.ord
                  FROM pg_temp.feromonios_held h JOIN ids ON ids.id = h.event_id
                 -- the statement's snapshot still sees the rows "moved" deletes: an index probe
                 -- each, where an anti-join with "moved" (estimated at a few rows) ran as a nested loop
                 WHERE NOT EXISTS (SELECT 1 FROM core.event_staging s WHERE s.event_id = h.event_id)),
       chunk AS (SELECT * FROM moved UNION ALL SELECT * FROM held)`
    : 'chunk AS (SELECT * FROM moved)';
  // unnest keeps the chunk in one statement whatever its size
  return `WITH ids AS (SELECT id, ord FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, ord)),
       moved AS (DELETE FROM core.event_staging s USING ids WHERE s.event_id = ids.id
                 RETURNING ${cols('s')}, ids.ord),
       ${chunk},
       ins AS (INSERT INTO core.event_log (${LOG_LIST})
               SELECT ${LOG_LIST} FROM chunk c
                WHERE NOT EXISTS (SELECT 1 FROM core.event_ids l WHERE l.event_id = c.event_id)
                ORDER BY ord
               RETURNING event_id, sequence_number)
  SELECT c.event_id::text, i.sequence_number::text, c.tipo
    FROM chunk c LEFT JOIN ins i ON i.event_id = c.event_id
   ORDER BY c.ord`;
}

/**
 * A move's result from its rows in the chunk's order: those given a sequence number written,
 * the others (in the log already) added to `duplicates`.
 */
function written(rows: MovedRow[], duplicates: string[]): WriteResult {
  const inserted: WriteResult['inserted'] = [];
  let lastSequence: string | null = null;
  for (const r of rows) {
    if (r.sequence_number === null) duplicates.push(r.event_id);
    else {
      inserted.push({ event_id: r.event_id, tipo: r.tipo });
      lastSequence = r.sequence_number;
    }
  }
  return { inserted, duplicates, lastSequence };
}

/**
 * Moves staged events into `core.event_log` (inside the caller's transaction, under the log's
 * lock), taking sequence numbers in the given order. An event_id already in the log is dropped
 * from staging without a sequence number (a redelivery staged again).
 */
async function moveStaged(client: pg.PoolClient, orderedIds: string[]): Promise<WriteResult> {
  if (orderedIds.length === 0) return { inserted: [], duplicates: [], lastSequence: null };
  const res = await client.query<MovedRow>(moveStatement(false), [orderedIds]);
  return written(res.rows, []);
}
