/**
 * What the CLI prints: human tables by default, JSON with `--json` (one document on stdout,
 * bigints as strings). Messages and progress go to stderr, so stdout stays data.
 */
export interface Output {
  json: boolean;
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
}

export function printJson(o: Output, value: unknown): void {
  o.out.write(`${JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`);
}

/** A table with a header row; cells are cut to `max` characters, columns padded. */
export function printTable(o: Output, headers: string[], rows: unknown[][], max = 60): void {
  const text = rows.map((r) => r.map((c) => cell(c, max)));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  o.out.write(`${line(headers)}\n`);
  for (const r of text) o.out.write(`${line(r)}\n`);
  if (rows.length === 0) o.out.write('(none)\n');
}

/** `key: value` lines. */
export function printFields(o: Output, fields: Array<[string, unknown]>): void {
  const w = Math.max(...fields.map(([k]) => k.length));
  for (const [k, v] of fields) o.out.write(`${`${k}:`.padEnd(w + 1)} ${cell(v, 200)}\n`);
}

export function note(o: Output, message: string): void {
  o.err.write(`${message}\n`);
}

function cell(v: unknown, max: number): string {
  const s =
    v === null || v === undefined
      ? '-'
      : typeof v === 'string'
        ? v
        : JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
  const one = s.replace(/\s+/g, ' ');
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}
