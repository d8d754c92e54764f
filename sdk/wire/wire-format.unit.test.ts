import fc from 'fast-check';
import { WireFormatError } from '../errors';
import { ACCEPTED_CONTENT_TYPES, CONTENT_TYPE, HEADER, SPEC_VERSION, buildHeaders, parseHeaders } from './wire-format';

const meta = {
  event_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
  tipo: 'demanda.recebida',
  origem: 'D-1',
  timestamp: '2026-12-06T10:00:00.000Z',
  versao_schema: '1.0.0',
  correlacao_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6',
  causation_id: null,
};

/** The SDK's own headers as a consumer receives them (Buffers), with `content-type` replaced. */
const received = (contentType: string | undefined): Record<string, Buffer> => {
  const h: Record<string, string> = { ...buildHeaders(meta) };
  if (contentType === undefined) delete h[HEADER.contentType];
  else h[HEADER.contentType] = contentType;
  return Object.fromEntries(Object.entries(h).map(([k, v]) => [k, Buffer.from(v)]));
};

/** What docs/wire-format.md says is accepted: the media type before any parameter, trimmed, in any case. */
const accepted = (contentType: string): boolean =>
  ACCEPTED_CONTENT_TYPES.includes(contentType.split(';')[0]?.trim().toLowerCase() ?? '');

describe('parseHeaders: content-type', () => {
  it('accepts the SDK content type and application/json in any case, with parameters and blanks, and refuses every other value with invalid-header (property)', () => {
    // values near the accepted ones: case changed, parameters, blanks, a character more or less,
    // NUL and control characters, other media types, and anything at all
    const near = fc
      .tuple(
        fc.constantFrom(CONTENT_TYPE, 'application/json', 'application/cloudevents+json', 'text/plain', ''),
        fc.constantFrom('', ' ', '\t', '\u0000', 'x', ';', '; charset=utf-8', ';charset=UTF-8 ', ' ; q=1'),
        fc.constantFrom('', ' ', '\u0000', '\n'),
        fc.boolean(),
        // most values whole, some cut short
        fc.oneof({ weight: 3, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat({ max: 45 }) }),
      )
      .map(([base, tail, head, upper, cut]) => {
        const cased = upper ? base.toUpperCase() : base;
        const chopped = cut > 0 && cut < cased.length ? cased.slice(0, cut) : cased;
        return head + chopped + tail;
      });
    fc.assert(
      fc.property(fc.oneof(near, fc.string({ unit: 'binary', maxLength: 60 })), (contentType) => {
        const headers = received(contentType);
        // a header value goes over the wire as UTF-8: what arrives is what its bytes decode to
        const arrived = (headers[HEADER.contentType] as Buffer).toString();
        let outcome: string;
        try {
          parseHeaders(headers);
          outcome = 'accepted';
        } catch (err) {
          // a typed error naming the header, nothing else
          outcome = !(err instanceof WireFormatError)
            ? `untyped: ${String(err)}`
            : err.message.startsWith('content-type')
              ? 'refused'
              : 'other';
        }
        expect(outcome).toBe(arrived === '' ? 'other' : accepted(arrived) ? 'accepted' : 'refused');
      }),
      { numRuns: 3000 },
    );
  });

  it('gives the same metadata whichever accepted spelling the content type has', () => {
    const own = parseHeaders(received(CONTENT_TYPE));
    expect(parseHeaders(received(' Application/VND.Feromonios.Confluent-JSON ; charset=utf-8'))).toEqual(own);
    expect(parseHeaders(received('application/json'))).toEqual(own);
    expect(own).toMatchObject({ event_id: meta.event_id, tipo: meta.tipo, versao_schema: '1.0.0' });
    expect(own).not.toHaveProperty('traceparent');
  });

  it('names the missing header when there is none', () => {
    expect(() => parseHeaders(received(undefined))).toThrow(/'content-type' is missing/);
    expect(() => parseHeaders({ ...received(CONTENT_TYPE), [HEADER.specversion]: Buffer.from('0.3') })).toThrow(
      new RegExp(`must be ${SPEC_VERSION.replace('.', '\\.')}`),
    );
  });
});
