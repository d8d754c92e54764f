import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SchemaCatalog, DEFAULT_SCHEMAS_DIR } from './catalog';
import { backwardIncompatibilities } from './compatibility';
import { CatalogError } from '../errors';

/** A copy of the real catalog in a temp dir, with `edit` applied (file → content or null to delete). */
function catalogWith(edit: Record<string, string | null>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'catalog-'));
  fs.cpSync(DEFAULT_SCHEMAS_DIR, dir, { recursive: true });
  for (const [file, content] of Object.entries(edit)) {
    const p = path.join(dir, file);
    if (content === null) fs.rmSync(p);
    else {
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, content);
    }
  }
  return dir;
}

function loadError(edit: Record<string, string | null>): CatalogError {
  try {
    SchemaCatalog.build(catalogWith(edit));
  } catch (err) {
    if (err instanceof CatalogError) return err;
    throw err;
  }
  throw new Error('expected a CatalogError');
}

const recebida10 = JSON.parse(
  fs.readFileSync(path.join(DEFAULT_SCHEMAS_DIR, 'demanda.recebida/1.0.0.schema.json'), 'utf8'),
) as Record<string, unknown>;
const v11 = (patch: (s: Record<string, unknown>) => void): string => {
  const s = JSON.parse(JSON.stringify(recebida10)) as Record<string, unknown>;
  s.$id = 'urn:feromonios:demanda.recebida:1.1.0';
  patch(s);
  return JSON.stringify(s);
};

describe('the schema catalog', () => {
  it('loads every type of schemas/ with its status, versions in semver order and policy', () => {
    const cat = SchemaCatalog.load();
    expect(cat.tipos().map((t) => t.tipo)).toEqual(
      expect.arrayContaining([
        'demanda.recebida',
        'demanda.normalizada',
        'demanda.categorizada',
        'parametros.atualizados',
      ]),
    );
    expect(cat.tipo('demanda.recebida')?.versoes.map((v) => v.versao)).toEqual(['1.0.0', '1.1.0']);
    expect(cat.tipo('demanda.legada')?.status).toBe('deprecated');
    expect(cat.tipo('demanda.recebida')?.redacao.campos.cidadao_id).toBe('remover');
    expect(cat.tipo('demanda.categorizada')).toMatchObject({ publicadores: ['D-3'], consumidores: ['D-4'] });
    expect(SchemaCatalog.load()).toBe(cat); // loaded once per process
  });

  it.each([
    [
      'malformed JSON',
      { 'demanda.normalizada/1.0.0.schema.json': '{ "type": ' },
      'demanda.normalizada/1.0.0.schema.json',
      'not valid JSON',
    ],
    [
      'an unknown keyword (Ajv strict)',
      {
        'demanda.normalizada/1.0.0.schema.json': fs
          .readFileSync(path.join(DEFAULT_SCHEMAS_DIR, 'demanda.normalizada/1.0.0.schema.json'), 'utf8')
          .replace('"minLength"', '"minLenght"'),
      },
      'demanda.normalizada/1.0.0.schema.json',
      'not a valid draft 2020-12 schema',
    ],
    [
      'a missing redaction policy',
      { 'demanda.categorizada/redaction.json': null },
      'demanda.categorizada/redaction.json',
      'missing',
    ],
    [
      'a field without a redaction rule',
      {
        'parametros.atualizados/redaction.json':
          '{"campos":{"parametro_id":"manter","valor_anterior":"manter","valor_novo":"manter","responsavel_id":"remover"}}',
      },
      'parametros.atualizados/1.0.0.schema.json',
      'justificativa',
    ],
    [
      'an unknown rule',
      { 'demanda.categorizada/redaction.json': '{"campos":{"demanda_id":"keep"}}' },
      'demanda.categorizada/redaction.json',
      "unknown rule 'keep'",
    ],
    [
      'a bad status',
      { 'demanda.categorizada/type.json': '{"status":"retired"}' },
      'demanda.categorizada/type.json',
      '"status"',
    ],
    [
      'no publishers',
      { 'demanda.categorizada/type.json': '{"status":"active"}' },
      'demanda.categorizada/type.json',
      '"publicadores" must be a non-empty array',
    ],
    [
      'an empty list of publishers',
      { 'demanda.categorizada/type.json': '{"status":"active","publicadores":[]}' },
      'demanda.categorizada/type.json',
      '"publicadores" must be a non-empty array',
    ],
    [
      'a publisher that is not a colony code',
      { 'demanda.categorizada/type.json': '{"status":"active","publicadores":["D 3"]}' },
      'demanda.categorizada/type.json',
      '"publicadores": "D 3" is not a colony code',
    ],
    [
      'a publisher listed twice',
      { 'demanda.categorizada/type.json': '{"status":"active","publicadores":["D-3","D-3"]}' },
      'demanda.categorizada/type.json',
      'listed twice',
    ],
    [
      'subscribers that are not a list',
      { 'demanda.categorizada/type.json': '{"status":"active","publicadores":["D-3"],"consumidores":"D-4"}' },
      'demanda.categorizada/type.json',
      '"consumidores" must be an array',
    ],
    [
      'a wrong $id',
      { 'demanda.recebida/1.1.0.schema.json': v11((s) => (s.$id = 'urn:x')) },
      'demanda.recebida/1.1.0.schema.json',
      '"$id"',
    ],
    [
      'a new required field (backward break)',
      {
        'demanda.recebida/1.1.0.schema.json': v11((s) => {
          (s.properties as Record<string, unknown>).novo = { type: 'string' };
          s.required = [...(s.required as string[]), 'novo'];
        }),
        'demanda.recebida/redaction.json': JSON.stringify({
          campos: {
            ...(
              JSON.parse(
                fs.readFileSync(path.join(DEFAULT_SCHEMAS_DIR, 'demanda.recebida/redaction.json'), 'utf8'),
              ) as { campos: object }
            ).campos,
            novo: 'manter',
          },
        }),
      },
      'demanda.recebida/1.1.0.schema.json',
      "breaks backward compatibility with 1.0.0: $: property 'novo' became required",
    ],
    [
      'a removed enum value (backward break)',
      {
        'demanda.recebida/1.1.0.schema.json': v11(
          (s) => ((s.properties as Record<string, { enum?: string[] }>).canal!.enum = ['app']),
        ),
      },
      'demanda.recebida/1.1.0.schema.json',
      'enum value "web" removed',
    ],
  ])('rejects %s, naming the file', (_label, edit, file, message) => {
    const err = loadError(edit);
    expect(err.code).toBe('CATALOG_INVALID');
    expect(err.file.endsWith(file)).toBe(true);
    expect(err.message).toContain(message);
  });

  it('accepts a new type by adding its folder, nothing else', () => {
    const dir = catalogWith({
      'servico.avaliado/type.json': '{"status":"active","descricao":"x","publicadores":["S-1"]}',
      'servico.avaliado/redaction.json': '{"campos":{"nota":"manter"}}',
      'servico.avaliado/1.0.0.schema.json': JSON.stringify({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        $id: 'urn:feromonios:servico.avaliado:1.0.0',
        type: 'object',
        properties: { nota: { type: 'integer' } },
      }),
    });
    expect(SchemaCatalog.build(dir).versao('servico.avaliado', '1.0.0')?.validate({ nota: 5 })).toBe(true);
  });
});

