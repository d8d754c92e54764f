import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { SchemaCatalog } from '../catalog/catalog';
import type { SchemaRegistry } from '../catalog/registry';
import { WireFormatError } from '../errors';
import { SAMPLE_PAYLOADS } from '../testing';
import { EventDecoder } from './event-decoder';
import { buildHeaders, encodeValue } from './wire-format';

const catalog = SchemaCatalog.load();
const versao = catalog.versao('demanda.categorizada', '1.0.0')!;
/** A registry that knows one schema id: the catalog's demanda.categorizada 1.0.0 (pure logic, no service). */
const registry = { schemaById: (id: number) => Promise.resolve(id === 7 ? versao.schemaText : '') } as SchemaRegistry;
const decoder = new EventDecoder(registry, catalog);

const record = (origem: string) => ({
  value: encodeValue(7, JSON.stringify(SAMPLE_PAYLOADS['demanda.categorizada'])),
  headers: buildHeaders({
    event_id: randomUUID(),
    tipo: 'demanda.categorizada',
    versao_schema: '1.0.0',
    timestamp: '2026-06-15T10:30:10Z',
    origem,
    correlacao_id: randomUUID(),
    causation_id: null,
  }),
});

const reasonOf = (err: unknown) =>
  err instanceof WireFormatError ? err.reason : `not a WireFormatError: ${String(err)}`;

/**
 * `ce_source` as a producer that is not the SDK may send it (issue #22): only the catalog's
 * publishers of the type pass; anything else is refused with a reason, never decoded.
 */
describe('the decoder and ce_source', () => {
  it('decodes the publisher of the type and nothing else', async () => {
    await expect(decoder.decode(record('D-3'))).resolves.toMatchObject({ origem: 'D-3' });
    await expect(decoder.decode(record('D-1a')).catch(reasonOf)).resolves.toBe('origem-not-allowed');
  });

  it('property: a hostile ce_source (control characters, NUL, personal data, oversized, near misses) is refused with a reason', async () => {
    const hostile = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.string({ unit: fc.constantFrom('\u0000', '\u0007', '\n', '\u202e', 'D', '-', '3'), maxLength: 10 }),
      fc.constantFrom('maria@prefeitura.gov.br', '529.982.247-25', '52998224725', 'd-3', 'D-3 ', ' D-3', 'D-30', 'D_3'),
      fc.string({ minLength: 101, maxLength: 2000 }),
    );
    await fc.assert(
      fc.asyncProperty(hostile, async (origem) => {
        fc.pre(origem !== 'D-3');
        const reason = await decoder.decode(record(origem)).then(() => 'decoded', reasonOf);
        expect(['missing-header', 'invalid-header', 'origem-not-allowed']).toContain(reason); // an empty one is missing
      }),
      { numRuns: 300 },
    );
  });
});

/**
 * `decodeKnown`, the path without a promise the consumers and the bridge take once a schema id is
 * resolved: the same event or the same refusal as `decode`, for any record; `undefined` (and
 * nothing asked of the registry) while its schema id is not resolved.
 */
