import fc from 'fast-check';
import { publishMsOf } from './event-log-writer';

describe('publishMsOf (the record timestamp the sequencer orders by)', () => {
  const received = Date.parse('2026-12-01T12:00:00Z');
  /** As a staged row's `publicado_em` holds it. */
  const publishTimeOf = (ts: string | undefined, at: number) => new Date(publishMsOf(ts, at)).toISOString();

  it('keeps a real record timestamp', () => {
    expect(publishTimeOf(String(Date.parse('2026-12-01T11:59:59.123Z')), received)).toBe('2026-12-01T11:59:59.123Z');
    expect(publishTimeOf('0', received)).toBe('1970-01-01T00:00:00.000Z');
  });

  it.each([
    ['missing', undefined],
    ['-1 (no timestamp)', '-1'],
    ['not a number', 'abc'],
    ['beyond what a date holds', '9000000000000000'],
    ['beyond int64', '99999999999999999999'],
    ['a fraction', '1.5'],
  ])('uses the staging time for a timestamp that is %s', (_what, ts) => {
    expect(publishTimeOf(ts, received)).toBe(new Date(received).toISOString());
  });

  it('property: any string gives an ISO instant PostgreSQL stores, never throws', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.bigInt().map(String), fc.integer().map(String)), (ts) => {
        const iso = publishTimeOf(ts, received);
        expect(new Date(iso).toISOString()).toBe(iso);
      }),
    );
  });
});
