import { Consumer } from '@platformatic/kafka';
import { Kafka, logLevel, type Consumer as KafkaJsConsumer } from 'kafkajs';
import { defaultOpcoesEventBus, type PublicarEventoDto } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import {
  patchKafkajsFetchAhead,
  patchKafkajsRecordDecoder,
  patchKafkajsResponseCopy,
  restoreKafkajsFetchAhead,
  restoreKafkajsRecordDecoder,
  restoreKafkajsResponseCopy,
} from '../sdk/service';
import { progress, type BenchContext } from './context';
import { now } from './stats';

export interface ConsumeClient {
  name: string;
  /** Events/s of the median round: the backlog's events ÷ the time from the first handled to the last. */
  perSec: number;
  /** SDK events/s ÷ this client's (1 for the SDK). */
  ratio: number;
  /** Fewest events handled in a round, out of the backlog (each round must handle all of them). */
  handled: number;
  /**
   * CPU of this process (user + system) per event from the first event handled to the last, in
   * µs, the median round's: every client reads on this one thread, so this is what each costs.
   */
  cpuMicros: number;
}

export interface ConsumeRow {
  events: number;
  partitions: number;
  rounds: number;
  sdk: ConsumeClient;
  /**
   * The SDK on kafkajs's record decoder, response buffering and fetching as released (ADR 0023, 0025, 0028);
   * `ratio` = what the three patches buy.
   */
  released: ConsumeClient;
  refs: ConsumeClient[];
}

