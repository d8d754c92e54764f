import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Admin, type Consumer } from 'kafkajs';
import { silentLogger } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import {
  createTestDatabase,
  randomNamespace,
  registerCleanup,
  serviceEnv,
  waitFor,
  type TestDatabase,
} from '../test/harness';
import { stageEvents } from './event-log-writer';
import { BridgeMetrics } from './metrics';
import { Sequencer, type OpcoesSequencer } from './sequencer';
import { frontierMetadata } from './staging-frontier';

/** A staged event of namespace `ns` at `offset`, with a producer session's order if given. */
const staged = (ns: string, offset: number, ordem?: { sessao: string; contador: number; firme: number }) => {
  const event_id = randomUUID();
  return {
    event_id,
    tipo: 'demanda.normalizada',
    versao_schema: '1.0.0',
    timestamp: new Date().toISOString(),
    origem: 'D-1b',
    correlacao_id: event_id,
    causation_id: null,
    tenant_id: null,
    payload: JSON.stringify(SAMPLE_PAYLOADS['demanda.normalizada']),
    kafka_topic: `${ns}.evento.demanda.normalizada`,
    kafka_partition: 0,
    kafka_offset: String(offset),
    publicado_em: new Date().toISOString(),
    ordem_sessao: ordem?.sessao ?? null,
    ordem_contador: ordem?.contador ?? null,
    ordem_firme: ordem?.firme ?? null,
  };
};

/** The event ids in `core.event_log`, in sequence order. */
const logIds = async (db: TestDatabase) =>
  (
    await db.pool.query<{ event_id: string }>('SELECT event_id::text FROM core.event_log ORDER BY sequence_number')
  ).rows.map((r) => r.event_id);

