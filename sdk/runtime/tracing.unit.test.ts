import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startConsumerSpan, traceParentOf } from './tracing';

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
