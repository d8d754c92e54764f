import fc from 'fast-check';
import { colonyCodeProblem } from './storable';
import { TopicNames } from './topics';

describe('TopicNames: colony consumer groups', () => {
  const topics = new TopicNames('feromonios');

  it('names a colony group and reads the colony back from it; refuses to name one for a malformed code', () => {
    // the generator also yields codes the colony rule refuses (more than 6 digits, say): those
    // must throw, never produce a group the reverse lookup would not recognise
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9-]{0,20}$/), (colonia) => {
        if (colonyCodeProblem(colonia) === undefined)
          expect(topics.coloniaDoGrupo(topics.grupo(colonia))).toBe(colonia);
        else expect(() => topics.grupo(colonia)).toThrow(/colony code/);
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
