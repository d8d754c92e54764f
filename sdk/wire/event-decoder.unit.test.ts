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
