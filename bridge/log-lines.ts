/**
 * The rows the bridge stages and the log lines it holds, with no database client: what the decode
 * thread (bridge/decode-thread.ts) builds and the bridge's writers take. The thread loads this
 * module and not bridge/event-log-writer.ts, whose PostgreSQL, Kafka and metrics modules it never
 * uses (bridge/decode-thread.unit.test.ts checks what the thread loads).
 */

import type { EventoConsultado } from '../sdk';
import { binaryTuples, carried, type BinaryType, type CopyValue } from './copy-binary';

/** One event ready for `core.event_log` (payload already redacted): the contract's columns. */
export type LogRow = Pick<
  EventoConsultado,
  | 'event_id'
  | 'tipo'
  | 'versao_schema'
  | 'timestamp'
  | 'origem'
  | 'correlacao_id'
  | 'causation_id'
  | 'tenant_id'
  | 'payload'
>;

/**
 * A row for `core.event_staging`: the log's columns plus where and when it was published. Its
 * payload is the redacted payload's JSON text, as `COPY` writes it (made where the record was
 * decoded: on the decode thread, bridge/decode-thread.ts, the row crosses to the bridge's thread
 * as strings).
 */
export interface StagedRow extends Omit<LogRow, 'payload'> {
  /** The redacted payload as JSON text. */
  payload: string;
  kafka_topic: string;
  kafka_partition: number;
  kafka_offset: string;
  /** The Kafka record timestamp (publish time), ISO 8601. */
  publicado_em: string;
  ordem_sessao: string | null;
  ordem_contador: number | null;
  /** `feromonios_ordem`'s settled mark (every counter of the session below it settled), if any. */
  ordem_firme: number | null;
}

/** Latest instant JavaScript and PostgreSQL both represent, in milliseconds (year 275760). */
export const MAX_DATE_MS = 8.64e15;

/**
 * The publish time of a Kafka record as the sequencer orders it, in milliseconds since the epoch:
 * the record timestamp when it is a real instant, else (`-1`, garbage from a non-SDK producer,
 * out of range) `receivedAt`. A staged row's `publicado_em` is its ISO 8601 form.
 */
export function publishMsOf(recordTimestamp: string | undefined, receivedAt: number): number {
  const ms = recordTimestamp !== undefined && /^\d{1,16}$/.test(recordTimestamp) ? Number(recordTimestamp) : NaN;
  return Number.isSafeInteger(ms) && ms <= MAX_DATE_MS ? ms : receivedAt;
}

/** `core.event_staging`'s columns, in the order `COPY` fills them. */
export const STAGING_COLUMNS = [
  'event_id',
  'tipo',
  'versao_schema',
  'timestamp',
  'origem',
  'correlacao_id',
  'causation_id',
  'tenant_id',
  'payload',
  'kafka_topic',
  'kafka_partition',
  'kafka_offset',
  'publicado_em',
  'ordem_sessao',
  'ordem_contador',
  'ordem_firme',
] as const;

/** The log's columns a `COPY` of held events fills (the sequence number is the table's default). */
export const LOG_COLUMNS = STAGING_COLUMNS.slice(0, 12);

/** The PostgreSQL type of each of `LOG_COLUMNS`, as the binary `COPY` of held events writes it. */
export const LOG_COLUMN_TYPES: readonly BinaryType[] = [
  'uuid', // event_id
  'text', // tipo
  'text', // versao_schema
  'timestamptz', // timestamp
  'text', // origem
  'uuid', // correlacao_id
  'uuid', // causation_id
  'uuid', // tenant_id
  'jsonb', // payload
  'text', // kafka_topic
  'int4', // kafka_partition
  'int8', // kafka_offset
];

/**
 * The PostgreSQL type of each of `STAGING_COLUMNS`, as the binary `COPY` of a staged chunk writes
 * it: the log's, then the publish time, the producer session and its counter and settled mark.
 */
export const STAGING_COLUMN_TYPES: readonly BinaryType[] = [...LOG_COLUMN_TYPES, 'timestamptz', 'uuid', 'int8', 'int8'];

/** A row's values for the log's columns (`LOG_COLUMNS`, the first twelve of staging's), as COPY takes them. */
export const logValues = (r: StagedRow): CopyValue[] => [
  r.event_id,
  r.tipo,
  r.versao_schema,
  r.timestamp,
  r.origem,
  r.correlacao_id,
  r.causation_id,
  r.tenant_id,
  r.payload,
  r.kafka_topic,
  r.kafka_partition,
  r.kafka_offset,
];

/**
 * A held event as the sequencer writes it: its id, its type (for the metrics) and its
 * `core.event_log` row as a binary `COPY` tuple (bridge/copy-binary.ts), formatted when it was
 * held (ADR 0029). A held backlog is then one small object and a view of off-heap bytes per
 * event, not the row's object tree (its payload's included), which the garbage collector copied
 * out of the young generation event by event.
 */
export interface HeldLine {
  readonly event_id: string;
  readonly tipo: string;
  /** The row's binary `COPY` tuple for `LOG_COLUMNS` (no header or trailer). */
  readonly line: Buffer;
}

/**
 * Rows as held lines: their log columns as binary `COPY` tuples, one buffer for all, a view of it
 * per row. Throws `CopyValueError` for a value the binary format cannot carry (none the wire
 * checks let through: the caller stages such a chunk in the table, as text).
 */
export function heldLines(rows: readonly StagedRow[]): HeldLine[] {
  const ends: number[] = [];
  return heldLinesOf(rows, logTuples(rows, ends), ends);
}

/**
 * The held lines of a chunk's decoded events: the ones formatted already (by the decode thread)
 * when every event has one, else formatted here (decoded inline, a schema id the thread was not
 * taught, a chunk the thread could not format); `undefined` when a value cannot be carried by
 * the log's binary `COPY` (`CopyValueError`: none the wire checks let through), so the bridge
 * stages the chunk in the table, as text, and PostgreSQL reads the value itself.
 */
export function linesOf(good: ReadonlyArray<{ row: StagedRow; held?: HeldLine }>): HeldLine[] | undefined {
  if (good.every((g) => g.held)) return good.map((g) => g.held as HeldLine);
  return carried(() => heldLines(good.map((g) => g.row)));
}

/**
 * The log's binary `COPY` tuples of `rows` in one buffer of its own (not Node's shared pool, so
 * it can be transferred between threads), the end of each row's tuple pushed on `ends`. Throws
 * `CopyValueError` as `heldLines` does.
 */
export function logTuples(rows: readonly StagedRow[], ends: number[]): Buffer {
  const tuples = binaryTuples(rows.map(logValues), LOG_COLUMNS, LOG_COLUMN_TYPES, ends);
  // a copy of its own: `binaryTuples`' buffer is sized for the worst case (3 bytes per character)
  const own = Buffer.allocUnsafeSlow(tuples.length);
  tuples.copy(own);
  return own;
}

/** Held lines of `rows` from their `logTuples` and its `ends`: a view of `tuples` per row. */
export function heldLinesOf(
  rows: ReadonlyArray<Pick<StagedRow, 'event_id' | 'tipo'>>,
  tuples: Buffer,
  ends: ArrayLike<number>,
): HeldLine[] {
  let start = 0;
  return rows.map((r, i) => {
    const end = ends[i] as number;
    const held = { event_id: r.event_id, tipo: r.tipo, line: tuples.subarray(start, end) };
    start = end;
    return held;
  });
}
