import fc from 'fast-check';
import { copyField, copyLines, type CopyValue } from './copy-text';

/**
 * A decoder of COPY's text format as PostgreSQL documents it (`COPY`, "Text Format"): fields
 * split on raw tabs, rows on raw newlines, `\N` alone is NULL, backslash escapes decoded.
 */
function decode(text: string): Array<Array<string | null>> {
  const rows: Array<Array<string | null>> = [];
  for (const line of text.split('\n').slice(0, -1))
    rows.push(
      line
        .split('\t')
        .map((f) =>
          f === '\\N'
            ? null
            : f.replace(/\\(.)/g, (_m, c: string) => ({ n: '\n', r: '\r', t: '\t', '\\': '\\' })[c] ?? c),
        ),
    );
  return rows;
}

describe('COPY text format', () => {
  it('any string, number or null survives as exactly one field of one row', () => {
    const value: fc.Arbitrary<CopyValue> = fc.oneof(
      fc.string({ unit: 'binary' }), // tabs, newlines, backslashes, NUL, lone surrogates
      fc.constantFrom('\\N', '\\', '\t', '\n', '\r\n', '\\\\N', 'a\\tb', '{"a":"x\\ny"}', ''),
      fc.integer(),
      fc.double(), // NaN, Infinity, -0, 1e+21: printed as they are, nothing to escape
      fc.bigInt(),
      fc.constant(null),
    );
    fc.assert(
      fc.property(fc.array(fc.array(value, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }), (rows) => {
        const decoded = decode(copyLines(rows).toString('utf8'));
        expect(decoded).toEqual(rows.map((r) => r.map((v) => (v === null ? null : String(v)))));
      }),
      { numRuns: 2000 },
    );
  });

  it('the bytes are the UTF-8 of the lines joined as text (lone surrogates as U+FFFD), however long the rows', () => {
    const value: fc.Arbitrary<CopyValue> = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: 'grapheme', maxLength: 20_000 }), // past the first buffer: it grows
      fc.integer(),
      fc.double(),
      fc.constant(null),
    );
    fc.assert(
      fc.property(fc.array(fc.array(value, { minLength: 1, maxLength: 6 }), { maxLength: 8 }), (rows) => {
        const text = rows.map((r) => r.map(copyField).join('\t') + '\n').join('');
        expect(copyLines(rows).equals(Buffer.from(text, 'utf8'))).toBe(true);
      }),
      { numRuns: 500 },
    );
    // past the first 16 KB, twice over, with multi-byte characters and a lone surrogate
    const long: CopyValue[][] = [
      ['ã'.repeat(30_000) + '\ud800', 1],
      ['x\ty', null],
    ];
    expect(copyLines(long).equals(Buffer.from(`${'ã'.repeat(30_000)}\ud800\t1\nx\\ty\t\\N\n`, 'utf8'))).toBe(true);
  });

  it("with ends, each row's line is the text between two of them, the whole text cut with none lost", () => {
    const value: fc.Arbitrary<CopyValue> = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: 'grapheme', maxLength: 9_000 }), // past the first buffer: it grows
      fc.integer(),
      fc.constant(null),
    );
    fc.assert(
      fc.property(fc.array(fc.array(value, { minLength: 1, maxLength: 6 }), { maxLength: 8 }), (rows) => {
        const ends: number[] = [];
        const text = copyLines(rows, ends);
        expect(ends).toHaveLength(rows.length);
        expect(ends.at(-1) ?? 0).toBe(text.length);
        rows.forEach((r, i) => {
          const line = text.subarray(i === 0 ? 0 : ends[i - 1], ends[i]);
          expect(line.equals(copyLines([r]))).toBe(true);
        });
      }),
      { numRuns: 500 },
    );
  });

  it('the literal text \\N is data, not NULL', () => {
    expect(copyField('\\N')).toBe('\\\\N');
    expect(copyField(null)).toBe('\\N');
  });
});
