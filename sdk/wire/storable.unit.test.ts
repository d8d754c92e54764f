import fc from 'fast-check';
import {
  colonyCodeProblem,
  isColonyCode,
  jsonProblem,
  operatorIdProblem,
  storableText,
  textProblem,
  timestampProblem,
} from './storable';
import { TopicNames } from './topics';

describe('colony codes (origem, colonia, topic segments)', () => {
  it.each(['D-1a', 'D-4', 'quickstart', 'x', 'a_b', '9z', 'A'.repeat(100)])('accepts %s', (c) =>
    expect(colonyCodeProblem(c)).toBeUndefined(),
  );
  it.each([
    'a.b',
    'X.x',
    '-X',
    '_X',
    '.',
    '..',
    '',
    'A'.repeat(101),
    'D 4',
    'D-4\u0000',
    'maria@prefeitura.gov.br',
    'ação',
    '52998224725', // a CPF
    'D-11987654321', // a phone number
  ])('refuses %j', (c) => expect(colonyCodeProblem(c)).toMatch(/colony code/));
  it.each([7, null, undefined, ['D-4'], { c: 'D-4' }])('refuses the non-string %j', (c) =>
    expect(colonyCodeProblem(c)).toMatch(/a string/),
  );

  it('every code it accepts names a DLQ and a reprocessing topic, and no other string does', () => {
    const topics = new TopicNames('feromonios');
    fc.assert(
      fc.property(fc.string({ maxLength: 120, unit: 'binary' }), (s) => {
        const ok = isColonyCode(s);
        const named = (() => {
          try {
            topics.dlq(s);
            topics.reprocessar(s);
            return true;
          } catch {
            return false;
          }
        })();
        return ok === named;
      }),
      { numRuns: 2000 },
    );
  });
});

describe('operator ids (token sub, solicitante)', () => {
  it.each(['operador-42', 'op.maria', 'sdk', 'svc:reprocessador', 'Ana_2026'])('accepts %s', (s) =>
    expect(operatorIdProblem(s)).toBeUndefined(),
  );
  it.each([
    'cpf_123.456.789-09',
    'cpf12345678909',
    '12345678909x',
    'op:123.456.789-09x',
    '123.456.789-09',
    'maria@prefeitura.gov.br',
    'joão@cidade.br',
    'op-11987654321',
    'cnpj12.345.678/0001-95',
    '3fa85f64-5717-4562-b3fc-2c963f66afa6',
    'a',
    'x'.repeat(65),
    'op\u0000x',
  ])('refuses %j', (s) => expect(operatorIdProblem(s)).toMatch(/operator id/));
  it.each([123, true, ['op-arr'], null, undefined])('refuses the non-string %j', (s) =>
    expect(operatorIdProblem(s)).toMatch(/a string/),
  );

  it('refuses every id that holds a CPF, a phone number or an e-mail, whatever surrounds it', () => {
    const digits = (n: number) => fc.stringMatching(new RegExp(`^\\d{${n}}$`));
    const around = fc.stringMatching(/^[A-Za-z0-9._:-]{0,20}$/);
    const personal = fc.oneof(
      digits(11), // CPF
      fc.tuple(digits(3), digits(3), digits(3), digits(2)).map(([a, b, c, d]) => `${a}.${b}.${c}-${d}`),
      digits(9), // a phone number without its area code
      fc.emailAddress(),
    );
    fc.assert(
      fc.property(around, personal, around, (a, p, b) => {
        const candidate = `x${a}${p}${b}`;
        return operatorIdProblem(candidate) !== undefined;
      }),
      { numRuns: 2000 },
    );
  });
});

