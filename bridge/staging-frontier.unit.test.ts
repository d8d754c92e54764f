import fc from 'fast-check';
import { MAX_DATE_MS as MAX_MS } from './log-lines';
import { frontierMetadata, frontierOf, stagedFrontier } from './staging-frontier';

describe('a staged frontier in the committed offset’s metadata', () => {
  it('any instant JavaScript and PostgreSQL both represent comes back exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_MS }), (ms) => {
        expect(frontierOf(frontierMetadata(ms))).toBe(ms);
      }),
      { numRuns: 2000 },
    );
    expect(frontierOf(frontierMetadata(0))).toBe(0);
    expect(frontierOf(frontierMetadata(MAX_MS))).toBe(MAX_MS);
  });

  it('refuses to write what is not such an instant, naming the rule', () => {
    for (const bad of [-1, 1.5, NaN, Infinity, MAX_MS + 1, Number.MAX_SAFE_INTEGER + 2])
      expect(() => frontierMetadata(bad)).toThrow(/whole number of milliseconds from 0 to/);
  });

  it('metadata it did not write gives no frontier (the sequencer then reads staging): none, another tool’s, damaged, impossible', () => {
    const good = frontierMetadata(1_733_400_000_123);
    for (const m of [
      null,
      undefined,
      '',
      'feromonios.fronteira=', // no digits
      'feromonios.fronteira=-5',
      'feromonios.fronteira=+5',
      'feromonios.fronteira=05', // a leading zero: not what it writes
      'feromonios.fronteira=1.5',
      'feromonios.fronteira=1e12',
      'feromonios.fronteira= 12',
      'feromonios.fronteira=12 ',
      'feromonios.fronteira=12\n',
      'feromonios.fronteira=0x10',
      'feromonios.fronteira=99999999999999999', // 17 digits
      'feromonios.fronteira=8640000000000001', // past year 275760
      'FEROMONIOS.FRONTEIRA=12',
      ' feromonios.fronteira=12',
      '{"fronteira":12}',
      '1733400000123',
      'feromonios.fronteira=１２', // full-width digits
      `${good}x`, // damaged at the end
      good.slice(0, -1).replace('=', ':'), // another separator
    ])
      expect(frontierOf(m)).toBeUndefined();
    fc.assert(
      // whatever it reads back is an instant frontierMetadata writes in exactly these characters
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const f = frontierOf(s);
        return f === undefined || frontierMetadata(f) === s;
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (tail) => {
        const s = `feromonios.fronteira=${tail}`;
        const f = frontierOf(s);
        return f === undefined || frontierMetadata(f) === s;
      }),
      { numRuns: 2000 },
    );
  });

  it('a staged chunk’s frontier is its last row PostgreSQL took: refused ones are skipped, none staged gives none', () => {
    const at = (i: number) => new Date(Date.UTC(2026, 11, 5, 12, 0, i)).toISOString();
    const good = [0, 1, 2].map((i) => ({ row: { event_id: `e${i}`, publicado_em: at(i) } }));
    expect(stagedFrontier(good, [])).toBe(Date.parse(at(2)));
    expect(stagedFrontier(good, [{ eventId: 'e2' }])).toBe(Date.parse(at(1)));
    expect(stagedFrontier(good, [{ eventId: 'e1' }])).toBe(Date.parse(at(2))); // a refusal in the middle does not count
    expect(stagedFrontier(good, [{ eventId: 'e0' }, { eventId: 'e1' }, { eventId: 'e2' }])).toBeUndefined();
    expect(stagedFrontier([], [])).toBeUndefined();
  });
});
