import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { FeromoniosError, isStorableUtcMillis, readTimestamp } from '../sdk/wire';

/**
 * PostgreSQL's binary `COPY` format (`COPY`, "Binary Format"), for the columns the bridge fills in
 * `core.event_log` and `core.event_staging`: each row a tuple (a 16-bit field count, then each
 * field as a 32-bit length and the type's binary representation; -1 for NULL). PostgreSQL splits
 * no lines, undoes no escapes and parses no UUID, date-time or integer for these rows: the bench's
 * events cost the server ~9 % less CPU per event this way than as text (ADR 0029, "Binary `COPY`").
 *
 * The values converted here (a UUID's hex, a date-time's text) are the ones the wire checks let
 * through (sdk/wire/storable.ts: canonical UUIDs, the `TIMESTAMPTZ` shapes `timestampProblem`
 * accepts), and each becomes the very value PostgreSQL's text input would make of it (an
 * integration test compares the two formats row by row). Anything else throws `CopyValueError`:
 * the caller falls back to a path where PostgreSQL reads the text itself. Text, `VARCHAR` and
 * JSONB go as their UTF-8 (JSONB after its version byte), so PostgreSQL checks their length,
 * encoding and JSON exactly as it does for text.
 */

/** A value of one column of a `COPY … FROM STDIN` row: `null` is SQL NULL. */
export type CopyValue = string | number | bigint | null;

/** The binary representations this encoder writes, by the PostgreSQL type that receives them. */
export type BinaryType = 'uuid' | 'text' | 'jsonb' | 'timestamptz' | 'int4' | 'int8';

/**
 * A value the binary format cannot carry as PostgreSQL's text input would read it (names the
 * column and why): not retriable, the caller hands the values to PostgreSQL as text instead.
 */
export class CopyValueError extends FeromoniosError {
  override name = 'CopyValueError';
  constructor(
    readonly column: string,
    readonly problem: string,
  ) {
    super('INVALID_FIELD', `column ${column}: ${problem}`);
  }
}

/**
 * `encode()`'s result, or `undefined` when it threw `CopyValueError` (a value binary cannot carry:
 * the caller hands the values to PostgreSQL as text instead). Any other error escapes.
 */
export function carried<T>(encode: () => T): T | undefined {
  try {
    return encode();
  } catch (err) {
    if (err instanceof CopyValueError) return undefined;
    throw err;
  }
}

/** The binary `COPY` header: signature, flags (no OIDs), no extension area. */
export const COPY_BINARY_HEADER = Buffer.from([
  0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
]);
/** The binary `COPY` trailer: a field count of -1. */
export const COPY_BINARY_TRAILER = Buffer.from([0xff, 0xff]);

/** Milliseconds from the Unix epoch to PostgreSQL's (2000-01-01T00:00:00Z). */
const PG_EPOCH_MS = 946_684_800_000;

/** `x` rounded to the nearest integer, halves to even: C's `rint`, which PostgreSQL rounds fractions of seconds with. */
function rint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * A date-time's microseconds since 2000-01-01T00:00:00Z, as PostgreSQL's text input reads it
 * (before the column's precision rounds it, which `timestamptz_recv` does as the text input
 * does): the fraction of a second read as a double and rounded to microseconds halves to even,
 * as `ParseFractionalSecond` does. Throws `CopyValueError`, with `timestampProblem`'s words, for
 * a string the wire checks do not accept.
 */
export function timestamptzMicros(v: string, column = 'timestamp'): bigint {
  // the shape `Date#toISOString` writes (every SDK publisher): milliseconds exactly
  if (isStorableUtcMillis(v)) return BigInt(Date.parse(v) - PG_EPOCH_MS) * 1000n;
  const t = readTimestamp(v);
  if ('problem' in t) throw new CopyValueError(column, t.problem);
  const fraction = t.fraction ? rint(Number(t.fraction) * 1_000_000) : 0;
  return BigInt(t.seconds - PG_EPOCH_MS) * 1000n + BigInt(fraction);
}

const HEX = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) HEX[48 + i] = i;
for (let i = 0; i < 6; i++) HEX[97 + i] = HEX[65 + i] = 10 + i;

/** Writes a canonical 8-4-4-4-12 UUID (either case) as its 16 bytes at `at`; false when `v` is not one. */
function writeUuid(buf: Buffer, at: number, v: string): boolean {
  if (v.length !== 36) return false;
  let o = at;
  for (let i = 0; i < 36;) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (v.charCodeAt(i) !== 45) return false;
      i++;
      continue;
    }
    const a = v.charCodeAt(i);
    const b = v.charCodeAt(i + 1);
    const hi = a < 128 ? (HEX[a] as number) : -1;
    const lo = b < 128 ? (HEX[b] as number) : -1;
    if (hi < 0 || lo < 0) return false;
    buf[o++] = (hi << 4) | lo;
    i += 2;
  }
  return true;
}