describe('timestamps PostgreSQL stores as the same instant', () => {
  it.each([
    '2026-03-01T10:00:00Z',
    '2026-03-01T10:00:00.123Z',
    '2026-03-01T10:00:00.123456789Z',
    '2026-03-01T10:00Z',
    '2026-03-01T10:00:00+03:00',
    '2026-03-01T10:00:00-0300',
    '2024-02-29T00:00:00Z',
    '2000-02-29T00:00:00Z',
    '0001-01-01T00:00:00Z',
    '9999-12-31T23:59:59Z',
    '2026-01-01T00:00:00+15:59',
  ])('accepts %s', (t) => expect(timestampProblem(t)).toBeUndefined());

  it.each([
    ['2026-02-30T10:00:00Z', /real calendar date/],
    ['2100-02-29T10:00:00Z', /real calendar date/],
    ['2026-04-31T10:00:00Z', /real calendar date/],
    ['2026-13-01T10:00:00Z', /month/],
    ['2026-00-01T10:00:00Z', /month/],
    ['2026-01-01T24:00:00Z', /time of day/],
    ['2026-01-01T23:60:00Z', /time of day/],
    ['2026-01-01T23:59:60Z', /time of day/],
    ['2026-01-01T00:00:00+23:00', /offset/],
    ['2026-01-01T00:00:00+16:00', /offset/],
    ['2026-01-01T00:00:00-2300', /offset/],
    ['2026-01-01T00:00:00+10:60', /offset/],
    ['0000-01-01T00:00:00Z', /year/],
    ['0001-01-01T00:00:00+01:00', /between the years/],
    ['9999-12-31T23:59:59-01:00', /between the years/],
    ['2026-01-01T00:00:00', /time zone/],
    ['2026-01-01', /time zone/],
    ['ontem', /time zone/],
    ['2026-01-01t00:00:00z', /time zone/],
    ['2026-01-01T00:00:00Z\u0000', /time zone/],
    [' 2026-01-01T00:00:00Z', /time zone/],
    ['+002026-01-01T00:00:00Z', /time zone/],
  ])('refuses %j', (t, why) => expect(timestampProblem(t)).toMatch(why));
  it.each([0, null, undefined, new Date(0)])('refuses the non-string %j', (t) =>
    expect(timestampProblem(t)).toMatch(/string/),
  );

  it("reads Date#toISOString's own shape by character codes as the general rule does: accepted exactly when JavaScript writes the same text back for a year from 0001", () => {
    const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
    const field = (arb: fc.Arbitrary<string>) =>
      fc.oneof({ weight: 9, arbitrary: arb }, { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 3 }) });
    const sep = (ch: string) =>
      fc.oneof({ weight: 9, arbitrary: fc.constant(ch) }, { weight: 1, arbitrary: fc.string({ maxLength: 2 }) });
    fc.assert(
      fc.property(
        fc.tuple(
          field(fc.integer({ min: 0, max: 9999 }).map((n) => String(n).padStart(4, '0'))),
          sep('-'),
          field(two(19)),
          sep('-'),
          field(two(39)),
          sep('T'),
          field(two(29)),
          sep(':'),
          field(two(69)),
          sep(':'),
          field(two(69)),
          sep('.'),
          field(fc.integer({ min: 0, max: 999 }).map((n) => String(n).padStart(3, '0'))),
          sep('Z'),
        ),
        (parts) => {
          const t = parts.join('');
          // other shapes (a damaged separator, a fraction of another length) are the general rule's, tested above
          fc.pre(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(t));
          const roundTrips =
            !Number.isNaN(Date.parse(t)) && new Date(t).toISOString() === t && t.slice(0, 4) !== '0000';
          expect(timestampProblem(t) === undefined).toBe(roundTrips);
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('agrees with JavaScript on the instant of every date it accepts', () => {
    fc.assert(
      fc.property(
        fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }),
        (d) => timestampProblem(d.toISOString()) === undefined,
      ),
      { numRuns: 2000 },
    );
  });
});

describe('texts and JSON values PostgreSQL stores unchanged', () => {
  it('refuses NUL, unpaired surrogates and overlong texts, naming the problem', () => {
    expect(textProblem('a\u0000b')).toMatch(/NUL/);
    expect(textProblem('a\ud800b')).toMatch(/surrogate/);
    expect(textProblem('a\udc00')).toMatch(/surrogate/);
    expect(textProblem('😀', 1)).toBeUndefined(); // one code point, as PostgreSQL counts
    expect(textProblem('😀😀', 1)).toMatch(/at most 1/);
    expect(textProblem('tab\tand\nnewline')).toBeUndefined();
  });

  it('textProblem names NUL and unpaired surrogates wherever they are, and nothing else, as a plain definition does', () => {
    // strings biased towards what matters: NUL, high and low surrogates alone, in pairs, reversed
    const unit = fc.oneof(
      fc.constantFrom(
        '\u0000',
        '\ud800',
        '\udbff',
        '\udc00',
        '\udfff',
        '\ud83d\ude00',
        '\ude00\ud83d',
        'a',
        'é',
        '\u07ff',
        '\ue000',
      ),
      fc.string({ unit: 'binary', maxLength: 3 }),
    );
    const text = fc.array(unit, { maxLength: 30 }).map((xs) => xs.join(''));
    const definition = (s: string): string | undefined =>
      s.includes('\u0000')
        ? 'must not contain a NUL character'
        : !(s as string & { isWellFormed(): boolean }).isWellFormed()
          ? 'must not contain an unpaired UTF-16 surrogate'
          : undefined;
    fc.assert(
      fc.property(fc.oneof(text, fc.string({ unit: 'binary', maxLength: 200 })), (s) => {
        expect(textProblem(s)).toBe(definition(s));
      }),
      { numRuns: 5000 },
    );
  });

  it('storableText makes any string storable, within its length', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.integer({ min: 1, max: 300 }), (s, max) => {
        const out = storableText(s, max);
        // eslint-disable-next-line no-control-regex -- the control characters it must have removed
        return textProblem(out, max) === undefined && !/[\u0000-\u0008\u000b-\u001f]/.test(out);
      }),
      { numRuns: 2000 },
    );
  });

  it('jsonProblem finds NUL and lone surrogates in values and keys, and depth, with a JSON pointer', () => {
    expect(jsonProblem({ a: { b: ['ok', 'x\u0000'] } })).toMatch(/^\/a\/b\/1: must not contain a NUL/);
    expect(jsonProblem({ ['k\u0000']: 1 })).toMatch(/a key/);
    expect(jsonProblem({ a: '\ud83d' })).toMatch(/surrogate/);
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(jsonProblem(deep)).toMatch(/deeper than 64/);
    expect(jsonProblem({ n: 1, b: true, z: null, s: 'texto', a: [1, 'x'] })).toBeUndefined();
    // only own keys, as JSON.stringify writes them: what an object inherits is never stored
    class ComHerdado {
      dono = 'ok';
    }
    Object.defineProperty(ComHerdado.prototype, 'herdado', { value: 'x\u0000', enumerable: true });
    expect(jsonProblem(new ComHerdado())).toBeUndefined();
    expect(jsonProblem(Object.create({ herdado: '\ud83d' }) as object)).toBeUndefined();
    expect(jsonProblem(Object.assign(Object.create({ herdado: 1 }) as object, { proprio: 'x\u0000' }))).toMatch(
      /^\/proprio: must not contain a NUL/,
    );
  });

  it('jsonProblem names the JSON pointer of a problem planted anywhere, whatever the keys on the way hold (property)', () => {
    // keys with the pointer's own escapes in them (`/` → ~1, `~` → ~0), digits and accents
    const key = fc.string({ unit: fc.constantFrom('a', 'é', '/', '~', '0', '1', ' '), maxLength: 6 });
    const clean = fc.oneof(
      fc.string({ unit: 'grapheme-ascii', maxLength: 8 }),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
    );
    const segment = fc.oneof(
      fc.record({ index: fc.nat({ max: 3 }), filler: fc.array(clean, { maxLength: 3 }) }),
      fc.record({ key, siblings: fc.dictionary(key, clean, { maxKeys: 3 }) }),
    );
    const bad = fc.constantFrom<[unknown, RegExp]>(
      ['x\u0000y', /must not contain a NUL/],
      ['a\ud800', /unpaired UTF-16 surrogate/],
      [Number.NaN, /finite number/],
      [Infinity, /finite number/],
      [undefined, /undefined is not JSON/],
    );
    const escape = (k: string): string => k.replace(/~/g, '~0').replace(/\//g, '~1');
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 6 }), bad, fc.boolean(), (path, [leaf, problem], badKey) => {
        // built from the leaf outwards; with badKey the problem is a NUL in a key of the innermost object
        let tree: unknown = badKey ? { ['k\u0000']: 1 } : leaf;
        for (const s of [...path].reverse())
          tree =
            'index' in s
              ? [...s.filler.slice(0, s.index), tree, ...s.filler.slice(s.index)]
              : { ...Object.fromEntries(Object.entries(s.siblings).filter(([k]) => k !== s.key)), [s.key]: tree };
        const pointer = path
          .map((s) => `/${'index' in s ? Math.min(s.index, s.filler.length) : escape(s.key)}`)
          .join('');
        const found = jsonProblem(tree);
        expect(found?.startsWith(badKey ? `${pointer}/(a key): ` : `${pointer || '/'}: `)).toBe(true);
        expect(found).toMatch(badKey ? /must not contain a NUL/ : problem);
      }),
      { numRuns: 3000 },
    );
  });
});
