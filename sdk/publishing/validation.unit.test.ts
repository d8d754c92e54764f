import fc from 'fast-check';
import { SchemaCatalog } from '../catalog/catalog';
import type { PublicarEventoDto } from '../contract';
import { PublishValidationError, SchemaValidationError } from '../errors';
import { SAMPLE_PAYLOADS } from '../testing';
import { MAX_PAYLOAD_BYTES, validarEvento } from './validation';

const catalog = SchemaCatalog.load();
const base = (): PublicarEventoDto => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});

function rejection(dto: unknown): PublishValidationError {
  try {
    validarEvento(dto as PublicarEventoDto, catalog);
  } catch (err) {
    if (err instanceof PublishValidationError) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

describe('publish validation (seed 3.3 order)', () => {
  it('T12/T13: defaults versao_schema to 1.0.0 and correlacao_id to event_id, generating a v4 event_id', () => {
    const v = validarEvento(base(), catalog);
    expect(v.versao_schema).toBe('1.0.0');
    expect(v.correlacao_id).toBe(v.event_id);
    expect(v.event_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Date.parse(v.timestamp)).not.toBeNaN();
  });

  it.each([
    ['null', null],
    ['a string', 'texto'],
    ['an array', [1, 2]],
    ['a number', 42],
    ['missing', undefined],
  ])('T7/T8: rejects a payload that is %s, before anything else', (_label, payload) => {
    // everything else is wrong too: the payload check comes first
    const err = rejection({ tipo: 'nao.existe', origem: '', event_id: 'x', payload });
    expect(err).toMatchObject({ code: 'PAYLOAD_NOT_OBJECT', step: 'payload' });
    expect(err.message).toContain('Payload deve ser um objeto não nulo');
  });

  it.each([
    ['event_id', { event_id: 'not-a-uuid' }, 'INVALID_EVENT_ID'],
    ['event_id', { event_id: '' }, 'INVALID_EVENT_ID'],
    ['correlacao_id', { correlacao_id: '1234' }, 'INVALID_CORRELACAO_ID'],
    ['causation_id', { causation_id: 'abc' }, 'INVALID_CAUSATION_ID'],
    ['tenant_id', { tenant_id: 'prefeitura-1' }, 'INVALID_TENANT_ID'],
    ['tenant_id', { tenant_id: '' }, 'INVALID_TENANT_ID'],
    ['tenant_id', { tenant_id: 42 }, 'INVALID_TENANT_ID'],
    ['timestamp', { timestamp: 'ontem' }, 'INVALID_TIMESTAMP'],
    ['timestamp', { timestamp: '2026-13-45T10:00:00Z' }, 'INVALID_TIMESTAMP'],
    ['timestamp', { timestamp: '2026-06-15T10:30:00' }, 'INVALID_TIMESTAMP'],
    ['timestamp', { timestamp: '2026-06-15' }, 'INVALID_TIMESTAMP'],
    ['field', { origem: '' }, 'INVALID_FIELD'],
    ['field', { origem: 'x'.repeat(101) }, 'INVALID_FIELD'],
    ['field', { origem: 7 }, 'INVALID_FIELD'],
    ['field', { chave_particao: '' }, 'INVALID_FIELD'],
  ])('rejects a malformed %s (%j) with %s', (step, patch, code) => {
    expect(rejection({ ...base(), ...patch })).toMatchObject({ code, step });
  });

  it('tenant_id: absent or null is null; any UUID is kept in lowercase; anything else is refused naming the field', () => {
    expect(validarEvento(base(), catalog).tenant_id).toBeNull();
    expect(validarEvento({ ...base(), tenant_id: null }, catalog).tenant_id).toBeNull();
    fc.assert(
      fc.property(fc.uuid(), fc.boolean(), (id, upper) => {
        const v = validarEvento({ ...base(), tenant_id: upper ? id.toUpperCase() : id }, catalog);
        expect(v.tenant_id).toBe(id.toLowerCase());
      }),
    );
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string().filter((s) => !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)),
          fc.uuid().map((u) => ` ${u}`),
          fc.uuid().map((u) => `${u}\n`),
          fc.integer(),
          fc.constant({}),
        ),
        (bad) => {
          const err = rejection({ ...base(), tenant_id: bad });
          expect(err).toMatchObject({ code: 'INVALID_TENANT_ID', step: 'tenant_id', retriable: false });
          expect(err.message).toContain('tenant_id must be a UUID or null');
        },
      ),
    );
  });

  it('refuses a timestamp more than 5 min ahead of the clock, naming how far and what to do; accepts skew and any past time', () => {
    const at = (ms: number): string => new Date(Date.now() + ms).toISOString();
    const err = rejection({ ...base(), timestamp: at(2 * 86_400_000) });
    expect(err).toMatchObject({ code: 'INVALID_TIMESTAMP', step: 'timestamp', retriable: false });
    expect(err.message).toMatch(/is 2\.0 days ahead of this clock; at most 5 min ahead is accepted/);
    expect(err.message).toContain('give the time the fact happened, or omit it');
    expect(rejection({ ...base(), timestamp: at(6 * 60_000) })).toMatchObject({ code: 'INVALID_TIMESTAMP' });
    for (const ok of [at(4 * 60_000), at(-5 * 365 * 86_400_000), '2000-01-01T00:00:00Z', '0001-01-01T00:00:00Z'])
      expect(validarEvento({ ...base(), timestamp: ok }, catalog).timestamp).toBe(ok);
  });

  it('says, after the seed text, which field is wrong and what to give instead', () => {
    const unknown = rejection({ ...base(), tipo: 'demanda.inexistente' });
    expect(unknown.message).toMatch(
      /^Tipo de evento não registrado no Registry: 'demanda\.inexistente' — tipo must be one of the catalog's types \(.*demanda\.recebida.*\)/,
    );
    expect(unknown.message).not.toContain('demanda.legada'); // deprecated types are not offered
    expect(rejection({ ...base(), versao_schema: '9.9.9' }).message).toMatch(
      /versao_schema '9\.9\.9' of demanda\.\w+ has no schema: use one of 1\.0\.0/,
    );
    expect(rejection({ ...base(), tipo: 'demanda.legada' }).message).toMatch(/^tipo 'demanda\.legada' is deprecated/);
  });

  it('T6: rejects an unknown type, a deprecated type and a version without schema', () => {
    expect(rejection({ ...base(), tipo: 'demanda.inexistente' })).toMatchObject({
      code: 'UNKNOWN_TYPE',
      step: 'registry',
    });
    expect(rejection({ ...base(), tipo: undefined })).toMatchObject({ code: 'UNKNOWN_TYPE' });
    expect(
      rejection({
        ...base(),
        tipo: 'demanda.legada',
        payload: { demanda_id: SAMPLE_PAYLOADS['demanda.categorizada']?.demanda_id },
      }),
    ).toMatchObject({
      code: 'DEPRECATED_TYPE',
    });
    const v = rejection({ ...base(), versao_schema: '9.9.9' });
    expect(v).toMatchObject({ code: 'UNKNOWN_VERSION', step: 'registry' });
    expect(v.message).toContain('1.0.0');
  });

  it("refuses an origem that is not one of the type's publishers in the catalog, naming the allowed ones", () => {
    const err = rejection({ ...base(), origem: 'D-4' });
    expect(err).toMatchObject({ code: 'ORIGEM_NOT_ALLOWED', step: 'origem', retriable: false });
    expect(err.message).toContain("origem 'D-4' may not publish demanda.categorizada");
    expect(err.message).toContain('D-3');
    // the allowed publisher of each type passes this step
    for (const t of catalog.tipos().filter((x) => x.status === 'active'))
      for (const origem of t.publicadores)
        expect(() =>
          validarEvento({ tipo: t.tipo, origem, payload: { ...SAMPLE_PAYLOADS[t.tipo] } }, catalog),
        ).not.toThrow();
    // any valid colony code that is not listed is refused (a near miss of the real code included)
    fc.assert(
      fc.property(
        fc.oneof(
          fc.stringMatching(/^[A-Za-z][A-Za-z0-9_-]{0,20}$/),
          fc.constantFrom('d-3', 'D-3 ', 'D-30', 'D_3', 'D-3a'),
        ),
        (origem) => {
          fc.pre(origem !== 'D-3');
          let code: string | undefined;
          try {
            validarEvento({ ...base(), origem }, catalog);
          } catch (e) {
            code = (e as PublishValidationError).code;
          }
          // a malformed code fails its format check first; a well-formed one, the publisher check
          return code === 'ORIGEM_NOT_ALLOWED' || code === 'INVALID_FIELD';
        },
      ),
    );
  });

  it('rejects a schema-invalid payload with Ajv errors naming the fields', () => {
    const err = rejection({
      ...base(),
      payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'], nivel_precedencia: 9, extra: 1 },
    });
    expect(err).toBeInstanceOf(SchemaValidationError);
    const s = err as SchemaValidationError;
    expect(s).toMatchObject({
      code: 'SCHEMA_VALIDATION',
      step: 'schema',
      tipo: 'demanda.categorizada',
      versao: '1.0.0',
    });
    expect(s.errors.map((e) => e.keyword).sort()).toEqual(['additionalProperties', 'maximum']);
  });

  it('checks size after the schema: 1 MB passes, 1 MB + 1 byte is PAYLOAD_TOO_LARGE', () => {
    const payloadOf = (bytes: number): Record<string, unknown> => {
      const p = { ...SAMPLE_PAYLOADS['demanda.recebida'], anexos: [] as string[] };
      const overhead = Buffer.byteLength(JSON.stringify({ ...p, anexos: Array(20).fill('https://m.example/') }));
      const room = bytes - overhead;
      p.anexos = Array.from(
        { length: 20 },
        (_, i) => `https://m.example/${'a'.repeat(Math.floor(room / 20) + (i < room % 20 ? 1 : 0))}`,
      );
      expect(Buffer.byteLength(JSON.stringify(p))).toBe(bytes);
      return p;
    };
    const dto = (bytes: number): PublicarEventoDto => ({
      tipo: 'demanda.recebida',
      versao_schema: '1.1.0',
      origem: 'D-1a',
      payload: payloadOf(bytes),
    });
    expect(Buffer.byteLength(validarEvento(dto(MAX_PAYLOAD_BYTES), catalog).payloadJson)).toBe(MAX_PAYLOAD_BYTES);
    expect(rejection(dto(MAX_PAYLOAD_BYTES + 1))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', step: 'size' });
  });
});
