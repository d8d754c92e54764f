/**
 * The rows the bridge stages and the log lines it holds, with no database client: what the decode
 * thread (bridge/decode-thread.ts) builds and the bridge's writers take. The thread loads this
 * module and not bridge/event-log-writer.ts, whose PostgreSQL, Kafka and metrics modules it never
 * uses (bridge/decode-thread.unit.test.ts checks what the thread loads).
 */

import type { EventoConsultado } from '../sdk';
import { copyLines, type CopyValue } from './copy-text';

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

/** A row's values for the log's columns (`LOG_COLUMNS`, the first twelve of staging's), as COPY text takes them. */
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
 * `core.event_log` `COPY` line, formatted when it was held (ADR 0029). A held backlog is then one
 * small object and a view of off-heap bytes per event, not the row's object tree (its payload's
 * included), which the garbage collector copied out of the young generation event by event.
 */
export interface HeldLine {
  readonly event_id: string;
  readonly tipo: string;
  readonly line: Buffer;
}

/** Rows as held lines: their log columns as `COPY` text, one buffer for all, a view of it per row. */
export function heldLines(rows: readonly StagedRow[]): HeldLine[] {
  const ends: number[] = [];
  return heldLinesOf(rows, logText(rows, ends), ends);
}

/**
 * The log's `COPY` lines of `rows` in one buffer of its own (not Node's shared pool, so it can be
 * transferred between threads), the end of each row's line pushed on `ends`.
 */
export function logText(rows: readonly StagedRow[], ends: number[]): Buffer {
  const text = copyLines(rows.map(logValues), ends);
  // a copy of its own: `copyLines`' buffer is sized for the worst case (3 bytes per character)
  const own = Buffer.allocUnsafeSlow(text.length);
  text.copy(own);
  return own;
}

/** Held lines of `rows` from their `logText` and its `ends`: a view of `text` per row. */
export function heldLinesOf(
  rows: ReadonlyArray<Pick<StagedRow, 'event_id' | 'tipo'>>,
  text: Buffer,
  ends: ArrayLike<number>,
): HeldLine[] {
  let start = 0;
  return rows.map((r, i) => {
    const end = ends[i] as number;
    const held = { event_id: r.event_id, tipo: r.tipo, line: text.subarray(start, end) };
    start = end;
    return held;
  });
}
