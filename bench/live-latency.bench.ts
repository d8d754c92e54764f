import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { ensureTopics, withAdmin } from '../sdk/wire';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { progress, type BenchContext } from './context';
import { kafkajsProducer } from './reference-clients';
import { atRate, now, summarize, type LatencySummary } from './stats';

export interface LiveRow {
  rate: number;
  seconds: number;
  sdk: LatencySummary;
  raw: LatencySummary;
  lost: { sdk: number; raw: number };
}

/**
 * Publish → handler at a fixed rate: `publicar` + `inscrever` (decode, schema validation,
 * protected execution) against a plain kafkajs producer → consumer on a topic of the same shape,
 * one after the other in the same run.
 */
export async function benchLiveLatency(ctx: BenchContext): Promise<LiveRow> {
  const rate = 1000;
  const seconds = ctx.quick ? 8 : 30;

  // SDK
  const bus = await ctx.bus({ clientId: 'bench-live' });
  const sentAt = new Map<string, number>();
  const sdkLat: number[] = [];
  bus.inscrever('demanda.categorizada', 'BENCH', (e) => {
    const t = sentAt.get(e.event_id);
    if (t !== undefined) sdkLat.push(now() - t);
  });
  await bus.inscricoesProntas();
  await bus.publicar({
    tipo: 'demanda.categorizada',
    origem: 'D-3',
    payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
  });
  progress(`live latency: SDK at ${rate}/s for ${seconds} s…`);
  const sdkTotal = await atRate(rate, seconds, () => {
    const event_id = randomUUID();
    sentAt.set(event_id, now());
    void bus.publicar({
      event_id,
      tipo: 'demanda.categorizada',
      origem: 'D-3',
      payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
    });
  });
  await waitUntil(() => sdkLat.length >= sdkTotal, 15_000);

  // raw kafkajs
  const kafka = new Kafka({ clientId: 'bench-live-raw', brokers: ctx.brokers, logLevel: logLevel.NOTHING });
  const topic = `${bus.topics.namespace}.raw-live`;
  await withAdmin(kafka, (admin) => ensureTopics(admin, [topic], bus.options.topics));
  const producer = await kafkajsProducer(kafka);
  const consumer = kafka.consumer({ groupId: `${topic}.group`, maxWaitTimeInMs: 100 });
  const rawLat: number[] = [];
  const rawSent = new Map<string, number>();
  let ready = false;
  let joined = false;
  consumer.on(consumer.events.GROUP_JOIN, () => (joined = true));
  consumer.on(consumer.events.FETCH, () => (ready ||= joined));
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: false });
  await consumer.run({
    partitionsConsumedConcurrently: 3,
    eachMessage: ({ message }) => {
      const t = rawSent.get(message.key?.toString() ?? '');
      if (t !== undefined) rawLat.push(now() - t);
      JSON.parse(message.value?.toString() ?? '{}'); // the consumer at least parses what it gets
      return Promise.resolve();
    },
  });
  await waitUntil(() => ready, 30_000);
  const body = JSON.stringify(SAMPLE_PAYLOADS['demanda.categorizada']);
  progress(`live latency: raw kafkajs at ${rate}/s for ${seconds} s…`);
  const rawTotal = await atRate(rate, seconds, () => {
    const id = randomUUID();
    rawSent.set(id, now());
    void producer.send({ topic, acks: -1, messages: [{ key: id, value: body }] });
  });
  await waitUntil(() => rawLat.length >= rawTotal, 15_000);
  await consumer.disconnect();
  await producer.disconnect();
  return {
    rate,
    seconds,
    sdk: summarize(sdkLat),
    raw: summarize(rawLat),
    lost: { sdk: sdkTotal - sdkLat.length, raw: rawTotal - rawLat.length },
  };
}

async function waitUntil(cond: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}