describe('backward compatibility', () => {
  const obj = (props: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    type: 'object',
    properties: props,
    additionalProperties: false,
    ...extra,
  });

  it('allows an optional field on a closed object, a wider type and looser bounds', () => {
    expect(
      backwardIncompatibilities(
        obj({ a: { type: 'integer', maximum: 5 } }),
        obj({ a: { type: 'number', maximum: 9 }, b: { type: 'string' } }),
      ),
    ).toEqual([]);
  });

  it('refuses narrowing: type, bounds, closing an open object, removing a field of a closed one', () => {
    expect(backwardIncompatibilities(obj({ a: { type: 'number' } }), obj({ a: { type: 'integer' } }))).toEqual([
      "$.a: type 'number' no longer accepted",
    ]);
    expect(
      backwardIncompatibilities(obj({ a: { type: 'string' } }), obj({ a: { type: 'string', maxLength: 3 } })),
    ).toEqual(['$.a: maxLength lowered']);
    expect(backwardIncompatibilities({ type: 'object' }, obj({}))).toEqual([
      '$: additional properties no longer allowed',
    ]);
    expect(backwardIncompatibilities(obj({ a: { type: 'string' } }), obj({}))).toEqual([
      "$: property 'a' removed from a closed object",
    ]);
    expect(
      backwardIncompatibilities(
        { type: 'object', properties: {} },
        { type: 'object', properties: { b: { type: 'string' } } },
      ),
    ).toEqual(["$: property 'b' added to an open object (old payloads may hold anything there)"]);
  });

  it('counts a keyword it cannot compare as a break', () => {
    expect(backwardIncompatibilities(obj({}), obj({}, { oneOf: [] }))).toEqual([
      "$: keyword 'oneOf' cannot be checked for compatibility",
    ]);
  });
});
