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
        const decoded = decode(copyLines(rows));
        expect(decoded).toEqual(rows.map((r) => r.map((v) => (v === null ? null : String(v)))));
      }),
      { numRuns: 2000 },
    );
  });

  it('the literal text \\N is data, not NULL', () => {
    expect(copyField('\\N')).toBe('\\\\N');
    expect(copyField(null)).toBe('\\N');
  });
});