const INT8_MIN = -(2n ** 63n);
const INT8_MAX = 2n ** 63n - 1n;

/** An integer value as a bigint, or a `CopyValueError` naming `column`. */
function integerOf(v: CopyValue, column: string): bigint {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?\d{1,19}$/.test(v)) return BigInt(v);
  throw new CopyValueError(column, `not an integer: ${JSON.stringify(String(v)).slice(0, 40)}`);
}

/**
 * Rows as binary `COPY` tuples, one after another in one buffer (no header or trailer:
 * `copyBinary` adds them, so tuples made at different times can be sent together). `types[i]`
 * is the type of column `columns[i]`; `null` is SQL NULL in any column. With `ends`, the byte
 * offset after each row's tuple is pushed to it (to cut the buffer into one tuple per row).
 * Throws `CopyValueError` naming the column of the first value it cannot carry; the buffer is
 * then not returned.
 */
export function binaryTuples(
  rows: readonly CopyValue[][],
  columns: readonly string[],
  types: readonly BinaryType[],
  ends?: number[],
): Buffer {
  let buf = Buffer.allocUnsafe(16 * 1024);
  let n = 0;
  const room = (need: number) => {
    if (n + need <= buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(n + need, buf.length * 2));
    buf.copy(grown, 0, 0, n);
    buf = grown;
  };
  for (const r of rows) {
    if (r.length !== types.length) throw new CopyValueError('(row)', `${r.length} values for ${types.length} columns`);
    room(2);
    buf.writeInt16BE(types.length, n);
    n += 2;
    for (let i = 0; i < types.length; i++) {
      const v = r[i] as CopyValue;
      const column = columns[i] as string;
      if (v === null) {
        room(4);
        buf.writeInt32BE(-1, n);
        n += 4;
        continue;
      }
      switch (types[i]) {
        case 'uuid':
          room(20);
          if (typeof v !== 'string' || !writeUuid(buf, n + 4, v))
            throw new CopyValueError(column, 'not a UUID in its 8-4-4-4-12 hex form');
          buf.writeInt32BE(16, n);
          n += 20;
          break;
        case 'text':
        case 'jsonb': {
          if (typeof v !== 'string') throw new CopyValueError(column, `not a string: ${typeof v}`);
          const version = types[i] === 'jsonb' ? 1 : 0;
          // at most 3 bytes of UTF-8 per UTF-16 unit (a lone surrogate becomes U+FFFD, as in text)
          room(4 + version + v.length * 3);
          if (version) buf[n + 4] = 1;
          const len = buf.write(v, n + 4 + version) + version;
          buf.writeInt32BE(len, n);
          n += 4 + len;
          break;
        }
        case 'timestamptz':
          if (typeof v !== 'string') throw new CopyValueError(column, `not a date-time string: ${typeof v}`);
          room(12);
          buf.writeInt32BE(8, n);
          buf.writeBigInt64BE(timestamptzMicros(v, column), n + 4);
          n += 12;
          break;
        case 'int4': {
          const x = integerOf(v, column);
          if (x < -2147483648n || x > 2147483647n) throw new CopyValueError(column, `out of range for integer: ${x}`);
          room(8);
          buf.writeInt32BE(4, n);
          buf.writeInt32BE(Number(x), n + 4);
          n += 8;
          break;
        }
        case 'int8': {
          const x = integerOf(v, column);
          if (x < INT8_MIN || x > INT8_MAX) throw new CopyValueError(column, `out of range for bigint: ${x}`);
          room(12);
          buf.writeInt32BE(8, n);
          buf.writeBigInt64BE(x, n + 4);
          n += 12;
          break;
        }
        default:
          throw new CopyValueError(column, `no binary form for type ${String(types[i])}`);
      }
    }
    ends?.push(n);
  }
  return buf.subarray(0, n);
}

/**
 * `COPY table (columns) FROM STDIN (FORMAT binary)` of `tuples` (`binaryTuples`' output, or
 * several joined) on `client`, inside the caller's transaction when it has one. Fails as a whole,
 * as one `INSERT` would.
 */
export async function copyBinary(
  client: pg.PoolClient,
  table: string,
  columns: readonly string[],
  tuples: Buffer,
): Promise<void> {
  const stream = client.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN (FORMAT binary)`));
  await pipeline(Readable.from([COPY_BINARY_HEADER, tuples, COPY_BINARY_TRAILER]), stream);
}
