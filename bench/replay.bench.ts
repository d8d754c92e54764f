import { progress, type BenchContext } from './context';
import { retainedMemory, timedMs } from './stats';

export interface ReplayRow {
  events: number;
  rawMs: number;
  rawMb: number;
  replayMs: number;
  replayMb: number;
  streamMs: number;
  streamMb: number;
  streamQuarterMb: number;
  ratio: number;
}

/**
 * `replayDeSequence` (accumulating, batches of 1000) and `replayStream` over the same range,
 * against one raw `SELECT` of that range with the same columns: time and peak memory. The
 * stream is also run over a quarter of the range to show its memory does not grow with it.
 */
export async function benchReplay(ctx: BenchContext): Promise<ReplayRow> {
  const n = ctx.quick ? 30_000 : 100_000;
  const db = await ctx.database('replay');
  progress(`replay: seeding ${n} redacted rows…`);
  await db.pool.query(
    `INSERT INTO core.event_log (event_id, tipo, origem, correlacao_id, timestamp, payload)
     SELECT gen_random_uuid(), 'demanda.recebida', 'D-1a', gen_random_uuid(), now() - (g || ' seconds')::interval,
            jsonb_build_object('demanda_id', gen_random_uuid(), 'texto_bruto', 'hmac-sha256:' || md5(g::text) || md5((g + 1)::text),
                               'localizacao_bruta', jsonb_build_object('lat', -23.55, 'lng', -46.63), 'canal', 'app')
       FROM generate_series(1, $1) g`,
    [n],
  );
  await db.pool.query('VACUUM ANALYZE core.event_log');
  const bus = await ctx.bus({ pool: db.pool });
  const columns = `sequence_number::text AS sequence_number, event_id::text AS event_id, tipo, versao_schema, timestamp, origem,
    correlacao_id::text AS correlacao_id, causation_id::text AS causation_id, payload, criado_em`;

  const rawSelect = async (): Promise<Array<Record<string, unknown>>> =>
    (
      await db.pool.query<Record<string, unknown>>(
        `SELECT ${columns} FROM core.event_log WHERE sequence_number > 0 ORDER BY event_log.sequence_number`,
      )
    ).rows;
  const streamFrom = async (from: bigint, probe?: () => void): Promise<number> => {
    let c = 0;
    for await (const e of bus.replayStream(from)) {
      if (e) c++;
      if (probe && c % 2_000 === 0) probe();
    }
    return c;
  };
  // Time first (no probes), then memory held (garbage collected at each probe).
  progress('replay: timing raw SELECT, replayDeSequence, replayStream…');
  const raw = await timedMs(async () => (await rawSelect()).length);
  const replay = await timedMs(async () => (await bus.replayDeSequence(0)).length);
  const stream = await timedMs(() => streamFrom(0n));
  progress('replay: memory held by each reader…');
  const rawMem = await retainedMemory(async (probe) => {
    const rows = await rawSelect();
    probe();
    return rows.length;
  });
  const replayMem = await retainedMemory(async (probe) => {
    const all = await bus.replayDeSequence(0);
    probe();
    return all.length;
  });
  const streamMem = await retainedMemory((probe) => streamFrom(0n, probe));
  const quarterMem = await retainedMemory((probe) => streamFrom(BigInt(Math.floor((n * 3) / 4)), probe));
  if (raw.result !== n || replay.result !== n || stream.result !== n)
    throw new Error(`replay counts differ: raw ${raw.result}, replay ${replay.result}, stream ${stream.result}`);
  return {
    events: n,
    rawMs: raw.ms,
    rawMb: rawMem.peakMb,
    replayMs: replay.ms,
    replayMb: replayMem.peakMb,
    streamMs: stream.ms,
    streamMb: streamMem.peakMb,
    streamQuarterMb: quarterMem.peakMb,
    ratio: replay.ms / raw.ms,
  };
}