/** A Kafka admin client for the sequencer, disconnected at cleanup. */
async function connectedAdmin(): Promise<Admin> {
  const kafka = new Kafka({ clientId: 'sequencer-test', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  registerCleanup(() => admin.disconnect());
  return admin;
}

/** A started sequencer of namespace `ns` over `pool` (stopped at cleanup), with `o` over the defaults. */
function startSequencer(
  pool: TestDatabase['pool'],
  ns: string,
  o: Pick<OpcoesSequencer, 'admin' | 'vacuumEveryRows' | 'batchSize' | 'pollMs'> &
    Partial<Pick<OpcoesSequencer, 'orderSkewMs' | 'maxIdleMs' | 'roundLimit' | 'orderGapMs' | 'commitJitterMs'>>,
): { sequencer: Sequencer; metrics: BridgeMetrics } {
  const metrics = new BridgeMetrics();
  const sequencer = new Sequencer({
    pool,
    groupId: `${ns}-bridge`,
    pattern: new RegExp(`^${ns}\\.evento\\.`),
    topicPrefix: `${ns}.evento.`,
    causalHoldMs: 30_000,
    maxIdleMs: 30_000,
    orderGapMs: 2_000,
    orderSkewMs: 2_000,
    roundLimit: 1000,
    onRefused: () => Promise.resolve(),
    logger: silentLogger,
    metrics,
    ...o,
  });
  registerCleanup(() => sequencer.stop());
  sequencer.start();
  return { sequencer, metrics };
}

/** A test database, a namespace, and its started sequencer that waits up to 30 s for a producer's gap. */
async function sequencerForGaps(): Promise<{ db: TestDatabase; ns: string }> {
  const db = await createTestDatabase();
  const ns = randomNamespace();
  const admin = await connectedAdmin();
  startSequencer(db.pool, ns, {
    admin: () => admin,
    vacuumEveryRows: 0,
    batchSize: 100,
    pollMs: 20,
    orderGapMs: 30_000,
  });
  return { db, ns };
}

describe('the sequencer loop', () => {
  it('a round that keeps failing is retried with backoff, counted, reported failing, and recovers by itself', async () => {
    const db = await createTestDatabase();
    const ns = randomNamespace();
    const event = staged(ns, 0);
    const { event_id } = event;
    await stageEvents(db.pool, [event]);
    // Kafka "unavailable" to the sequencer at first: no admin client yet
    const kafkaAdmin: { current?: Admin } = {};
    const { sequencer, metrics } = startSequencer(db.pool, ns, {
      admin: () => kafkaAdmin.current,
      vacuumEveryRows: 0,
      batchSize: 100,
      pollMs: 50,
    });
    await waitFor(() => sequencer.failing, { timeoutMs: 20_000, message: 'the sequencer reports itself failing' });
    expect((await metrics.sequencerFailures.get()).values[0]?.value).toBeGreaterThanOrEqual(3);
    expect(sequencer.leader).toBe(false); // it let go of the lock to take it anew

    const kafka = new Kafka({ clientId: 'sequencer-test', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
    const connected = kafka.admin();
    await connected.connect();
    registerCleanup(() => connected.disconnect());
    kafkaAdmin.current = connected;
    await waitFor(
      async () => (await db.pool.query('SELECT 1 FROM core.event_log WHERE event_id = $1', [event_id])).rowCount === 1,
      { timeoutMs: 20_000, message: 'the staged event written once Kafka answers' },
    );
    expect(sequencer.failing).toBe(false);
    expect(sequencer.leader).toBe(true);
  });
});

describe('the staging depth gauge', () => {
  it('is counted beside the rounds — even while they fail — and says 0 once staging is empty', async () => {
    const db = await createTestDatabase();
    const ns = randomNamespace();
    const events = [staged(ns, 0), staged(ns, 1), staged(ns, 2)];
    await stageEvents(db.pool, events);
    await stageEvents(db.pool, [staged(randomNamespace(), 0)]); // another namespace's: not counted
    const kafkaAdmin: { current?: Admin } = {};
    const { metrics } = startSequencer(db.pool, ns, {
      admin: () => kafkaAdmin.current, // Kafka "unavailable": every round fails after the look at staging
      vacuumEveryRows: 0,
      batchSize: 100,
      pollMs: 50,
    });
    const depth = async () => (await metrics.stagingDepth.get()).values[0]?.value;
    await waitFor(async () => (await depth()) === 3, { timeoutMs: 20_000, message: 'the three staged events counted' });
    expect((await metrics.sequencerFailures.get()).values[0]?.value).toBeGreaterThanOrEqual(1);
    kafkaAdmin.current = await connectedAdmin();
    await waitFor(async () => (await logIds(db)).length === 3, { timeoutMs: 20_000, message: 'the three in the log' });
    await waitFor(async () => (await depth()) === 0, { timeoutMs: 20_000, message: 'the gauge back to 0' });
  });
});

describe('a producer session’s gaps and its settled mark (feromonios_ordem)', () => {
  it('a gap still open at its producer (a send written for some partitions, sent again for the rest) holds past the old 2 s; a gap it settled does not hold', async () => {
    const { db, ns } = await sequencerForGaps();
    const [open, settled] = [randomUUID(), randomUUID()];
    let offset = 0;
    const ev = (sessao: string, contador: number, firme: number) => staged(ns, offset++, { sessao, contador, firme });
    const inLog = () => logIds(db);
    // both sessions' first counters written (a session first seen is never held)
    const c1 = ev(open, 1, 1);
    const d1 = ev(settled, 1, 1);
    await stageEvents(db.pool, [c1, d1]);
    await waitFor(async () => (await inLog()).length === 2, {
      timeoutMs: 20_000,
      message: 'the first counters written',
    });
    // `open`: a pass sent 2..5 at once (mark 2); the broker took 4 and 5, refused 2 and 3 for now.
    // `settled`: 2 and 3 failed and were given up; 4 was sent after (mark 4)
    const [c4, c5] = [ev(open, 4, 2), ev(open, 5, 2)];
    const d4 = ev(settled, 4, 4);
    await stageEvents(db.pool, [c4, c5, d4]);
    await waitFor(async () => (await inLog()).includes(d4.event_id), {
      timeoutMs: 20_000,
      message: 'a gap below the settled mark does not hold what follows it',
    });
    await new Promise((r) => setTimeout(r, 4_000)); // twice the old BRIDGE_ORDER_GAP_MS
    expect((await inLog()).slice(2)).toEqual([d4.event_id]);
    // the next pass re-sends 2 and 3 with their counters: the batch is written in its order
    const [c2, c3] = [ev(open, 2, 2), ev(open, 3, 2)];
    await stageEvents(db.pool, [c3, c2]);
    await waitFor(async () => (await inLog()).length === 7, {
      timeoutMs: 20_000,
      message: 'the send whole in the log',
    });
    expect((await inLog()).slice(3)).toEqual([c2.event_id, c3.event_id, c4.event_id, c5.event_id]);
    // a copy sent again raises the staged copy's mark: counter 7's retry says 6 was given up
    // (twice in one chunk as well: the staging INSERT keeps one row per event)
    const c7 = ev(open, 7, 6);
    await stageEvents(db.pool, [c7]);
    await new Promise((r) => setTimeout(r, 500));
    expect(await inLog()).not.toContain(c7.event_id);
    await stageEvents(db.pool, [
      { ...c7, kafka_offset: String(offset++) },
      { ...c7, kafka_offset: String(offset++), ordem_firme: 7 },
    ]);
    await waitFor(async () => (await inLog()).includes(c7.event_id), {
      timeoutMs: 20_000,
      message: 'the retry’s mark reached the staged copy',
    });
    expect(await inLog()).toHaveLength(8);
  });
});

describe('a session first seen', () => {
  it('waits for a gap between its staged counters (the first round after an outage, a pass’s copies on one partition still on their way)', async () => {
    const { db, ns } = await sequencerForGaps();
    const s = randomUUID();
    let offset = 0;
    const ev = (contador: number) => staged(ns, offset++, { sessao: s, contador, firme: 5 });
    const [c5, c6, c8] = [ev(5), ev(6), ev(8)];
    await stageEvents(db.pool, [c8, c6, c5]);
    await waitFor(async () => (await logIds(db)).length === 2, { timeoutMs: 20_000, message: '5 and 6 written' });
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await logIds(db)).toEqual([c5.event_id, c6.event_id]); // 8 waits for 7
    const c7 = ev(7);
    await stageEvents(db.pool, [c7]);
    await waitFor(async () => (await logIds(db)).length === 4, { timeoutMs: 20_000, message: 'the four in the log' });
    expect(await logIds(db)).toEqual([c5, c6, c7, c8].map((e) => e.event_id));
  });
});

describe('a round short of a partition and the settled mark', () => {
  it('a partition given up (no progress) may hold counters Kafka acknowledged: a mark does not settle the gap, the wait does', async () => {
    // fault scenario 7 (CI 2026-12-04): the bridge's consumer stalled on one partition after the
    // quorum came back, the sequencer went on without it, and a later publish's mark (everything
    // before it acknowledged) let one partition's share of an outbox backlog be written before
    // the other's, still unstaged
    const db = await createTestDatabase();
    const ns = randomNamespace();
    const admin = await connectedAdmin();
    const topic = `${ns}.evento.demanda.normalizada`;
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 2 }] });
    const kafka = new Kafka({ clientId: 'sequencer-test', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    registerCleanup(() => producer.disconnect());
    // partition 0: three records, staged (committed to 3); partition 1: one record never staged
    await producer.send({ topic, messages: [0, 1, 2].map(() => ({ partition: 0, value: 'x' })) });
    await producer.send({ topic, messages: [{ partition: 1, value: 'x' }] });
    await admin.setOffsets({ groupId: `${ns}-bridge`, topic, partitions: [{ partition: 0, offset: '3' }] });
    const { metrics } = startSequencer(db.pool, ns, {
      admin: () => admin,
      vacuumEveryRows: 0,
      batchSize: 100,
      pollMs: 20,
      maxIdleMs: 1_000,
      orderGapMs: 8_000,
    });
    const s = randomUUID();
    const at = (partition: number, offset: number, contador: number, firme: number) => ({
      ...staged(ns, offset, { sessao: s, contador, firme }),
      kafka_partition: partition,
    });
    const c1 = at(0, 0, 1, 1);
    await stageEvents(db.pool, [c1]);
    await waitFor(async () => (await logIds(db)).length === 1, { timeoutMs: 20_000, message: 'counter 1 written' });
    // counter 2 acknowledged by Kafka in partition 1 (not staged: the bridge stalls there); 3 says so (mark 3)
    const c3 = at(0, 1, 3, 3);
    await stageEvents(db.pool, [c3]);
    await waitFor(async () => ((await metrics.idlePartitions.get()).values[0]?.value ?? 0) >= 1, {
      timeoutMs: 20_000,
      message: 'partition 1 given up',
    });
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await logIds(db)).toEqual([c1.event_id]); // 3 waits for 2 despite the mark
    const c2 = at(1, 0, 2, 2);
    await stageEvents(db.pool, [c2]);
    await waitFor(async () => (await logIds(db)).length === 3, { timeoutMs: 20_000, message: 'the three in the log' });
    expect(await logIds(db)).toEqual([c1.event_id, c2.event_id, c3.event_id]);
    expect((await metrics.orderGapExpired.get()).values[0]?.value ?? 0).toBe(0);
    // the bound holds all the same: a gap in a short round that never fills is written after orderGapMs, counted
    const c5 = at(0, 2, 5, 5);
    await stageEvents(db.pool, [c5]);
    await waitFor(async () => (await logIds(db)).includes(c5.event_id), {
      timeoutMs: 30_000,
      message: 'counter 5 written after the wait',
    });
    expect((await metrics.orderGapExpired.get()).values[0]?.value).toBe(1);
  }, 60_000);
});

