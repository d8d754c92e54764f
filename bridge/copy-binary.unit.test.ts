import fc from 'fast-check';
import {
  binaryTuples,
  COPY_BINARY_HEADER,
  COPY_BINARY_TRAILER,
  timestamptzMicros,
  type BinaryType,
  type CopyValue,
  CopyValueError,
} from './copy-binary';
import { STAGING_COLUMN_TYPES, STAGING_COLUMNS } from './log-lines';

/**
 * A decoder of the binary `COPY` tuples as PostgreSQL documents them (`COPY`, "Binary Format"):
 * a 16-bit field count, then per field a 32-bit length (-1: NULL) and its bytes.
 */
function decode(buf: Buffer, types: readonly BinaryType[]): Array<Array<string | null>> {
  const rows: Array<Array<string | null>> = [];
  let at = 0;
  while (at < buf.length) {
    const count = buf.readInt16BE(at);
    at += 2;
    expect(count).toBe(types.length);
    const row: Array<string | null> = [];
    for (let i = 0; i < count; i++) {
      const len = buf.readInt32BE(at);
      at += 4;
      if (len === -1) {
        row.push(null);
        continue;
      }
      const bytes = buf.subarray(at, at + len);
      at += len;
      switch (types[i]) {
        case 'uuid':
          expect(len).toBe(16);
          row.push(bytes.toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-'));
          break;
        case 'jsonb':
          expect(bytes[0]).toBe(1); // JSONB's version byte
          row.push(bytes.subarray(1).toString('utf8'));
          break;
        case 'text':
          row.push(bytes.toString('utf8'));
          break;
        case 'int4':
          expect(len).toBe(4);
          row.push(String(bytes.readInt32BE(0)));
          break;
        default: // int8, timestamptz
          expect(len).toBe(8);
          row.push(String(bytes.readBigInt64BE(0)));
      }
    }
    rows.push(row);
  }
  return rows;
}

const PG_EPOCH_MS = Date.parse('2000-01-01T00:00:00Z');

describe('binary COPY tuples', () => {
  const types: BinaryType[] = ['uuid', 'text', 'jsonb', 'int4', 'int8', 'timestamptz'];
  const columns = ['u', 't', 'j', 'i', 'b', 'ts'];

  it('property: any row comes back field by field from the documented format; lone surrogates as U+FFFD, as in text', () => {
    const value = (t: BinaryType): fc.Arbitrary<CopyValue> =>
      fc.option(
        {
          uuid: fc.uuid().chain((u) => fc.constantFrom(u, u.toUpperCase())),
          text: fc.string({ unit: 'binary', maxLength: 40 }),
          jsonb: fc.jsonValue().map((v) => JSON.stringify(v)),
          int4: fc.integer(),
          int8: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
          timestamptz: fc
            .date({ noInvalidDate: true, min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T00:00:00Z') })
            .map((d) => d.toISOString()),
        }[t] as fc.Arbitrary<CopyValue>,
        { nil: null },
      );
    fc.assert(
      fc.property(fc.array(fc.tuple(...types.map(value)), { minLength: 1, maxLength: 8 }), (rows) => {
        const ends: number[] = [];
        const buf = binaryTuples(rows, columns, types, ends);
        expect(ends).toHaveLength(rows.length);
        expect(ends.at(-1)).toBe(buf.length);
        const expected = rows.map((r) =>
          r.map((v, i) => {
            if (v === null) return null;
            if (types[i] === 'uuid') return (v as string).toLowerCase();
            if (types[i] === 'timestamptz') return String(BigInt(Date.parse(v as string) - PG_EPOCH_MS) * 1000n);
            return Buffer.from(String(v), 'utf8').toString('utf8');
          }),
        );
        expect(decode(buf, types)).toEqual(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('the header and trailer are the documented signature, flags, extension length and end marker', () => {
    expect(COPY_BINARY_HEADER.subarray(0, 11).toString('latin1')).toBe('PGCOPY\n\xff\r\n\0');
    expect(COPY_BINARY_HEADER.readInt32BE(11)).toBe(0); // flags: no OIDs
    expect(COPY_BINARY_HEADER.readInt32BE(15)).toBe(0); // no header extension
    expect(COPY_BINARY_TRAILER.readInt16BE(0)).toBe(-1);
  });

  it('property: a date-time is the same instant in every shape the wire checks accept (offsets, no seconds, fractions)', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('0100-01-01T00:00:00Z'), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true }),
        fc.integer({ min: -(15 * 60 + 59), max: 15 * 60 + 59 }),
        (d, offset) => {
          const iso = d.toISOString(); // the fast path
          const micros = BigInt(d.getTime() - PG_EPOCH_MS) * 1000n;
          expect(timestamptzMicros(iso)).toBe(micros);
          // the same instant as local time at `offset` minutes east of UTC: the general path
          const local = new Date(d.getTime() + offset * 60_000).toISOString();
          const sign = offset < 0 ? '-' : '+';
          const zone = `${sign}${String(Math.trunc(Math.abs(offset) / 60)).padStart(2, '0')}:${String(Math.abs(offset) % 60).padStart(2, '0')}`;
          expect(timestamptzMicros(`${local.slice(0, 23)}${zone}`)).toBe(micros);
          expect(timestamptzMicros(`${local.slice(0, 23)}000${zone.replace(':', '')}`)).toBe(micros);
          expect(timestamptzMicros(`${local.slice(0, 19)}${zone}`)).toBe(
            micros - BigInt(d.getUTCMilliseconds()) * 1000n,
          );
        },
      ),
      { numRuns: 500 },
    );
  });

  it('rounds a fraction of a second to microseconds as PostgreSQL does (halves to even, after the double product)', () => {
    const base = timestamptzMicros('2026-03-01T10:00:00Z');
    expect(timestamptzMicros('2026-03-01T10:00:00.0050005Z') - base).toBe(5000n); // 5000.5 → even
    expect(timestamptzMicros('2026-03-01T10:00:00.0150005Z') - base).toBe(15000n); // 15000.5 → even
    expect(timestamptzMicros('2026-03-01T10:00:00.0000025Z') - base).toBe(2n); // 2.5 → even
    expect(timestamptzMicros('2026-03-01T10:00:00.9999999Z') - base).toBe(1_000_000n); // carries into the second
    expect(timestamptzMicros('2026-03-01T10:00Z')).toBe(base);
  });

  it('a value binary COPY cannot carry as text would is a CopyValueError naming its column, before PostgreSQL sees it', () => {
    const row = (column: number, value: CopyValue): CopyValue[] => {
      const r: CopyValue[] = [
        '6f1c2a1e-8d7b-4c2a-9f3e-1a2b3c4d5e6f',
        't',
        '1',
        '2026-03-01T10:00:00Z',
        'o',
        '6f1c2a1e-8d7b-4c2a-9f3e-1a2b3c4d5e6f',
        null,
        null,
        '{}',
        'k',
        0,
        '0',
        '2026-03-01T10:00:00.456Z',
        null,
        null,
        null,
      ];
      r[column] = value;
      return r;
    };
    /** The column a CopyValueError names (`undefined`: encoded; anything else thrown: its name). */
    const problem = (column: number, value: CopyValue) => {
      try {
        binaryTuples([row(column, value)], STAGING_COLUMNS, STAGING_COLUMN_TYPES);
        return undefined;
      } catch (err) {
        return err instanceof CopyValueError && err.code === 'INVALID_FIELD' ? err.column : String(err);
      }
    };
    expect(problem(0, '{6f1c2a1e-8d7b-4c2a-9f3e-1a2b3c4d5e6f}')).toBe('event_id');
    expect(problem(5, '6f1c2a1e8d7b4c2a9f3e1a2b3c4d5e6f')).toBe('correlacao_id');
    expect(problem(3, '2026-02-30T10:00:00Z')).toBe('timestamp');
    expect(problem(3, '2026-03-01T24:00:00Z')).toBe('timestamp');
    expect(problem(3, '2026-03-01T10:00:00')).toBe('timestamp'); // no zone: the session's would apply
    expect(problem(3, 'yesterday')).toBe('timestamp');
    expect(problem(10, 2 ** 31)).toBe('kafka_partition');
    expect(problem(11, '9223372036854775808')).toBe('kafka_offset');
    expect(problem(11, '12a')).toBe('kafka_offset');
    expect(problem(1, 7)).toBe('tipo');
    expect(problem(12, 1_700_000_000_000)).toBe('publicado_em');
    expect(problem(13, 'a-session')).toBe('ordem_sessao');
    expect(problem(14, 1.5)).toBe('ordem_contador');
    expect(problem(11, '0')).toBeUndefined();
  });
});