describe('decodeKnown', () => {
  const CPF = '529.982.247-25';
  const outcome = (f: () => unknown): string | undefined => {
    try {
      return JSON.stringify(f());
    } catch (err) {
      return `${(err as Error).constructor.name} ${reasonOf(err)} ${(err as Error).message}`;
    }
  };
  /** Records as a careless or hostile producer sends them: each part kept, dropped or damaged. */
  /** Mostly `good`, now and then one of `bad` (so most records reach the later checks). */
  const mostly = <T>(good: T, ...bad: T[]) =>
    fc.oneof({ weight: 6, arbitrary: fc.constant(good) }, { weight: 1, arbitrary: fc.constantFrom(...bad) });
  const hostileRecord = fc
    .record({
      origem: mostly('D-3', 'D-1a', '', 'x'.repeat(200)),
      schemaId: mostly(7, 8),
      json: fc.oneof(
        { weight: 3, arbitrary: fc.constant(JSON.stringify(SAMPLE_PAYLOADS['demanda.categorizada'])) },
        {
          weight: 1,
          arbitrary: fc.constant(JSON.stringify({ ...SAMPLE_PAYLOADS['demanda.categorizada'], texto: '\u0000' })),
        },
        { weight: 1, arbitrary: fc.constantFrom('{', '[]', 'null', '"x"', '{}') },
        { weight: 2, arbitrary: fc.json() },
        // past the decoder's size limit (4 KiB below), and a personal number inside a text
        {
          weight: 1,
          arbitrary: fc.constant(
            JSON.stringify({ ...SAMPLE_PAYLOADS['demanda.categorizada'], texto: 'x'.repeat(5_000) }),
          ),
        },
        {
          weight: 1,
          arbitrary: fc.constant(
            JSON.stringify({ ...SAMPLE_PAYLOADS['demanda.categorizada'], categoria: `${CPF} liga \u0007 às 25:61` }),
          ),
        },
      ),
      frame: mostly('ok', 'short', 'magic', 'none'),
      timestamp: mostly('2026-06-15T10:30:10Z', 'ontem', '2026-02-30T00:00:00Z', ''),
      tipo: mostly('demanda.categorizada', 'demanda.recebida', ''),
      dropped: fc.oneof(
        { weight: 6, arbitrary: fc.constant([]) },
        {
          weight: 1,
          arbitrary: fc.subarray(['ce_id', 'ce_specversion', 'content-type', 'ce_time', 'ce_type'], { minLength: 1 }),
        },
      ),
      eventId: fc.oneof(
        { weight: 6, arbitrary: fc.uuid() },
        { weight: 1, arbitrary: fc.constantFrom('not-a-uuid', '') },
      ),
    })
    .map((r) => {
      const headers: Record<string, string | Buffer> = buildHeaders({
        event_id: r.eventId,
        tipo: r.tipo,
        versao_schema: '1.0.0',
        timestamp: r.timestamp,
        origem: r.origem,
        correlacao_id: randomUUID(),
        causation_id: null,
      });
      for (const d of r.dropped) delete headers[d];
      for (const k of Object.keys(headers)) headers[k] = Buffer.from(headers[k] as string);
      const good = encodeValue(r.schemaId, r.json);
      const value =
        r.frame === 'ok'
          ? good
          : r.frame === 'short'
            ? good.subarray(0, 3)
            : r.frame === 'magic'
              ? Buffer.concat([Buffer.from([1]), good.subarray(1)])
              : null;
      return { value, headers };
    });

  it('gives what decode gives, event or refusal, once the schema id is known (property)', async () => {
    const known = new EventDecoder(registry, catalog, 4_096);
    await known.decode(record('D-3')); // schema id 7 resolved
    await fc.assert(
      fc.asyncProperty(hostileRecord, async (r) => {
        const viaPromise = await known.decode(r).then(
          (e) => JSON.stringify(e),
          (err: unknown) => `${(err as Error).constructor.name} ${reasonOf(err)} ${(err as Error).message}`,
        );
        // schema id 8 is not in this registry: decode refuses it once the registry answers,
        // decodeKnown says "not resolved" (undefined) — after the same checks before the id
        const unresolved = (r.value?.length ?? 0) >= 5 && r.value?.readUInt32BE(1) === 8;
        const sync = outcome(() => known.decodeKnown(r)) ?? (unresolved ? 'unresolved' : 'undefined for a resolved id');
        expect(sync).toBe(unresolved && viaPromise.includes('unknown-schema-id') ? 'unresolved' : viaPromise);
        // a refusal names what was wrong, never the payload's personal data
        expect(viaPromise.startsWith('{') ? '' : viaPromise).not.toContain(CPF);
      }),
      { numRuns: 500 },
    );
  });

  it('is undefined for a schema id not yet resolved, and asks the registry nothing', () => {
    const asked: number[] = [];
    const fresh = new EventDecoder(
      { schemaById: (id: number) => (asked.push(id), Promise.resolve(versao.schemaText)) } as SchemaRegistry,
      catalog,
    );
    expect(fresh.decodeKnown(record('D-3'))).toBeUndefined();
    expect(asked).toEqual([]);
  });
});
