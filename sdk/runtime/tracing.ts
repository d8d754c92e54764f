import { randomFillSync } from 'node:crypto';
import { contextoCausal } from './causal-context';
import {
  context,
  createContextKey,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type SpanContext,
} from '@opentelemetry/api';

/**
 * Spans through `@opentelemetry/api`: real spans when the host application registered a
 * tracer provider, no-ops otherwise. The W3C `traceparent` is always written on messages —
 * from the span when it is real, else freshly generated — so traces can be joined downstream.
 *
 * Names and attributes follow the OpenTelemetry messaging semantic conventions
 * (docs/operations.md, "Traces"): `send <topic>` (PRODUCER), `process <topic>` (CONSUMER, child
 * of the record's `traceparent`), and the bridge's `process <topic>` over a chunk of records,
 * linked to each record's context (a batch has many parents).
 */
const tracer = () => trace.getTracer('feromonios');

type Attributes = Record<string, string | number>;

/**
 * A producer span, child of the active span — or, when there is none (a tracer provider
 * registered without a context manager, or a callback that lost the context), of the handled
 * event's trace context (sdk/runtime/causal-context.ts): what a handler publishes stays in the
 * handler's trace either way.
 */
export function startProducerSpan(topic: string, attributes: Attributes): Span {
  let ctx = context.active();
  const causal = trace.getSpan(ctx) ? undefined : contextoCausal()?.traceparent;
  const parent = causal ? parseTraceparent(causal) : undefined;
  if (parent) ctx = trace.setSpanContext(ctx, parent);
  return messagingSpan('send', topic, attributes, { ctx });
}

/** A record's `traceparent` header as it came, with the span context it names. */
export interface TraceParent {
  header: string;
  context: SpanContext;
}

/** The record's trace parent, read once per record; `undefined` when the header is absent or malformed. */
export function traceParentOf(header: string | undefined): TraceParent | undefined {
  const sc = header ? parseTraceparent(header) : undefined;
  return sc && header ? { header, context: sc } : undefined;
}

/**
 * A consumer span whose parent is the message's `traceparent`, when it has a valid one.
 * `attributes` is asked only when spans are real: without a tracer provider the span is what the
 * no-op tracer would return — the parent's context, not recording — made without building the
 * attributes or the contexts on the way (~0.5 µs per delivered event, ~3 % of what it costs).
 */
export function startConsumerSpan(topic: string, attributes: () => Attributes, parent?: TraceParent): Span {
  if (parent && !tracing()) return trace.wrapSpanContext(parent.context);
  const ctx = parent ? trace.setSpanContext(context.active(), parent.context) : context.active();
  return messagingSpan('process', topic, attributes(), { ctx });
}

/** Whether spans are real: a tracer provider is registered (the API's global proxy delegates to one). */
function tracing(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegateTracer('feromonios') !== undefined;
}

/**
 * A consumer span over a batch of records (the bridge's write of a chunk): a root of its own,
 * linked to each record's `traceparent` (`traceparents` of its `count` records). They are read
 * and parsed only when the span records (a tracer provider is registered): without one this
 * costs nothing per record.
 */
export function startBatchSpan(
  topic: string,
  attributes: Attributes,
  count: number,
  traceparents: () => Array<string | undefined>,
): Span {
  const span = messagingSpan(
    'process',
    topic,
    { 'messaging.batch.message_count': count, ...attributes },
    { root: true },
  );
  if (span.isRecording()) {
    const links = traceparents().flatMap((t) => {
      const sc = t ? parseTraceparent(t) : undefined;
      return sc ? [{ context: sc }] : [];
    });
    if (links.length > 0) span.addLinks(links);
  }
  return span;
}

/** `<operation> <topic>`, PRODUCER for send and CONSUMER for process, with the conventions' messaging attributes. */
function messagingSpan(
  operation: 'send' | 'process',
  topic: string,
  attributes: Attributes,
  o: { ctx?: Context; root?: boolean },
): Span {
  return tracer().startSpan(
    `${operation} ${topic}`,
    {
      kind: operation === 'send' ? SpanKind.PRODUCER : SpanKind.CONSUMER,
      ...(o.root ? { root: true } : {}),
      attributes: {
        'messaging.system': 'kafka',
        'messaging.operation.type': operation,
        'messaging.operation.name': operation,
        'messaging.destination.name': topic,
        ...attributes,
      },
    },
    o.ctx,
  );
}

export function endSpan(span: Span, error?: unknown): void {
  if (error) {
    const message = error instanceof Error ? error.message : JSON.stringify(error);
    span.recordException(error instanceof Error ? error : message);
    span.setStatus({ code: SpanStatusCode.ERROR, message });
  } else span.setStatus({ code: SpanStatusCode.OK });
  span.end();
}

