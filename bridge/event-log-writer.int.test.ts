import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { createTestDatabase, type TestDatabase } from '../test/harness';
import { prepareLogChunk, stageEvents, writeEventLog, type LogRun } from './event-log-writer';
import { heldLines, type StagedRow } from './log-lines';

/**
 * `writeEventLog` against PostgreSQL with chunks that mix the two sources the sequencer writes
 * from (ADR 0029): events staged in `core.event_staging` and events held in the leader's
 * memory, interleaved event by event as they are when the memory overflowed into the table.
 */
describe('the log writer with staged and held events interleaved', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });

  let offset = 0;
  const row = (): StagedRow => ({
    event_id: randomUUID(),
    tipo: 'demanda.recebida',
    versao_schema: '1.0.0',
    timestamp: '2026-12-06T12:00:00.000Z',
    origem: 'D-1a',
    correlacao_id: randomUUID(),
    causation_id: null,
    tenant_id: null,
    payload: JSON.stringify({ demanda_id: randomUUID(), texto: 'a\tb\\N\n' }),
    kafka_topic: 'writer.demanda.recebida',
    kafka_partition: 0,
    kafka_offset: String(offset++),
    publicado_em: '2026-12-06T12:00:00.000Z',
    ordem_sessao: null,
    ordem_contador: null,
    ordem_firme: null,
  });

  /** Where an event of a chunk comes from, and what PostgreSQL already has of it. */
  type Kind = 'staged' | 'held' | 'held, already logged' | 'held and staged';

  /** The chunk's runs in its order, as the sequencer's `runsOf` makes them. */
  const runsOf = (chunk: Array<{ r: StagedRow; kind: Kind }>): LogRun[] => {
    const runs: LogRun[] = [];
    for (const { r, kind } of chunk) {
      const last = runs.at(-1);
      if (kind === 'staged') {
        if (last?.from === 'staging') last.ids.push(r.event_id);
        else runs.push({ from: 'staging', ids: [r.event_id] });
      } else if (last?.from === 'memory') last.rows.push(...heldLines([r]));
      else runs.push({ from: 'memory', rows: heldLines([r]) });
    }
    return runs;
  };

  it('property: every event once, sequence numbers in the chunk order with none burned, staged events moved', async () => {
    const kinds = fc.constantFrom<Kind>('staged', 'held', 'held, already logged', 'held and staged');
    await fc.assert(
      fc.asyncProperty(fc.array(kinds, { minLength: 1, maxLength: 40 }), async (ks) => {
        const chunk = ks.map((kind) => ({ r: row(), kind }));
        // what PostgreSQL holds before the write: staged rows, and rows logged by an earlier write
        const staged = chunk.filter((c) => c.kind === 'staged' || c.kind === 'held and staged').map((c) => c.r);
        if (staged.length > 0) await stageEvents(db.pool, staged);
        const earlier = chunk.filter((c) => c.kind === 'held, already logged').map((c) => c.r);
        if (earlier.length > 0)
          await writeEventLog(db.pool, await prepareLogChunk(db.pool, [{ from: 'memory', rows: heldLines(earlier) }]));
        const before = await db.pool.query<{ s: string | null }>(
          'SELECT max(sequence_number)::text AS s FROM core.event_log',
        );

        const runs = runsOf(chunk);
        const result = await writeEventLog(db.pool, await prepareLogChunk(db.pool, runs));

        const fresh = chunk.filter((c) => c.kind !== 'held, already logged').map((c) => c.r.event_id);
        expect(result.inserted.map((i) => i.event_id)).toEqual(fresh);
        expect(result.duplicates.sort()).toEqual(earlier.map((r) => r.event_id).sort());
        const { rows } = await db.pool.query<{ event_id: string; sequence_number: string }>(
          `SELECT l.event_id::text, l.sequence_number::text FROM core.event_log l
            WHERE l.sequence_number > $1 ORDER BY l.sequence_number`,
          [before.rows[0]?.s ?? '0'],
        );
        expect(rows.map((r) => r.event_id)).toEqual(fresh);
        // consecutive: a duplicate took no sequence number
        const first = BigInt(before.rows[0]?.s ?? '0') + 1n;
        expect(rows.map((r) => r.sequence_number)).toEqual(rows.map((_r, i) => (first + BigInt(i)).toString()));
        expect(result.lastSequence).toBe(rows.at(-1)?.sequence_number ?? null);
        // the staged events left staging; an event also held may still be staged (a chunk of
        // held events alone copies them): moved later, it is dropped without a sequence number
        const left = await db.pool.query<{ event_id: string }>(
          'SELECT event_id::text FROM core.event_staging WHERE event_id = ANY($1::uuid[])',
          [chunk.map((c) => c.r.event_id)],
        );
        const alsoHeld = new Set(chunk.filter((c) => c.kind === 'held and staged').map((c) => c.r.event_id));
        expect(left.rows.filter((r) => !alsoHeld.has(r.event_id))).toEqual([]);
        const later = await writeEventLog(db.pool, {
          runs: [{ from: 'staging', ids: left.rows.map((r) => r.event_id) }],
        });
        expect(later.inserted).toEqual([]);
        expect(later.duplicates).toHaveLength(left.rows.length);
      }),
      { numRuns: 40 },
    );
  });

  it.each([
    ['held events alone (the COPY fails with a unique violation, written again probed under the lock)', false],
    ['held and staged events interleaved', true],
  ])(
    "an event logged after the probe (another leader's last write), %s: dropped as a duplicate, the rest written",
    async (_what, interleaved) => {
      const [early, late, staged] = [row(), row(), row()];
      if (interleaved) await stageEvents(db.pool, [staged]);
      const chunk = await prepareLogChunk(
        db.pool,
        interleaved
          ? [
              { from: 'memory', rows: heldLines([early]) },
              { from: 'staging', ids: [staged.event_id] },
              { from: 'memory', rows: heldLines([late]) },
            ]
          : [{ from: 'memory', rows: heldLines([early, late]) }],
      );
      // probed: neither is in the log; now one is
      await writeEventLog(db.pool, await prepareLogChunk(db.pool, [{ from: 'memory', rows: heldLines([early]) }]));
      const result = await writeEventLog(db.pool, chunk);
      const fresh = interleaved ? [staged.event_id, late.event_id] : [late.event_id];
      expect(result.inserted.map((i) => i.event_id)).toEqual(fresh);
      expect(result.duplicates).toEqual([early.event_id]);
      const { rows } = await db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM core.event_log WHERE event_id = ANY($1::uuid[])',
        [[early.event_id, late.event_id, staged.event_id]],
      );
      expect(rows[0]?.n).toBe(fresh.length + 1);
    },
  );

  it('a held event of an interleaved chunk that PostgreSQL refuses fails the chunk whole: nothing of it is written', async () => {
    const good = row();
    const staged = row();
    await stageEvents(db.pool, [staged]);
    const refused = { ...row(), origem: 'a\u0000b' }; // PostgreSQL text holds no NUL
    const chunk = await prepareLogChunk(db.pool, [
      { from: 'memory', rows: heldLines([good]) },
      { from: 'staging', ids: [staged.event_id] },
      { from: 'memory', rows: heldLines([refused]) },
    ]);
    const err = await writeEventLog(db.pool, chunk).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeDefined();
    const { rowCount } = await db.pool.query('SELECT 1 FROM core.event_log WHERE event_id = ANY($1::uuid[])', [
      [good.event_id, staged.event_id, refused.event_id],
    ]);
    expect(rowCount).toBe(0);
    // the staged event is still staged: the sequencer's row-by-row isolation writes it next
    expect(
      (await db.pool.query('SELECT 1 FROM core.event_staging WHERE event_id = $1', [staged.event_id])).rowCount,
    ).toBe(1);
  });

  it('a chunk with a value binary COPY cannot carry is staged by the INSERT, PostgreSQL reading the value as text', async () => {
    // 24:00 is midnight of the next day to PostgreSQL; the wire checks refuse it, so the encoder
    // does not carry it (CopyValueError) and the chunk takes the INSERT, which PostgreSQL reads
    const plain = row();
    const odd = { ...row(), timestamp: '2026-12-06T24:00:00Z' };
    expect(await stageEvents(db.pool, [plain, odd])).toEqual({
      staged: expect.arrayContaining([plain.event_id, odd.event_id]) as unknown,
      duplicates: [],
    });
    const { rows } = await db.pool.query<{ event_id: string; t: string }>(
      `SELECT event_id::text, to_char("timestamp" AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') AS t
         FROM core.event_staging WHERE event_id = ANY($1::uuid[]) ORDER BY kafka_offset`,
      [[plain.event_id, odd.event_id]],
    );
    expect(rows).toEqual([
      { event_id: plain.event_id, t: '2026-12-06T12:00:00' },
      { event_id: odd.event_id, t: '2026-12-07T00:00:00' },
    ]);
  });
});
