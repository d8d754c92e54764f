import fc from 'fast-check';
import { createTestDatabase, type TestDatabase } from '../test/harness';
import { copyRows } from './copy-text';
import { refusalOf } from './refused-rows';

describe('COPY text format against PostgreSQL (the staging fast path)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
    await db.pool.query('CREATE TABLE public.copy_probe (i int, t text, j jsonb)');
  });

  it('hostile texts — tabs, newlines, backslashes, \\N, control characters, 100 KB — come back exactly, in text and in JSON', async () => {
    const text = fc
      .oneof(
        fc.string({ unit: 'binary' }),
        fc.constantFrom('\\N', '\\', '\t', '\n', '\r\n', '\\\\N', 'a\\tb', '\u001b[31m', 'x'.repeat(100_000)),
      )
      .map((s) => s.split('\u0000').join('')) // PostgreSQL text holds no NUL: refused, below
      .filter((s) => Buffer.from(s, 'utf8').toString('utf8') === s); // lone surrogates: the SDK's storable checks refuse them first
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(text, { nil: null }), { minLength: 1, maxLength: 8 }), async (values) => {
        const client = await db.pool.connect();
        try {
          await client.query('TRUNCATE public.copy_probe');
          await copyRows(
            client,
            'public.copy_probe',
            ['i', 't', 'j'],
            values.map((v, i) => [i, v, v === null ? null : JSON.stringify({ v })]),
          );
          const { rows } = await client.query<{ t: string | null; j: { v: string } | null }>(
            'SELECT t, j FROM public.copy_probe ORDER BY i',
          );
          expect(rows.map((r) => r.t)).toEqual(values);
          expect(rows.map((r) => r.j?.v ?? null)).toEqual(values);
        } finally {
          client.release();
        }
      }),
      { numRuns: 60 },
    );
  });

  it('a NUL in a text is refused for its content (a SQLSTATE the bridge isolates and quarantines), not retried', async () => {
    const client = await db.pool.connect();
    try {
      const err = await copyRows(client, 'public.copy_probe', ['i', 't'], [[1, 'a\u0000b']]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refusalOf(err)).toMatch(/^22/);
      // the connection is usable afterwards
      expect((await client.query<{ ok: number }>('SELECT 1 AS ok')).rows[0]?.ok).toBe(1);
    } finally {
      client.release();
    }
  });
});