/** One client reading the whole backlog once, in a consumer group of its own. */
interface Reader {
  name: string;
  /** Runs on the SDK's record decoder, response buffering and fetch ahead (ADR 0023, 0025, 0028), or on kafkajs's as released. */
  patched: boolean;
  /** Starts reading; `handled()` is called after each event is handled. Resolves to a stop function. */
  start(group: string, handled: () => void): Promise<() => Promise<void>>;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** The payload of a wire-format value (magic byte, 4-byte schema id, JSON): what every reference parses. */
const parsePayload = (value: Buffer | null | undefined): unknown =>
  value ? JSON.parse(value.toString('utf8', 5)) : undefined;

/**
 * A backlog already in the topic (`demanda.categorizada`, 3 partitions, written by the SDK),
 * read from the beginning by `inscrever` and by three references with the same guarantees —
 * at-least-once, offsets committed only after the events before them were handled, the
 * partitions read in parallel — each in a consumer group of its own: kafkajs `eachMessage`
 * (what most code writes), kafkajs `eachBatch` (the strongest plain kafkajs: a fetch handled in
 * one loop, one heartbeat and one commit per fetch) and `@platformatic/kafka` 1.x (its stream,
 * committing by hand every 500 events of a partition). Every reference parses each payload; the
 * SDK decodes, checks the headers, validates against the schema, de-duplicates, and runs the
 * handler protected (timeout, retries, DLQ). The references run on kafkajs's record decoder and
 * response buffering and fetching as released, the SDK on the patches every Feromônios client
 * installs (ADR 0023, 0025, 0028), and once more without them. Rounds alternate the clients; each figure is the
 * median round, timed from the first event handled to the last (the group's join is not counted).
 */
export async function benchConsume(ctx: BenchContext): Promise<ConsumeRow> {
  const events = ctx.quick ? 20_000 : 100_000;
  const rounds = ctx.quick ? 1 : 3;
  const seed = await ctx.bus({ clientId: 'bench-consume-seed' });
  const namespace = seed.topics.namespace;
  const topic = seed.topics.evento('demanda.categorizada');
  const partitions = seed.options.topics.partitions;
  const dto = (): PublicarEventoDto => ({
    tipo: 'demanda.categorizada',
    origem: 'D-3',
    payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
  });
  for (let sent = 0; sent < events; sent += 500) {
    await seed.publicarLote(Array.from({ length: Math.min(500, events - sent) }, dto));
    if ((sent / 500) % 40 === 0) progress(`consume: backlog ${sent}/${events} published…`);
  }
  await seed.encerrar();

  const kafka = new Kafka({ clientId: 'bench-consume-raw', brokers: ctx.brokers, logLevel: logLevel.NOTHING });
  const kafkajsReader = (name: string, run: (c: KafkaJsConsumer, handled: () => void) => Promise<void>): Reader => ({
    name,
    patched: false,
    async start(group, handled) {
      // the fetch size the SDK asks for (4 MB a partition; kafkajs's default is 1 MB): the same
      // reads, so the ratio measures the handling; @platformatic/kafka fetches up to 10 MB already
      const c = kafka.consumer({ groupId: group, maxBytesPerPartition: 4 * 1024 * 1024 });
      await c.connect();
      await c.subscribe({ topics: [topic], fromBeginning: true });
      await run(c, handled);
      return () => c.disconnect();
    },
  });
  const refs: Reader[] = [
    kafkajsReader('kafkajs `eachMessage`', (c, handled) =>
      c.run({
        partitionsConsumedConcurrently: partitions,
        eachMessage: ({ message }) => {
          parsePayload(message.value);
          handled();
          return Promise.resolve();
        },
      }),
    ),
    kafkajsReader('kafkajs `eachBatch`', (c, handled) =>
      c.run({
        partitionsConsumedConcurrently: partitions,
        eachBatch: async (p) => {
          for (const message of p.batch.messages) {
            if (!p.isRunning() || p.isStale()) return;
            parsePayload(message.value);
            handled();
          }
          const last = p.batch.messages.at(-1);
          if (last) p.resolveOffset(last.offset);
          await p.heartbeat();
          await p.commitOffsetsIfNecessary();
        },
      }),
    ),
    {
      name: '`@platformatic/kafka` 1.x stream',
      patched: false,
      async start(group, handled) {
        const consumer = new Consumer({
          groupId: group,
          clientId: 'bench-consume-platformatic',
          bootstrapBrokers: ctx.brokers,
        });
        const stream = await consumer.consume({
          topics: [topic],
          mode: 'committed',
          fallbackMode: 'earliest',
          autocommit: false,
        });
        const perPartition = new Map<number, number>();
        stream.on('data', (message) => {
          parsePayload(message.value);
          handled();
          const n = (perPartition.get(message.partition) ?? 0) + 1;
          perPartition.set(message.partition, n);
          if (n % 500 === 0) void message.commit(); // the offset after it, for its partition
        });
        return async () => {
          await stream.close();
          await consumer.close();
        };
      },
    },
  ];
  // every Feromônios client's patches on (the SDK) or kafkajs as released (the references, and the
  // SDK's second row: a new bus puts the patches back, so they are taken off again after it)
  const kafkajsPatches = (on: boolean): void => {
    if (on) {
      patchKafkajsRecordDecoder();
      patchKafkajsResponseCopy();
      patchKafkajsFetchAhead();
    } else {
      restoreKafkajsRecordDecoder();
      restoreKafkajsResponseCopy();
      restoreKafkajsFetchAhead();
    }
  };
  const sdkReader = (name: string, patched: boolean): Reader => ({
    name,
    patched,
    async start(group, handled) {
      const bus = await ctx.bus({
        namespace,
        clientId: 'bench-consume-sdk',
        consumo: { ...defaultOpcoesEventBus.consumo, desdeOInicio: true, particoesEmParalelo: partitions },
      });
      kafkajsPatches(patched);
      bus.inscrever('demanda.categorizada', group, () => handled());
      await bus.inscricoesProntas();
      return () => bus.encerrar();
    },
  });
  const sdk = sdkReader('SDK `inscrever`', true);
  const released = sdkReader("SDK, kafkajs's record decoder, response buffering and fetching as released", false);

  const runs = new Map<Reader, Array<{ perSec: number; handled: number; cpuMicros: number }>>();
  let groups = 0;
  const once = async (reader: Reader, round: number): Promise<void> => {
    progress(`consume: round ${round + 1}/${rounds} ${reader.name}…`);
    let count = 0;
    let first = 0;
    let last = 0;
    let cpuFirst: NodeJS.CpuUsage | undefined;
    let cpuLast: NodeJS.CpuUsage | undefined;
    // a colony code for the SDK, a group id for the references: a group of its own every time
    const group = `BENCHC${groups++}`;
    kafkajsPatches(reader.patched);
    const isSdk = reader === sdk || reader === released;
    const stop = await reader.start(isSdk ? group : `${namespace}.${group}`, () => {
      const t = now();
      if (count++ === 0) {
        first = t;
        cpuFirst = process.cpuUsage();
      }
      last = t;
      if (count === events) cpuLast = process.cpuUsage(cpuFirst);
    });
    const deadline = Date.now() + 180_000;
    while (count < events && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await stop();
    const perSec = count >= events ? (events - 1) / ((last - first) / 1000) : NaN;
    const cpuMicros = cpuLast ? (cpuLast.user + cpuLast.system) / (events - 1) : NaN;
    runs.set(reader, [...(runs.get(reader) ?? []), { perSec, handled: count, cpuMicros }]);
    progress(
      `consume: ${reader.name} ${Number.isFinite(perSec) ? Math.round(perSec) : '—'}/s, ${cpuMicros.toFixed(1)} µs CPU per event (${count} handled)`,
    );
  };
  for (let round = 0; round < rounds; round++) for (const r of [...refs, released, sdk]) await once(r, round);
  patchKafkajsRecordDecoder();

  const client = (r: Reader): Omit<ConsumeClient, 'ratio'> => {
    const xs = runs.get(r) ?? [];
    return {
      name: r.name,
      perSec: median(xs.map((x) => x.perSec)),
      handled: Math.min(...xs.map((x) => x.handled)),
      cpuMicros: median(xs.map((x) => x.cpuMicros)),
    };
  };
  const s = client(sdk);
  return {
    events,
    partitions,
    rounds,
    sdk: { ...s, ratio: 1 },
    released: { ...client(released), ratio: s.perSec / client(released).perSec },
    refs: refs.map((r) => {
      const x = client(r);
      return { ...x, ratio: s.perSec / x.perSec };
    }),
  };
}
