import fc from 'fast-check';
import { diffSchemas } from './schema-diff';

const base = {
  type: 'object',
  required: ['a'],
  additionalProperties: false,
  properties: {
    a: { type: 'string', minLength: 1 },
    b: { type: 'object', properties: { c: { type: 'integer' } } },
    lista: { type: 'array', items: { type: 'string' } },
  },
};

describe('diffSchemas: what changes between two versions, field by field', () => {
  it('names each kind of change with its path', () => {
    const next = {
      ...base,
      required: ['a', 'd'],
      additionalProperties: true,
      properties: {
        a: { type: 'string', minLength: 2 },
        b: { type: 'object', properties: { c: { type: 'number' } } },
        lista: { type: 'array', items: { type: 'integer' } },
        d: { type: 'boolean' },
      },
    };
    expect(diffSchemas(base, next).map((c) => [c.kind, c.path])).toEqual([
      ['additional-properties-changed', ''],
      ['required-added', '/d'],
      ['constraint-changed', '/a'],
      ['type-changed', '/b/c'],
      ['property-added', '/d'],
      ['type-changed', '/lista/[]'],
    ]);
    expect(diffSchemas(next, base).map((c) => c.kind)).toContain('property-removed');
    expect(diffSchemas(next, base).map((c) => c.kind)).toContain('required-removed');
  });

  const schema: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
    node: fc.record(
      {
        type: fc.constantFrom('string', 'integer', 'object', 'array', 'boolean'),
        required: fc.uniqueArray(fc.constantFrom('x', 'y', 'z'), { maxLength: 3 }),
        minLength: fc.nat(5),
        enum: fc.array(fc.string({ maxLength: 3 }), { maxLength: 3 }),
        properties: fc.dictionary(fc.constantFrom('x', 'y', 'z', 'w'), tie('node'), { maxKeys: 3 }),
        items: tie('node'),
      },
      { requiredKeys: ['type'] },
    ),
  })).node;

  it('property: a schema has no change against itself, and any change shows up at least once', () => {
    fc.assert(
      fc.property(schema, schema, (a, b) => {
        expect(diffSchemas(a, structuredClone(a))).toEqual([]);
        return JSON.stringify(a) === JSON.stringify(b) || diffSchemas(a, b).length > 0;
      }),
      { numRuns: 200 },
    );
  });
});