describe('a failed round and the sessions’ order', () => {
  it('a round that failed (Kafka unavailable) lets go of the lock, and the sequencer taking it again still knows the sessions’ counters when nobody else wrote', async () => {
    const db = await createTestDatabase();
    const ns = randomNamespace();
    const connected = await connectedAdmin();
    const kafkaAdmin: { current?: Admin } = { current: connected };
    const { sequencer, metrics } = startSequencer(db.pool, ns, {
      admin: () => kafkaAdmin.current,
      vacuumEveryRows: 0,
      batchSize: 100,
      pollMs: 20,
      orderGapMs: 30_000,
    });
    const s = randomUUID();
    let offset = 0;
    const ev = (contador: number, firme: number) => staged(ns, offset++, { sessao: s, contador, firme });
    const inLog = () => logIds(db);
    const c1 = ev(1, 1);
    await stageEvents(db.pool, [c1]);
    await waitFor(async () => (await inLog()).length === 1, { timeoutMs: 20_000, message: 'counter 1 written' });
    // Kafka unavailable to the sequencer: its rounds fail and it lets go of the lock
    kafkaAdmin.current = undefined;
    const c3 = ev(3, 2); // sent with 2 in flight; 2 comes later
    await stageEvents(db.pool, [c3]);
    await waitFor(async () => ((await metrics.sequencerFailures.get()).values[0]?.value ?? 0) >= 1, {
      timeoutMs: 20_000,
      message: 'a round failed',
    });
    expect(sequencer.leader).toBe(false);
    kafkaAdmin.current = connected;
    await waitFor(() => sequencer.leader, { timeoutMs: 20_000, message: 'the lock taken again' });
    await new Promise((r) => setTimeout(r, 2_000));
    expect(await inLog()).toEqual([c1.event_id]); // 3 still waits for 2
    const c2 = ev(2, 2);
    await stageEvents(db.pool, [c2]);
    await waitFor(async () => (await inLog()).length === 3, {
      timeoutMs: 20_000,
      message: 'the send whole in the log',
    });
    expect(await inLog()).toEqual([c1.event_id, c2.event_id, c3.event_id]);
  });
});

