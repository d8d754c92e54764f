import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/** A value of one column of a `COPY … FROM STDIN` row: `null` is SQL NULL. */
export type CopyValue = string | number | bigint | null;

/** Characters the text format of COPY gives a meaning to, and their escapes. */
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
const SPECIAL = /[\\\n\r\t]/;
const SPECIALS = new RegExp(SPECIAL.source, 'g');
const escape = (c: string) => ESCAPES[c] as string;

/**
 * One field in PostgreSQL's COPY text format: `\N` for NULL, backslash, newline, carriage return
 * and tab escaped, everything else as is (the connection's encoding is UTF-8). The only way a
 * value could end a field or a row early — a raw tab or newline — is escaped, so any string
 * stays one field (tests: bridge/copy-text.unit.test.ts against a decoder of the format).
 */
export function copyField(v: CopyValue): string {
  if (v === null) return '\\N';
  // a number or bigint prints as digits, sign, '.', 'e', 'NaN' or 'Infinity': nothing to escape
  if (typeof v !== 'string') return String(v);
  // most fields hold none of the four characters: a test is cheaper than a replace that finds nothing
  return SPECIAL.test(v) ? v.replace(SPECIALS, escape) : v;
}

/**
 * Rows as COPY text lines (tab-separated fields, newline-terminated), UTF-8 encoded. Each field
 * is written straight into one growing buffer: joining the fields into a line, the lines into a
 * text and encoding the text cost ~2.5× as much per row (a staging chunk's rows, 2026-12-06).
 * A lone surrogate becomes U+FFFD, as `Buffer.from` of the text would make it. With `ends`, the
 * byte offset after each row's line is pushed to it (to cut the text into one line per row).
 */
export function copyLines(rows: CopyValue[][], ends?: number[]): Buffer {
  let buf = Buffer.allocUnsafe(16 * 1024);
  let n = 0;
  for (const r of rows) {
    for (let i = 0; i < r.length; i++) {
      const f = copyField(r[i] as CopyValue);
      // at most 3 bytes of UTF-8 per UTF-16 unit, and the separator
      const need = n + f.length * 3 + 1;
      if (need > buf.length) {
        const grown = Buffer.allocUnsafe(Math.max(need, buf.length * 2));
        buf.copy(grown, 0, 0, n);
        buf = grown;
      }
      n += buf.write(f, n);
      buf[n++] = i === r.length - 1 ? 0x0a : 0x09;
    }
    ends?.push(n);
  }
  return buf.subarray(0, n);
}

/**
 * `COPY table (columns) FROM STDIN` of `rows` on `client` (inside the caller's transaction when
 * it has one). One round trip of pre-formatted text: no parameter arrays to build and parse,
 * the fastest way PostgreSQL takes rows. `rows` may be text `copyLines` made already (built
 * before a lock, say). Fails as a whole (a constraint or a bad value aborts the COPY), like one
 * INSERT would.
 */
export async function copyRows(
  client: pg.PoolClient,
  table: string,
  columns: readonly string[],
  rows: CopyValue[][] | Buffer,
): Promise<void> {
  const stream = client.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
  await pipeline(Readable.from([Buffer.isBuffer(rows) ? rows : copyLines(rows)]), stream);
}
