import fc from 'fast-check';
import { parseOrder } from './headers';

describe('feromonios_ordem (parseOrder)', () => {
  const session = '0f8fad5b-d9cb-469f-a165-70867728950e';

  it('reads the session and counter the SDK writes', () => {
    expect(parseOrder(`${session}:1`)).toEqual({ sessao: session, contador: 1 });
    expect(parseOrder(`${session}:9007199254740991`)).toEqual({ sessao: session, contador: 9007199254740991 });
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
  ])('ignores a value that is %s (null, never an error)', (_what, value) => {
    expect(parseOrder(value)).toBeNull();
  });

  it('property: any string gives null or a uuid session with a safe positive counter, never throws', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: 'binary' }),
          fc.uuid().map((u) => `${u}:${Math.random()}`),
        ),
        (v) => {
          const r = parseOrder(v);
          if (r === null) return;
          expect(r.sessao).toMatch(/^[0-9a-f-]{36}$/);
          expect(Number.isSafeInteger(r.contador) && r.contador > 0).toBe(true);
        },
      ),
    );
  });
});
