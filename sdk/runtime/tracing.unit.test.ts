import fc from 'fast-check';
import { context, trace, type SpanContext } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { parseTraceparent, startConsumerSpan, traceParentOf, withActiveSpan } from './tracing';

const parent = traceParentOf('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
const attributes = () => ({ 'feromonios.colonia': 'D-4', 'messaging.kafka.offset': 7 });

describe('startConsumerSpan', () => {
  afterEach(() => trace.disable());

  it("without a tracer provider: the no-op tracer's span — the record's context, not recording — and its attributes never built", () => {
    const asked = jest.fn(attributes);
    const span = startConsumerSpan('ns.evento.demanda.recebida', asked, parent);
    expect(span.isRecording()).toBe(false);
    expect(span.spanContext()).toEqual(parent?.context);
    expect(asked).not.toHaveBeenCalled();
    // no parent (a record without a valid traceparent): what the no-op tracer gives, an invalid context
    const orphan = startConsumerSpan('ns.evento.demanda.recebida', asked, undefined);
    expect(trace.isSpanContextValid(orphan.spanContext())).toBe(false);
  });

  it("with a tracer provider registered, even after the first span: a real child of the record's span, with its attributes", async () => {
    startConsumerSpan('ns.evento.demanda.recebida', attributes, parent).end(); // before: no-op
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.setGlobalTracerProvider(provider);
    const span = startConsumerSpan('ns.evento.demanda.recebida', attributes, parent);
    expect(span.isRecording()).toBe(true);
    span.end();
    const [done] = exporter.getFinishedSpans();
    expect(done?.spanContext().traceId).toBe(parent?.context.traceId);
    expect(done?.parentSpanContext?.spanId).toBe(parent?.context.spanId);
    expect(done?.attributes).toMatchObject({ 'feromonios.colonia': 'D-4', 'messaging.kafka.offset': 7 });
    await provider.shutdown();
  });
});

describe('withActiveSpan', () => {
  afterEach(() => context.disable());

  it("without a context manager: calls the function and gives back what it returns (the API's default manager has nothing to activate)", () => {
    const span = startConsumerSpan('ns.evento.demanda.recebida', attributes, parent);
    expect(withActiveSpan(span, () => 'feito')).toBe('feito');
    expect(() =>
      withActiveSpan(span, () => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
  });

  it('with a context manager registered, even after the first call: the span is the active one inside, and only there', async () => {
    const span = startConsumerSpan('ns.evento.demanda.recebida', attributes, parent);
    withActiveSpan(span, () => undefined); // before: nothing to activate
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    const inside = withActiveSpan(span, () => trace.getActiveSpan());
    expect(inside).toBe(span);
    // and in what the function left running
    const later = await withActiveSpan(span, () => new Promise((r) => setTimeout(() => r(trace.getActiveSpan()), 1)));
    expect(later).toBe(span);
    expect(trace.getActiveSpan()).toBeUndefined();
    // unregistered again: the function still runs, with nothing to activate
    context.disable();
    expect(withActiveSpan(span, () => trace.getActiveSpan())).toBeUndefined();
  });
});

describe('parseTraceparent', () => {
  /** The W3C rule as a regular expression and the API's own validity check: what the fast path must agree with. */
  const oracle = (value: string): SpanContext | undefined => {
    const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value.trim());
    if (!m?.[1] || !m[2] || !m[3]) return undefined;
    const sc: SpanContext = { traceId: m[1], spanId: m[2], traceFlags: parseInt(m[3], 16), isRemote: true };
    return trace.isSpanContextValid(sc) ? sc : undefined;
  };

  it('reads every header as the W3C rule does: valid ones, zero ids, upper case, blanks, other versions, damaged separators', () => {
    const hexOf = (n: number) =>
      fc.oneof(
        { weight: 6, arbitrary: fc.stringMatching(new RegExp(`^[0-9a-f]{${n}}$`)) },
        { weight: 1, arbitrary: fc.constant('0'.repeat(n)) },
        { weight: 1, arbitrary: fc.stringMatching(new RegExp(`^[0-9a-fA-FgG ]{${n - 1},${n + 1}}$`)) },
      );
    const part = (arb: fc.Arbitrary<string>) =>
      fc.oneof({ weight: 8, arbitrary: arb }, { weight: 1, arbitrary: fc.string({ maxLength: 3 }) });
    fc.assert(
      fc.property(
        fc.tuple(
          part(fc.constantFrom('00', '01', 'ff')),
          part(fc.constant('-')),
          hexOf(32),
          part(fc.constant('-')),
          hexOf(16),
          part(fc.constant('-')),
          hexOf(2),
          fc.constantFrom('', '', '', ' ', '\t'),
        ),
        ([version, a, traceId, b, spanId, c, flags, blank]) => {
          const header = `${blank}${version}${a}${traceId}${b}${spanId}${c}${flags}${blank}`;
          expect(parseTraceparent(header)).toEqual(oracle(header));
        },
      ),
      { numRuns: 5000 },
    );
    expect(parseTraceparent('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')).toEqual({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: 1,
      isRemote: true,
    });
  });
});
