import { context, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { randomUUID } from 'node:crypto';
import type { EventoConsultado } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { createTestDatabase, waitFor } from './harness';
import { startTestBridge } from './harness/bridge';
import { createTestBus } from './harness/bus';

/**
 * One flow under the OpenTelemetry SDK, registered as a host application would (a tracer
 * provider and the AsyncLocalStorage context manager), with an in-memory exporter: a publish,
 * its consumption by a colony, a publish from inside that handler, and the bridge's write of both
 * to PostgreSQL — one trace id across the colonies (parent/child), the bridge's chunk spans
 * linked to each record's producer span, and the messaging semantic-convention attributes.
 */
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();

beforeAll(() => {
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});

const spans = (): ReadableSpan[] => exporter.getFinishedSpans();
const idOf = (s: ReadableSpan) => s.spanContext().spanId;
const traceOf = (s: ReadableSpan) => s.spanContext().traceId;

it('follows publish → consume → publish in the handler → the bridge write as one trace with the semantic conventions', async () => {
  const db = await createTestDatabase();
  const bus = await createTestBus({ pool: db.pool });
  await startTestBridge(bus, db);
  const colonia = 'T-1';
  const causeTopic = bus.topics.evento('demanda.recebida');
  const effectTopic = bus.topics.evento('demanda.normalizada');
  const correlacao_id = randomUUID();
  let effect: EventoConsultado | undefined;
  bus.inscrever('demanda.recebida', colonia, async (e) => {
    if (e.correlacao_id !== correlacao_id) return;
    effect = await bus.publicar({
      tipo: 'demanda.normalizada',
      origem: 'D-1b', // the catalog's publisher of the type
      payload: { ...SAMPLE_PAYLOADS['demanda.normalizada'] },
    });
  });
  await bus.inscricoesProntas(colonia);
  const cause = await bus.publicar({
    tipo: 'demanda.recebida',
    origem: 'D-1a',
    correlacao_id,
    payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
  });
  await waitFor(async () => effect !== undefined && (await bus.obterEventoPorId(effect.event_id)) !== null, {
    message: 'the effect published by the handler and written to the log',
  });
  const ofEvent = (id: string, kind: SpanKind) =>
    spans().find((s) => s.kind === kind && s.attributes['messaging.message.id'] === id);
  const linking = (spanId: string) =>
    spans().find(
      (s) => s.attributes['feromonios.componente'] === 'bridge' && s.links.some((l) => l.context.spanId === spanId),
    );
  await waitFor(
    () =>
      ofEvent(cause.event_id, SpanKind.PRODUCER) &&
      ofEvent(effect!.event_id, SpanKind.PRODUCER) &&
      linking(idOf(ofEvent(cause.event_id, SpanKind.PRODUCER)!)) &&
      linking(idOf(ofEvent(effect!.event_id, SpanKind.PRODUCER)!)),
    { message: 'every span of the flow exported' },
  );

  // 1. the publish: a root PRODUCER span named after its destination
  const send = ofEvent(cause.event_id, SpanKind.PRODUCER)!;
  expect(send.name).toBe(`send ${causeTopic}`);
  expect(send.parentSpanContext).toBeUndefined();
  expect(send.attributes).toMatchObject({
    'messaging.system': 'kafka',
    'messaging.operation.type': 'send',
    'messaging.operation.name': 'send',
    'messaging.destination.name': causeTopic,
    'messaging.message.id': cause.event_id,
    'messaging.kafka.message.key': correlacao_id,
    'messaging.destination.partition.id': String(cause.posicao?.particao),
    'messaging.kafka.offset': Number(cause.posicao?.offset),
  });
  const flow = traceOf(send);

  // 2. the colony's consumption: a CONSUMER span, child of the producer span (the record's traceparent)
  const process = ofEvent(cause.event_id, SpanKind.CONSUMER)!;
  expect(process.name).toBe(`process ${causeTopic}`);
  expect(traceOf(process)).toBe(flow);
  expect(process.parentSpanContext?.spanId).toBe(idOf(send));
  expect(process.attributes).toMatchObject({
    'messaging.system': 'kafka',
    'messaging.operation.type': 'process',
    'messaging.destination.name': causeTopic,
    'messaging.consumer.group.name': bus.topics.grupo(colonia),
    'messaging.destination.partition.id': String(cause.posicao?.particao),
    'messaging.kafka.offset': Number(cause.posicao?.offset),
    'feromonios.colonia': colonia,
  });
  expect(process.status.code).toBe(1); // OK

  // 3. the publish inside the handler: child of the consumer span, same trace
  const sendEffect = ofEvent(effect!.event_id, SpanKind.PRODUCER)!;
  expect(sendEffect.name).toBe(`send ${effectTopic}`);
  expect(traceOf(sendEffect)).toBe(flow);
  expect(sendEffect.parentSpanContext?.spanId).toBe(idOf(process));

  // 4. the bridge's write: a span per chunk written, linked to each record's producer span
  for (const [producer, topic] of [
    [send, causeTopic],
    [sendEffect, effectTopic],
  ] as const) {
    const write = linking(idOf(producer))!;
    expect(write.kind).toBe(SpanKind.CONSUMER);
    expect(write.name).toBe(`process ${topic}`);
    expect(write.links.find((l) => l.context.spanId === idOf(producer))?.context.traceId).toBe(flow);
    expect(write.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'messaging.operation.type': 'process',
      'messaging.destination.name': topic,
      'messaging.consumer.group.name': `${bus.topics.namespace}-bridge`,
      'db.system.name': 'postgresql',
    });
    // the sequencer's leader holds its chunks in memory for the log (ADR 0029); one that did not fit is staged
    expect(['core.event_log', 'core.event_staging']).toContain(write.attributes['db.collection.name']);
    expect(write.attributes['messaging.batch.message_count']).toBeGreaterThanOrEqual(1);
    expect(write.status.code).toBe(1);
  }

  // the log keeps the flow (the audit team's view of the same trace)
  const logged = await bus.consultarEventos({ correlacao_id });
  expect(logged.linhas.map((e) => e.event_id)).toEqual([cause.event_id, effect!.event_id]);
});
