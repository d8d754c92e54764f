import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, Partitioners, type Message } from 'kafkajs';
import type { PublicarEventoDto } from '../sdk';
import { buildHeaders, encodeValue } from '../sdk/wire';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { progress, type BenchContext } from './context';
import { now, percentile, pool } from './stats';

export interface PublishRow {
  mode: string;
  sdkPerSec: number;
  rawPerSec: number;
  ratio: number;
  sdkP50: number;
  sdkP99: number;
  rawP50: number;
  rawP99: number;
}

interface Run {
  perSec: number;
  lat: number[];
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/**
 * `publicar` sequentially and with 64 in flight, and `publicarLote`, against a plain kafkajs
 * producer with the same guarantees (idempotent, acks=all, one in-flight request) sending the
 * same bytes (wire-format value, CloudEvents headers, key) to the same topic. Rounds alternate
 * SDK and raw; each figure is the median round.
 */
export async function benchPublish(ctx: BenchContext): Promise<PublishRow[]> {
  const bus = await ctx.bus({ clientId: 'bench-sdk' });
  const synced = await bus.sincronizarSchemas();
  const schemaId = synced.find((s) => s.tipo === 'demanda.categorizada' && s.versao === '1.0.0')?.id as number;
  const topic = bus.topics.evento('demanda.categorizada');
  await bus.publicar(dto()); // topic exists, producer connected, ids cached
  const kafka = new Kafka({ clientId: 'bench-raw', brokers: ctx.brokers, logLevel: logLevel.NOTHING });
  const raw = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await raw.connect();
  const rawMessage = (): Message => {
    const d = dto();
    const event_id = randomUUID();
    const ev = {
      event_id,
      tipo: d.tipo,
      versao_schema: '1.0.0',
      timestamp: new Date().toISOString(),
      origem: d.origem,
      correlacao_id: event_id,
      causation_id: null,
    };
    return {
      key: event_id,
      value: encodeValue(schemaId, JSON.stringify(d.payload)),
      headers: buildHeaders(ev, { traceparent: `00-${randomUUID().replace(/-/g, '')}-${'0'.repeat(15)}1-01` }),
      timestamp: String(Date.now()),
    };
  };

  const rounds = ctx.quick ? 1 : 3;
  const nSeq = ctx.quick ? 400 : 2_000;
  const nPar = ctx.quick ? 4_000 : 30_000;
  const batch = 500;
  const modes: Array<{ mode: string; sdk: () => Promise<Run>; raw: () => Promise<Run> }> = [
    {
      mode: 'sequential',
      sdk: () => timed(nSeq, 1, async () => void (await bus.publicar(dto()))),
      raw: () => timed(nSeq, 1, async () => void (await raw.send({ topic, acks: -1, messages: [rawMessage()] }))),
    },
    {
      mode: '64 in flight',
      sdk: () => timed(nPar, 64, async () => void (await bus.publicar(dto()))),
      raw: () => timed(nPar, 64, async () => void (await raw.send({ topic, acks: -1, messages: [rawMessage()] }))),
    },
    {
      mode: `publicarLote (${batch})`,
      sdk: () =>
        timed(nPar / batch, 1, async () => void (await bus.publicarLote(Array.from({ length: batch }, dto))), batch),
      raw: () =>
        timed(
          nPar / batch,
          1,
          async () => void (await raw.send({ topic, acks: -1, messages: Array.from({ length: batch }, rawMessage) })),
          batch,
        ),
    },
  ];
  const rows: PublishRow[] = [];
  for (const m of modes) {
    const sdkRuns: Run[] = [];
    const rawRuns: Run[] = [];
    for (let r = 0; r < rounds; r++) {
      progress(`publish ${m.mode}: round ${r + 1}/${rounds} raw kafkajs…`);
      rawRuns.push(await m.raw());
      progress(`publish ${m.mode}: round ${r + 1}/${rounds} SDK…`);
      sdkRuns.push(await m.sdk());
    }
    const sdkPerSec = median(sdkRuns.map((x) => x.perSec));
    const rawPerSec = median(rawRuns.map((x) => x.perSec));
    const sdkLat = sdkRuns.flatMap((x) => x.lat);
    const rawLat = rawRuns.flatMap((x) => x.lat);
    rows.push({
      mode: m.mode,
      sdkPerSec,
      rawPerSec,
      ratio: sdkPerSec / rawPerSec,
      sdkP50: percentile(sdkLat, 50),
      sdkP99: percentile(sdkLat, 99),
      rawP50: percentile(rawLat, 50),
      rawP99: percentile(rawLat, 99),
    });
    progress(`publish ${m.mode}: SDK ${Math.round(sdkPerSec)}/s, raw ${Math.round(rawPerSec)}/s`);
  }
  await raw.disconnect();
  return rows;
}

function dto(): PublicarEventoDto {
  return { tipo: 'demanda.categorizada', origem: 'D-3', payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] } };
}

/** `calls` calls of `fn`, `concurrency` at a time; events/s counts `perCall` events per call. */
async function timed(calls: number, concurrency: number, fn: () => Promise<void>, perCall = 1): Promise<Run> {
  const lat: number[] = [];
  const t0 = now();
  await pool(calls, concurrency, async () => {
    const s = now();
    await fn();
    lat.push(now() - s);
  });
  return { perSec: (calls * perCall) / ((now() - t0) / 1000), lat };
}