describe('staging upkeep', () => {
  it('staging stays the size of what is in flight: the sequencer VACUUMs it every vacuumEveryRows rows moved out', async () => {
    // the servers here run with autovacuum off (as some production ones do): without the
    // sequencer's own VACUUM every event moved out of staging would leave a dead row behind,
    // and each round's scan of staging would grow with the log (the soak's rising latency)
    const db = await createTestDatabase();
    const ns = randomNamespace();
    const admin = await connectedAdmin();
    const { metrics } = startSequencer(db.pool, ns, {
      admin: () => admin,
      vacuumEveryRows: 400,
      batchSize: 500,
      pollMs: 20,
    });
    const size = async () =>
      Number(
        (await db.pool.query<{ n: string }>("SELECT pg_relation_size('core.event_staging')::text AS n")).rows[0]?.n,
      );
    const logged = async () =>
      Number((await db.pool.query<{ n: string }>('SELECT count(*)::text AS n FROM core.event_log')).rows[0]?.n);
    const vacuums = async () =>
      (await metrics.stagingVacuums.get()).values.find((v) => v.metricName?.endsWith('_count'))?.value ?? 0;
    const sizes: number[] = [];
    // 12 waves of 400 events, each moved out before the next is staged: 4,800 events through
    for (let wave = 0; wave < 12; wave++) {
      await stageEvents(
        db.pool,
        Array.from({ length: 400 }, (_, i) => staged(ns, wave * 400 + i)),
      );
      await waitFor(async () => (await logged()) === (wave + 1) * 400, {
        timeoutMs: 20_000,
        message: `wave ${wave} in the log`,
      });
      // the VACUUM runs beside the rounds: one per 400 rows moved out, so one per wave
      await waitFor(async () => (await vacuums()) === wave + 1, {
        timeoutMs: 20_000,
        message: `VACUUM after wave ${wave}`,
      });
      sizes.push(await size());
    }
    // dead rows' space is reused: the table no longer grows with the events that went through it
    expect(sizes.at(-1)).toBeLessThanOrEqual(Math.max(...sizes.slice(0, 4)));
    expect((await db.pool.query('SELECT 1 FROM core.event_staging')).rowCount).toBe(0);
  });
});