/**
 * The `traceparent` to write for `span`: the span's own when it is recording (a tracer provider
 * is registered); else a new span id in the trace of the event being handled, when there is
 * one (sdk/runtime/causal-context.ts), so a flow stays one trace without any OpenTelemetry
 * setup; else a fresh trace.
 */
export function traceparentOf(span: Span): string {
  const sc = span.spanContext();
  if (span.isRecording() && trace.isSpanContextValid(sc)) return formatTraceparent(sc);
  const parent = contextoCausal()?.traceparent;
  const inherited = parent ? parseTraceparent(parent) : undefined;
  if (inherited) return formatTraceparent({ ...inherited, spanId: randomId(8), isRemote: false });
  if (trace.isSpanContextValid(sc)) return formatTraceparent(sc);
  return `00-${randomId(16)}-${randomId(8)}-01`;
}

/** Random bytes taken from here, refilled 4 KiB at a time: one `randomFillSync` per ~170 ids instead of a Buffer per id. */
const entropy = Buffer.alloc(4096);
let entropyAt = entropy.length;

/** `bytes` random bytes as lowercase hex, never all zeros (an invalid W3C trace or span id). */
export function randomId(bytes: 8 | 16): string {
  for (;;) {
    if (entropyAt + bytes > entropy.length) {
      randomFillSync(entropy);
      entropyAt = 0;
    }
    const hex = entropy.toString('hex', entropyAt, entropyAt + bytes);
    entropyAt += bytes;
    if (!/^0+$/.test(hex)) return hex;
  }
}

/** The consumer span's `traceparent` when it is recording, else the event's own. */
export function handlerTraceparent(span: Span, parent: TraceParent | undefined): string | undefined {
  if (span.isRecording()) {
    const sc = span.spanContext();
    if (trace.isSpanContextValid(sc)) return formatTraceparent(sc);
  }
  return parent?.header;
}

/**
 * Runs `fn` with `span` as the active span (producer spans started inside become its children).
 * Without a context manager registered, `context.with` only calls `fn` and the context made for
 * it is never seen: then `fn` is called directly (every delivered event passes here; the context
 * and its copied map were ~250 bytes of garbage each).
 */
export function withActiveSpan<T>(span: Span, fn: () => T): T {
  if (!contextPropagates()) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

const PROBE = ROOT_CONTEXT.setValue(createContextKey('feromonios.probe'), true);
const activeIsProbe = (): boolean => context.active() === PROBE;

/** Set once a context manager was seen; until then asked on every call. */
let propagates = false;

/**
 * Whether a context manager is registered: only then does `context.with` make its context the
 * active one (the API's default manager ignores it). Asked on every call until one is seen — the
 * host application may register one after the bus started; without one the question costs a call
 * and allocates nothing. Once seen it is not asked again (with one, asking is a run of its own):
 * should the application unregister it, `context.with` is only called as it always was.
 */
const contextPropagates = (): boolean => (propagates ||= context.with(PROBE, activeIsProbe));

export const formatTraceparent = (sc: SpanContext): string =>
  `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;

/**
 * The span context a W3C `traceparent` (version 00) names, when valid. The header as the SDK and
 * OpenTelemetry write it — 55 characters, lowercase hex, ids not all zeros — is read by character
 * codes (every delivered event has one); anything else takes the regular expression (surrounding
 * blanks trimmed), which decides the same for every string (a property test).
 */
export function parseTraceparent(value: string): SpanContext | undefined {
  if (value.length === 55 && isPlainTraceparent(value))
    return {
      traceId: value.slice(3, 35),
      spanId: value.slice(36, 52),
      traceFlags: parseInt(value.slice(53), 16),
      isRemote: true,
    };
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(value.trim());
  if (!m?.[1] || !m[2] || !m[3]) return undefined;
  const sc: SpanContext = { traceId: m[1], spanId: m[2], traceFlags: parseInt(m[3], 16), isRemote: true };
  return trace.isSpanContextValid(sc) ? sc : undefined;
}

/** `00-<32 hex>-<16 hex>-<2 hex>` in lowercase, with a trace id and a span id that are not all zeros. */
function isPlainTraceparent(v: string): boolean {
  if (v.charCodeAt(0) !== 48 || v.charCodeAt(1) !== 48 || v.charCodeAt(2) !== 45) return false; // 00-
  if (v.charCodeAt(35) !== 45 || v.charCodeAt(52) !== 45) return false;
  let trace = 0;
  let span = 0;
  for (let i = 3; i < 55; i++) {
    if (i === 35 || i === 52) continue;
    const c = v.charCodeAt(i);
    const hex = (c >= 48 && c <= 57) || (c >= 97 && c <= 102);
    if (!hex) return false;
    if (c !== 48) {
      if (i < 35) trace++;
      else if (i < 52) span++;
    }
  }
  return trace > 0 && span > 0;
}
