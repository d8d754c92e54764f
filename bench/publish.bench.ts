import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Message } from 'kafkajs';
import type { PublicarEventoDto } from '../sdk';
import { buildHeaders, encodeValue } from '../sdk/wire';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { patchKafkajsEncoder, restoreKafkajsEncoder } from '../sdk/service';
import { progress, type BenchContext } from './context';
import {
  kafkajsBatched,
  kafkajsPerCall,
  kafkajsProducer,
  platformaticProducer,
  type ReferenceProducer,
} from './reference-clients';
import { now, percentile, pool } from './stats';

export interface Measured {
  perSec: number;
  p50: number;
  p99: number;
}

export interface PublishRow {
  mode: string;
  sdk: Measured;
  /** The references, in the order of `REFERENCES`; `ratio` = SDK events/s ÷ the reference's. */
  refs: Array<Measured & { name: string; ratio: number }>;
  /** The SDK with kafkajs's encoder as released (ADR 0022); `ratio` = what the patch buys. */
  released: Measured & { ratio: number };
}

interface Run {
  perSec: number;
  lat: number[];
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/**
 * `publicar` sequentially and with 64 in flight, and `publicarLote`, against three references
 * with the same guarantees (idempotent, acks=all, one in-flight request) sending the same bytes
 * (wire-format value, CloudEvents headers, key) to the same topic: kafkajs `send()` per call,
 * kafkajs batched by hand, and `@platformatic/kafka` 1.x (bench/reference-clients.ts). Rounds
 * alternate the clients; each figure is the median round. The kafkajs references run on kafkajs's
 * encoder as released, as a user's own code would; the SDK runs with the patch every Feromônios
 * client applies (ADR 0022), and once more without it, to show what the patch buys.
 */
export async function benchPublish(ctx: BenchContext): Promise<PublishRow[]> {
  const bus = await ctx.bus({ clientId: 'bench-sdk' });
  const synced = await bus.sincronizarSchemas();
  const schemaId = synced.find((s) => s.tipo === 'demanda.categorizada' && s.versao === '1.0.0')?.id as number;
  const topic = bus.topics.evento('demanda.categorizada');
  await bus.publicar(dto()); // topic exists, producer connected, ids cached
  const kafka = new Kafka({ clientId: 'bench-raw', brokers: ctx.brokers, logLevel: logLevel.NOTHING });
  const raw = await kafkajsProducer(kafka);
  const batchedRaw = await kafkajsProducer(kafka);
  const refs: ReferenceProducer[] = [
    kafkajsPerCall(raw, topic),
    kafkajsBatched(batchedRaw, topic),
    platformaticProducer(ctx.brokers, topic),
  ];
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

  for (const r of refs) await r.send([rawMessage()]); // connected, metadata known
  const rounds = ctx.quick ? 1 : 3;
  const nSeq = ctx.quick ? 400 : 2_000;
  const nPar = ctx.quick ? 4_000 : 30_000;
  const batch = 500;
  const modes: Array<{ mode: string; sdk: () => Promise<Run>; ref: (r: ReferenceProducer) => Promise<Run> }> = [
    {
      mode: 'sequential',
      sdk: () => timed(nSeq, 1, async () => void (await bus.publicar(dto()))),
      ref: (r) => timed(nSeq, 1, () => r.send([rawMessage()])),
    },
    {
      mode: '64 in flight',
      sdk: () => timed(nPar, 64, async () => void (await bus.publicar(dto()))),
      ref: (r) => timed(nPar, 64, () => r.send([rawMessage()])),
    },
    {
      mode: `publicarLote (${batch})`,
      sdk: () =>
        timed(nPar / batch, 1, async () => void (await bus.publicarLote(Array.from({ length: batch }, dto))), batch),
      ref: (r) => timed(nPar / batch, 1, () => r.send(Array.from({ length: batch }, rawMessage)), batch),
    },
  ];
  const rows: PublishRow[] = [];
  for (const m of modes) {
    const sdkRuns: Run[] = [];
    const releasedRuns: Run[] = [];
    const refRuns: Run[][] = refs.map(() => []);
    for (let round = 0; round < rounds; round++) {
      restoreKafkajsEncoder(); // the references, and the SDK's second run, on kafkajs as released
      for (const [i, r] of refs.entries()) {
        progress(`publish ${m.mode}: round ${round + 1}/${rounds} ${r.name}…`);
        refRuns[i]?.push(await m.ref(r));
      }
      progress(`publish ${m.mode}: round ${round + 1}/${rounds} SDK, kafkajs's encoder as released…`);
      releasedRuns.push(await m.sdk());
      patchKafkajsEncoder();
      progress(`publish ${m.mode}: round ${round + 1}/${rounds} SDK…`);
      sdkRuns.push(await m.sdk());
    }
    const sdk = measured(sdkRuns);
    const released = measured(releasedRuns);
    rows.push({
      mode: m.mode,
      sdk,
      refs: refs.map((r, i) => {
        const x = measured(refRuns[i] ?? []);
        return { name: r.name, ...x, ratio: sdk.perSec / x.perSec };
      }),
      released: { ...released, ratio: sdk.perSec / released.perSec },
    });
    progress(
      `publish ${m.mode}: SDK ${Math.round(sdk.perSec)}/s; ${rows
        .at(-1)
        ?.refs.map((r) => `${r.name} ${Math.round(r.perSec)}/s`)
        .join('; ')}`,
    );
  }
  for (const r of refs) await r.close();
  return rows;
}

const measured = (runs: Run[]): Measured => {
  const lat = runs.flatMap((x) => x.lat);
  return { perSec: median(runs.map((x) => x.perSec)), p50: percentile(lat, 50), p99: percentile(lat, 99) };
};

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
