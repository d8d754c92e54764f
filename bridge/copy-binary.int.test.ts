import fc from 'fast-check';
import type pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../test/harness';
import { binaryTuples, copyBinary, type CopyValue } from './copy-binary';
import { LOG_COLUMN_TYPES, LOG_COLUMNS, STAGING_COLUMN_TYPES, STAGING_COLUMNS } from './log-lines';
import { refusalOf } from './refused-rows';

/**
 * Held events reach the log, and staged chunks the staging table, as binary `COPY` tuples; when a
 * chunk cannot go that way, an `INSERT` hands PostgreSQL the values as text. The same row must
 * become the same stored values either way, and a row PostgreSQL refuses in one must be refused
 * in the other, with a SQLSTATE the bridge quarantines.
 */
describe.each([
  ['core.event_log', LOG_COLUMNS, LOG_COLUMN_TYPES],
  ['core.event_staging', STAGING_COLUMNS, STAGING_COLUMN_TYPES],
] as const)('binary COPY into %s against PostgreSQL reading the same values as text', (table, columns, types) => {
  let db: TestDatabase;
  // two tables with the columns, types and precision (timestamp(n), varchar(n)) of `table`: one
  // filled by text, one by binary
  beforeAll(async () => {
    db = await createTestDatabase();
    for (const t of ['as_text', 'as_binary'])
      await db.pool.query(`CREATE TABLE public.${t} AS SELECT ${columns.join(', ')} FROM ${table} WITH NO DATA`);
  });

  const two = (n: number) => String(n).padStart(2, '0');

  // Halves of a microsecond, and fractions that carry into the next second. `.0050005` reads as
  // exactly 5000.5 µs: rounded to even that is 5000, rounded up 5001. The column's centiseconds
  // hide the difference after 2000 (both stored as .01), but before 2000 PostgreSQL rounds the
  // negative microseconds by their magnitude: 5000 is stored as .00 and 5001 as .01 — so a date
  // before 2000 with this fraction tells the two roundings apart.
  const EDGE_FRACTIONS = [
    '.0000005',
    '.0000025',
    '.0050005',
    '.0150005',
    '.9999995',
    '.9999999',
    '.005',
    '.015',
    '.995',
  ];

  /** One row of the log's columns with `timestamp` as given. */
  const rowAt = (timestamp: string, i = 0): CopyValue[] =>
    [
      '6f1c2a1e-8d7b-4c2a-9f3e-1a2b3c4d5e6f',
      'demanda.recebida',
      '1',
      timestamp,
      'D-1a',
      '6f1c2a1e-8d7b-4c2a-9f3e-1a2b3c4d5e6f',
      null,
      null,
      '{}',
      'feromonios.demanda.recebida',
      0,
      String(i),
      ...(columns.length > 12 ? ['2026-03-01T10:00:00.456Z', '0b4c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3', 7, 5] : []),
    ].slice(0, columns.length);

  /** Every shape of date-time the wire checks accept (sdk/wire/storable.ts), at any instant they accept. */
  const timestamp: fc.Arbitrary<string> = fc
    .record({
      date: fc.date({
        min: new Date('0001-01-02T00:00:00Z'),
        max: new Date('9999-12-30T00:00:00Z'),
        noInvalidDate: true,
      }),
      seconds: fc.boolean(),
      fraction: fc.oneof(
        fc.constant(''),
        fc.stringMatching(/^\.\d{1,9}$/),
        // halves at the microsecond, where rounding to even and up differ, and carries into the second
        fc.constantFrom(...EDGE_FRACTIONS),
      ),
      zone: fc.oneof(
        fc.constant('Z'),
        fc
          .tuple(
            fc.constantFrom('+', '-'),
            fc.integer({ min: 0, max: 15 }),
            fc.integer({ min: 0, max: 59 }),
            fc.boolean(),
          )
          .map(([s, h, m, colon]) => `${s}${two(h)}${colon ? ':' : ''}${two(m)}`),
      ),
    })
    .map(({ date, seconds, fraction, zone }) => {
      const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
      if (!seconds) return `${iso.slice(0, 16)}${zone}`;
      return `${iso.slice(0, 19)}${fraction}${zone}`;
    });

  const uuid = fc.uuid().chain((u) => fc.constantFrom(u, u.toUpperCase()));
  const text = (max: number) =>
    fc
      .oneof(
        fc.string({ unit: 'binary', maxLength: max }),
        fc.constantFrom('\\N', '\\', '\t', '\n', '\r\n', 'a\\tb', 'ã\ud800', '\u001b[31m', ''),
      )
      .map((s) => s.split('\u0000').join('')); // a NUL is refused in both: below
  const logRow = fc.tuple(
    uuid,
    text(40),
    text(20),
    timestamp,
    text(40),
    uuid,
    fc.option(uuid, { nil: null }),
    fc.option(uuid, { nil: null }),
    fc
      .dictionary(text(12), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 })
      .map((p) => JSON.stringify(p).split('\\u0000').join('')),
    text(60),
    fc.oneof(fc.integer(), fc.constantFrom(-2147483648, 2147483647)),
    fc.oneof(
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
      fc.constantFrom('0', '9223372036854775807'),
    ),
  );
  // where and when it was published, and its producer session's order (counters up to 2^53 - 1)
  const stagingTail = fc.tuple(
    fc.oneof(
      fc
        .date({ min: new Date(0), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true })
        .map((d) => d.toISOString()),
      timestamp,
    ),
    fc.option(fc.uuid(), { nil: null }),
    fc.option(fc.maxSafeNat(), { nil: null }),
    fc.option(fc.maxSafeNat(), { nil: null }),
  );
  const row: fc.Arbitrary<CopyValue[]> =
    columns.length > 12 ? fc.tuple(logRow, stagingTail).map(([l, t]) => [...l, ...t]) : logRow.map((l) => [...l]);

  /** The rows of a table as PostgreSQL's text output of every column, in the rows' order. */
  const stored = async (table: 'as_text' | 'as_binary'): Promise<string[][]> => {
    const { rows } = await db.pool.query<{ r: string[] }>(
      `SELECT ARRAY[${columns.map((c) => `${c}::text`).join(', ')}] AS r FROM public.${table} ORDER BY kafka_offset, event_id`,
    );
    return rows.map((r) => r.r);
  };

  /** Each row by one `INSERT` of its values as text parameters: PostgreSQL's text input of each column's type. */
  const insertAsText = async (client: pg.PoolClient, rows: CopyValue[][]) => {
    const params = columns.map((_c, i) => `$${i + 1}`).join(', ');
    for (const r of rows)
      await client.query(
        `INSERT INTO public.as_text (${columns.join(', ')}) VALUES (${params})`,
        r.map((v) => (v === null ? null : String(v))),
      );
  };

  /** Loads `rows` into both tables (emptied first); each load's refusal SQLSTATE, or undefined. */
  const load = async (rows: CopyValue[][]): Promise<{ text?: string; binary?: string }> => {
    const client = await db.pool.connect();
    const attempt = async (fn: () => Promise<void>) => {
      try {
        await client.query('BEGIN');
        await fn();
        await client.query('COMMIT');
        return undefined;
      } catch (err) {
        await client.query('ROLLBACK');
        const state = refusalOf(err);
        if (!state) throw err;
        return state;
      }
    };
    try {
      await client.query('TRUNCATE public.as_text, public.as_binary');
      return {
        text: await attempt(() => insertAsText(client, rows)),
        binary: await attempt(() =>
          copyBinary(client, 'public.as_binary', columns, binaryTuples(rows, columns, types)),
        ),
      };
    } finally {
      client.release();
    }
  };

  it('property: any row the wire checks let through is stored the same by binary COPY as by PostgreSQL reading it as text (or refused by both)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 6 }), async (rows) => {
        const refused = await load(rows);
        // a type or version longer than its column, or JSON PostgreSQL does not take: refused by both, alike
        expect(refused.binary).toBe(refused.text);
        // (refused rows leave both tables empty: compared alike)
        expect(await stored('as_binary')).toEqual(await stored('as_text'));
      }),
      { numRuns: 150 },
    );
  });

  it('the edges of a date-time — halves of a microsecond, carries, offsets, years 0001 and 9999, before and after 2000 — are stored alike', async () => {
    const times = ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00-15:59', '9999-12-31T23:59:59.99Z', '2026-03-01T10:00Z'];
    for (const day of ['1969-07-20T20:17:40', '1999-12-31T23:59:59', '2000-01-01T00:00:00', '2026-03-01T10:00:00'])
      for (const f of EDGE_FRACTIONS) for (const zone of ['Z', '-03:00', '+0530']) times.push(`${day}${f}${zone}`);
    const refused = await load(times.map((t, i) => rowAt(t, i)));
    expect(refused).toEqual({ text: undefined, binary: undefined });
    const text = await stored('as_text');
    expect(text).toHaveLength(times.length);
    expect(await stored('as_binary')).toEqual(text);
  });

  it.each([
    ['a NUL in a text', 1, 'a\u0000b'],
    ['a type longer than varchar(255)', 1, 'x'.repeat(256)],
    ['a schema version longer than varchar(20)', 2, '1.0.0-'.repeat(4)],
    ['a payload that is not JSON', 8, '{"a":'],
    ['a payload with \\u0000 (JSONB holds no NUL)', 8, '{"a":"\\u0000"}'],
  ])(
    '%s is refused by both formats with the same SQLSTATE (quarantined, never retried)',
    async (_what, column, value) => {
      const good = rowAt('2026-03-01T10:00:00.123Z');
      expect(await load([good])).toEqual({ text: undefined, binary: undefined });
      const bad = [...good];
      bad[column] = value;
      const refused = await load([bad]);
      expect(refused.text).toMatch(/^(22|23|54)/);
      expect(refused.binary).toBe(refused.text);
    },
  );
});
