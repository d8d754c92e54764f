import fc from 'fast-check';
import { binaryTuples, CopyValueError } from './copy-binary';
import {
  heldLines,
  linesOf,
  LOG_COLUMN_TYPES,
  LOG_COLUMNS,
  publishMsOf,
  type HeldLine,
  type StagedRow,
} from './log-lines';

describe('publishMsOf (the record timestamp the sequencer orders by)', () => {
  const received = Date.parse('2026-12-01T12:00:00Z');
  /** As a staged row's `publicado_em` holds it. */
  const publishTimeOf = (ts: string | undefined, at: number) => new Date(publishMsOf(ts, at)).toISOString();

  it('keeps a real record timestamp', () => {
    expect(publishTimeOf(String(Date.parse('2026-12-01T11:59:59.123Z')), received)).toBe('2026-12-01T11:59:59.123Z');
    expect(publishTimeOf('0', received)).toBe('1970-01-01T00:00:00.000Z');
  });

  it.each([
    ['missing', undefined],
    ['-1 (no timestamp)', '-1'],
    ['not a number', 'abc'],
    ['beyond what a date holds', '9000000000000000'],
    ['beyond int64', '99999999999999999999'],
    ['a fraction', '1.5'],
  ])('uses the staging time for a timestamp that is %s', (_what, ts) => {
    expect(publishTimeOf(ts, received)).toBe(new Date(received).toISOString());
  });

  it('property: any string gives an ISO instant PostgreSQL stores, never throws', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.bigInt().map(String), fc.integer().map(String)), (ts) => {
        const iso = publishTimeOf(ts, received);
        expect(new Date(iso).toISOString()).toBe(iso);
      }),
    );
  });
});

describe('heldLines (held events as their log binary COPY tuples, ADR 0029)', () => {
  const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 30 }), fc.constantFrom('\t', '\n', '\\N', 'ã\ud800'));
  const uuidOrNull = fc.option(fc.uuid(), { nil: null });
  const row: fc.Arbitrary<StagedRow> = fc.record({
    event_id: fc.uuid(),
    tipo: text,
    versao_schema: text,
    timestamp: fc
      .date({ min: new Date('0001-01-02T00:00:00Z'), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true })
      .chain((d) => fc.constantFrom(d.toISOString(), `${d.toISOString().slice(0, 19)}-03:00`)),
    origem: text,
    correlacao_id: fc.uuid(),
    causation_id: uuidOrNull,
    tenant_id: uuidOrNull,
    payload: fc.dictionary(text, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }).map((p) => JSON.stringify(p)),
    kafka_topic: text,
    kafka_partition: fc.nat(),
    kafka_offset: fc.bigInt({ min: 0n, max: 2n ** 63n - 1n }).map(String),
    publicado_em: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    ordem_sessao: uuidOrNull,
    ordem_contador: fc.option(fc.nat(), { nil: null }),
    ordem_firme: fc.option(fc.nat(), { nil: null }),
  });

  it("property: each line is the row's values of the log's columns (LOG_COLUMNS, by name) as a binary COPY tuple, with its id and type; the lines joined are the chunk's tuples", () => {
    fc.assert(
      fc.property(fc.array(row, { maxLength: 12 }), (rows) => {
        const lines = heldLines(rows);
        expect(lines.map((l) => [l.event_id, l.tipo])).toEqual(rows.map((r) => [r.event_id, r.tipo]));
        // each value taken by the name of the column the log's COPY fills: a line out of order with
        // LOG_COLUMNS would put a value in another column
        const logValues = (r: StagedRow) => LOG_COLUMNS.map((c) => r[c]);
        const tuples = (rs: StagedRow[]) => binaryTuples(rs.map(logValues), LOG_COLUMNS, LOG_COLUMN_TYPES);
        rows.forEach((r, i) => expect(lines[i]?.line.equals(tuples([r]))).toBe(true));
        expect(Buffer.concat(lines.map((l) => l.line)).equals(tuples(rows))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('throws CopyValueError naming the column for a value the binary format cannot carry (the bridge then stages the chunk as text)', () => {
    const good = fc.sample(row, { numRuns: 1, seed: 7 })[0] as StagedRow;
    expect(() => heldLines([good])).not.toThrow();
    expect(() => heldLines([good, { ...good, timestamp: 'yesterday' }])).toThrow(CopyValueError);
    expect(() => heldLines([{ ...good, event_id: 'not-a-uuid' }])).toThrow(/column event_id: not a UUID/);
  });

  it("linesOf: the decode thread's lines when every event has one, else formatted here, else none (the chunk goes to the table as text)", () => {
    const [a, b] = fc.sample(row, { numRuns: 2, seed: 11 }) as [StagedRow, StagedRow];
    const [la, lb] = heldLines([a, b]) as [HeldLine, HeldLine];
    const fromThread = linesOf([
      { row: a, held: la },
      { row: b, held: lb },
    ]);
    expect(fromThread?.[0]).toBe(la); // the thread's own, not formatted again
    const formatted = linesOf([{ row: a, held: la }, { row: b }]);
    expect(formatted?.map((l) => l.line.toString('hex'))).toEqual([la.line.toString('hex'), lb.line.toString('hex')]);
    expect(linesOf([{ row: a }, { row: { ...b, timestamp: '2026-02-30T10:00:00Z' } }])).toBeUndefined();
  });
});
