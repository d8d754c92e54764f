import fc from 'fast-check';
import { parseOrder } from './headers';

describe('feromonios_ordem (parseOrder)', () => {
  const session = '0f8fad5b-d9cb-469f-a165-70867728950e';

  it('reads the session, counter and settled mark the SDK writes', () => {
    expect(parseOrder(`${session}:7:5`)).toEqual({ sessao: session, contador: 7, firme: 5 });
    expect(parseOrder(`${session}:7:7`)).toEqual({ sessao: session, contador: 7, firme: 7 });
    expect(parseOrder(`${session}:9007199254740991:9007199254740991`)).toEqual({
      sessao: session,
      contador: 9007199254740991,
      firme: 9007199254740991,
    });
  });

  it('reads a value without the settled mark (SDKs before 2026-12-04) with the mark unknown', () => {
    expect(parseOrder(`${session}:1`)).toEqual({ sessao: session, contador: 1, firme: null });
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['no counter', session],
    ['counter 0', `${session}:0`],
    ['leading zero', `${session}:01`],
    ['negative', `${session}:-1`],
    ['beyond a safe integer', `${session}:9007199254740993`],
    ['17 digits', `${session}:12345678901234567`],
    ['upper-case uuid', `${session.toUpperCase()}:1`],
    ['not a uuid', 'abc:1'],
    ['trailing text', `${session}:1 `],
    ['NUL', `${session}:1\u0000`],
    ['settled above the counter', `${session}:5:6`],
    ['settled 0', `${session}:5:0`],
    ['settled empty', `${session}:5:`],
    ['settled beyond a safe integer', `${session}:9007199254740991:9007199254740993`],
    ['a fourth part', `${session}:5:4:3`],
  ])('ignores a value that is %s (null, never an error)', (_what, value) => {
    expect(parseOrder(value)).toBeNull();
  });

  it('property: any string gives null or a uuid session with a safe positive counter (and a settled mark not above it), never throws', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: 'binary' }),
          fc.uuid().map((u) => `${u}:${Math.random()}`),
          fc
            .tuple(fc.uuid(), fc.bigInt({ min: -5n, max: 2n ** 54n }), fc.bigInt({ min: -5n, max: 2n ** 54n }))
            .map(([u, c, f]) => `${u}:${c}:${f}`),
        ),
        (v) => {
          const r = parseOrder(v);
          if (r === null) return;
          expect(r.sessao).toMatch(/^[0-9a-f-]{36}$/);
          expect(Number.isSafeInteger(r.contador) && r.contador > 0).toBe(true);
          expect(r.firme === null || (Number.isSafeInteger(r.firme) && r.firme > 0 && r.firme <= r.contador)).toBe(
            true,
          );
        },
      ),
    );
  });
});