describe('a backlog', () => {
  it('moves its head into the log while its tail is still being staged (a cut by publish time), in publish order, and the tail after it', async () => {
    // offsets committed without metadata (an older bridge, an operator's reset): the frontier is read from staging
    await expect(backlogMovedByCuts('without a frontier')).resolves.toBeUndefined();
  });

  it('a backlog’s cut takes each lagging partition’s frontier from its committed offset’s metadata (ADR 0027), not from staging', async () => {
    // the bridge commits every few chunks: partition 1 is staged to 4,000 but committed to 3,000,
    // with the publish time of record 2,999 — the cut must follow what was committed
    await expect(backlogMovedByCuts('with the frontier')).resolves.toBeUndefined();
  });
});

describe('rounds planned ahead (ADR 0029)', () => {
  it('the next round is planned while the last chunk is written: it leaves that chunk out and counts on it — a session’s counters run across rounds with no gap, every event once, in order', async () => {
    const db = await createTestDatabase();
    const ns = randomNamespace();
    const admin = await connectedAdmin();
    // one producer session, counters 1..4,000 with no settled mark (a gap would hold, not settle)
    const s = randomUUID();
    const events = Array.from({ length: 4000 }, (_, i) => staged(ns, i, { sessao: s, contador: i + 1, firme: 0 }));
    await stageEvents(db.pool, events);
    // rounds of 1,000, each one chunk (the write chunk is 5,000): every round after the first is
    // planned while the one before writes, and each write waits up to 1 s before its COMMIT, so
    // the plan is made before it ends. A gap expires at once (1 ms): a plan that did not count the
    // chunk being written would see its session's counters jump by 1,000 and say so
    const { metrics } = startSequencer(db.pool, ns, {
      admin: () => admin,
      vacuumEveryRows: 0,
      batchSize: 100,
      pollMs: 20,
      roundLimit: 1000,
      orderGapMs: 1,
      commitJitterMs: 1000,
    });
    await waitFor(async () => (await logIds(db)).length === 4000, { timeoutMs: 60_000, message: '4,000 in the log' });
    expect(await logIds(db)).toEqual(events.map((e) => e.event_id));
    const value = async (
      m: { get(): Promise<{ values: Array<{ value: number; metricName?: string }> }> },
      name?: string,
    ) =>
      (await m.get()).values
        .filter((v) => name === undefined || v.metricName === name)
        .reduce((n, v) => n + v.value, 0);
    expect(await value(metrics.orderGapExpired)).toBe(0);
    expect(await value(metrics.duplicates)).toBe(0);
    // four writes of 1,000: none read again what the write before it was writing
    expect(await value(metrics.batchSize, 'feromonios_bridge_batch_size_count')).toBe(4);
    expect(await value(metrics.batchSize, 'feromonios_bridge_batch_size_sum')).toBe(4000);
    // and no plan made ahead came out empty while events waited (its read is not used up by the
    // chunk being written): the four that wrote, and one planned beside the last write that found
    // nothing more
    expect(await value(metrics.rounds, 'feromonios_bridge_sequencer_round_seconds_count')).toBeLessThanOrEqual(5);
  });
});

/**
 * A member of consumer group `groupId` subscribed to `topic` and paused, that commits offsets as
 * the bridge does — with metadata, which kafkajs's `admin.setOffsets` cannot write. Disconnected
 * at cleanup.
 */
async function groupMember(groupId: string, topic: string): Promise<Consumer> {
  const kafka = new Kafka({ clientId: 'sequencer-test', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId });
  await consumer.connect();
  registerCleanup(() => consumer.disconnect());
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
  await consumer.run({ autoCommit: false, eachBatch: () => Promise.resolve() });
  consumer.pause([{ topic }]);
  await joined;
  return consumer;
}

/**
 * A backlog of two partitions of 6,000 events, partition 1 staged only to 4,000 at first: the
 * sequencer moves what is published before the cut, nothing past it, then the rest once partition
 * 1 is staged — in publish order throughout. `commits` says how the bridge's offsets are committed:
 * as the bridge does (each with its frontier in the metadata, and partition 1 committed below
 * what it staged) or with none (kafkajs's `setOffsets`).
 */
