import fc from 'fast-check';
import { colonyCodeProblem } from './storable';
import { TopicNames } from './topics';

describe('TopicNames: colony consumer groups', () => {
  const topics = new TopicNames('feromonios');

  // the pattern also yields codes the colony rule refuses (more than 6 digits, say): those must
  // throw, never produce a group the reverse lookup would not recognise
  const codeLike = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9-]{0,20}$/);

  it('names a colony group and reads the colony back from it', () => {
    fc.assert(
      fc.property(
        codeLike.filter((c) => colonyCodeProblem(c) === undefined),
        (colonia) => void expect(topics.coloniaDoGrupo(topics.grupo(colonia))).toBe(colonia),
      ),
    );
  });

  it('refuses to name a group for a code the colony rule refuses', () => {
    const refused = fc.oneof(
      fc.stringMatching(/^[A-Za-z]?[0-9]{7,12}[A-Za-z]?$/), // 7 digits or more: a CPF, a phone number
      fc.stringMatching(/^[-_][A-Za-z0-9]{0,10}$/), // must start with a letter or digit
      fc.stringMatching(/^[A-Za-z]{101,110}$/), // longer than 100
      fc.stringMatching(/^[A-Za-z]{1,5}[ .@/][A-Za-z]{1,5}$/), // outside [A-Za-z0-9_-]
    );
    fc.assert(
      fc.property(refused, (colonia) => {
        expect(colonyCodeProblem(colonia)).toBeDefined();
        expect(() => topics.grupo(colonia)).toThrow(/colony code/);
      }),
    );
  });

  it('reads no colony from other groups: the bridge, another namespace, a malformed code', () => {
    for (const g of [
      'feromonios-bridge',
      'feromonios-bridge.dlq',
      'outro.colonia.D-1',
      'feromonios.colonia.',
      'feromonios.colonia.D 1',
      `feromonios.colonia.${'x'.repeat(101)}`,
      'feromonios.colonia.D-1\u0000',
    ])
      expect(topics.coloniaDoGrupo(g)).toBeUndefined();
  });

  it('refuses to name the group of a malformed colony code', () => {
    expect(() => topics.grupo('')).toThrow(/colonia/);
  });
});