async function backlogMovedByCuts(commits: 'with the frontier' | 'without a frontier'): Promise<void> {
  const db = await createTestDatabase();
  const ns = randomNamespace();
  const topic = `${ns}.evento.demanda.normalizada`;
  const admin = await connectedAdmin();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 2 }] });
  const kafka = new Kafka({ clientId: 'sequencer-test', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  registerCleanup(() => producer.disconnect());
  const perPartition = 6000;
  for (const partition of [0, 1])
    await producer.send({ topic, messages: Array.from({ length: perPartition }, () => ({ partition, value: 'x' })) });
  // publish times interleave: partition 0's i-th event at base + 20i ms, partition 1's at base + 20i + 10
  // (multiples of 10 ms: the log's `timestamp` keeps hundredths of a second)
  // — except one record of partition 1, in the middle, dated an hour ahead (a producer's clock):
  // it must not move partition 1's frontier, or the cut would take events of partition 0 that
  // partition 1's unstaged tail precedes
  const base = Date.parse('2026-12-03T10:00:00.000Z');
  const datedAhead = 2000;
  const publishedAt = (partition: number, i: number) =>
    partition === 1 && i === datedAhead ? base + 3_600_000 : base + 20 * i + 10 * partition;
  const row = (partition: number, i: number) => {
    const at = new Date(publishedAt(partition, i)).toISOString();
    return { ...staged(ns, i), kafka_topic: topic, kafka_partition: partition, timestamp: at, publicado_em: at };
  };
  const committer = commits === 'with the frontier' ? await groupMember(`${ns}-bridge`, topic) : undefined;
  const stage = async (partition: number, from: number, to: number, committedTo = to) => {
    for (let i = from; i < to; i += 2000)
      await stageEvents(
        db.pool,
        Array.from({ length: Math.min(2000, to - i) }, (_, k) => row(partition, i + k)),
      );
    // the bridge commits after staging: the committed offset says "staged up to here"
    if (committer)
      await committer.commitOffsets([
        {
          topic,
          partition,
          offset: String(committedTo),
          metadata: frontierMetadata(publishedAt(partition, committedTo - 1)),
        },
      ]);
    else
      await admin.setOffsets({
        groupId: `${ns}-bridge`,
        topic,
        partitions: [{ partition, offset: String(committedTo) }],
      });
  };
  // partition 1 lags: its last 2,000 are not staged yet (and with the frontier, the last 1,000
  // staged are not committed yet either)
  const frontierAt = commits === 'with the frontier' ? 2999 : 3999;
  await stage(0, 0, perPartition);
  await stage(1, 0, 4000, frontierAt + 1);
  const skew = 1000;
  const { metrics } = startSequencer(db.pool, ns, {
    admin: () => admin,
    vacuumEveryRows: 0,
    batchSize: 100, // writes in chunks of 5,000; a cut needs at least that many events below it
    roundLimit: 50_000, // as deployed: one round takes everything below the cut
    pollMs: 50,
    orderSkewMs: skew,
    maxIdleMs: 600_000, // never given up on: only the cut can move anything before it is staged
  });
  const logged = async () =>
    (
      await db.pool.query<{ timestamp: Date; kafka_partition: number }>(
        'SELECT timestamp, kafka_partition FROM core.event_log ORDER BY sequence_number',
      )
    ).rows;
  // the cut: the publish time of partition 1's last staged (committed) record less the skew
  const cut = publishedAt(1, frontierAt) - skew;
  const expectedHead = [0, 1].reduce(
    (n, p) => n + Array.from({ length: perPartition }, (_, i) => publishedAt(p, i)).filter((t) => t < cut).length,
    0,
  );
  await waitFor(async () => (await logged()).length === expectedHead, {
    timeoutMs: 30_000,
    message: `the ${expectedHead} events published before the cut in the log while partition 1 is still being staged`,
  });
  await new Promise((r) => setTimeout(r, 1_000));
  const head = await logged();
  expect(head.length).toBe(expectedHead); // nothing at or past the cut
  expect(head.every((r) => r.timestamp.getTime() < cut)).toBe(true);
  expect((await metrics.sequencerCuts.get()).values[0]?.value).toBeGreaterThanOrEqual(1);

  await stage(1, 4000, perPartition);
  await waitFor(async () => (await logged()).length === 2 * perPartition, {
    timeoutMs: 30_000,
    message: 'the whole backlog in the log once partition 1 is staged',
  });
  const times = (await logged()).map((r) => r.timestamp.getTime());
  // publish order across both partitions, head and tail alike
  expect(times).toEqual([...times].sort((a, b) => a - b));
}
