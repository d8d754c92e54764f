import { Kafka, logLevel, type Admin, type Batch, type Consumer, type KafkaMessage, type Message } from 'kafkajs';
import type pg from 'pg';
import {
  type SchemaCatalog,
  FeromoniosError,
  isRetriable,
  type Logger,
  type SchemaRegistry,
  type TopicNames,
  type TopicSettings,
  kafkaConnection,
  type SegurancaKafka,
} from '../sdk';
import {
  EventDecoder,
  type OpcoesRedacao,
  scrubText,
  DLQ_HEADERS,
  isUuid,
  colonyCodeProblem,
  isStorableTimestamp,
  storableText,
  decodeValue,
  HEADER,
  headerString,
  ensureTopics,
  DLQ_OUTCOME_HEADER,
} from '../sdk/wire';
import {
  RetentionGapDetector,
  SessionProducer,
  backoffDelay,
  endSpan,
  garantirParticoesDoLog as garantirParticoes,
  isBrokerUnreachable,
  kafkaLogs,
  linhasSemMes,
  startBatchSpan,
} from '../sdk/service';
import { recordFailure, recordResolved, type DeadLetterRecord } from './dead-letter-writer';
import { dlqDepths, publishDlqDepths } from './dlq-depth';
import { recordRetentionGap } from './retention-gap-writer';
import { colonyGroupLags, publishGroupLags } from './group-lag';
import { stageEvents } from './event-log-writer';
import { linesOf, type HeldLine, type StagedRow } from './log-lines';
import { DecodeThread } from './decode-thread';
import { decodeRecord } from './record-decoding';
import { refusable, writeIsolatingRefused } from './refused-rows';
import { DEFAULT_MEMORY_STAGING_ROWS, MemoryStaging, type CommitPoint } from './memory-staging';
import { DEFAULT_ORDER_MAX_IDLE_MS, EVENTS_SESSION_TIMEOUT_MS, Sequencer } from './sequencer';
import { stagedFrontier } from './staging-frontier';
import type { StagedRef } from './causal-order';
import type { BridgeMetrics } from './metrics';

export interface OpcoesBridge {
  brokers: string[];
  /** TLS/SASL towards the brokers (docs/security.md); absent: plaintext. */
  seguranca?: SegurancaKafka;
  clientId: string;
  /** Consumer group shared by every instance. */
  groupId: string;
  pool: pg.Pool;
  registry: SchemaRegistry;
  catalog: SchemaCatalog;
  topics: TopicNames;
  topicSettings: TopicSettings;
  redaction: OpcoesRedacao;
  /** Most events per staging transaction (the sequencer writes the log in chunks of at least 5,000). */
  batchSize: number;
  /** Longest wait for a fetch to fill, in milliseconds. */
  flushIntervalMs: number;
  /** How often new topics are looked for, in milliseconds. */
  topicRefreshMs: number;
  maxPayloadBytes: number;
  /** Failures of one (event_id, colonia) before its DLQ row becomes `failed_permanent`. */
  dlqMaxTentativas: number;
  /** How long a DLQ record waits for its event to reach the log before it is quarantined, in milliseconds. */
  dlqEventWaitMs?: number;
  /** Fault injection only: random delay before each COMMIT, in milliseconds (0 = off). */
  commitJitterMs?: number;
  /** A partition with lag and no progress this long is reported stalled (metric, `/ready`), in milliseconds. Default 60 s. */
  stallAfterMs?: number;
  /** How often every colony group's lag and the DLQ depth are polled for the gauges, in milliseconds. Default 15 s. */
  gaugesIntervalMs?: number;
  /** Months of `core.event_log` partitions kept ahead of the current one (default 3). */
  partitionsAheadMonths?: number;
  /** How often the partitions ahead are checked, in milliseconds (default 1 h). */
  partitionsIntervalMs?: number;
  /** Longest wait before a crashed lane consumer is started again, in milliseconds (backoff from 500 ms). Default 30 s. */
  restartBackoffMaxMs?: number;
  /** Longest hold of an event whose `causation_id` names an event neither in the log nor staged, in milliseconds (its effects wait for it). Default 30 s. */
  causalHoldMs?: number;
  /**
   * A partition with unstaged records and no progress this long is not waited for by the
   * sequencer, in milliseconds. Default 60 s: longer than a crashed consumer's rejoin, which waits
   * out its old member's 30 s session (`DEFAULT_ORDER_MAX_IDLE_MS`).
   */
  orderMaxIdleMs?: number;
  /** Longest wait of a producer's event for an earlier counter of its session still in flight when it was sent (above its settled mark), in milliseconds. Default 30 s. */
  orderGapMs?: number;
  /**
   * Largest step back in record timestamps within one partition allowed for when the sequencer
   * moves a backlog's head while its tail is still being staged, in milliseconds. Default 2 s.
   */
  orderSkewMs?: number;
  /**
   * Rows moved out of `core.event_staging` after which the sequencer VACUUMs it (0: never, left
   * to autovacuum). Default 20,000.
   */
  stagingVacuumRows?: number;
  /**
   * Most events the sequencer's leader holds in memory instead of `core.event_staging` (ADR
   * 0029). Default 250,000; 0: every event is staged in the table. A chunk that does not fit
   * (this or `memoryStagingBytes`) is staged in the table (BENCHMARKS.md measures the three).
   */
  memoryStagingRows?: number;
  /** Most bytes of records held in memory by the leader. Default 256 MiB. */
  memoryStagingBytes?: number;
  /**
   * Decode, check and redact records on a worker thread of their own (bridge/decode-thread.ts),
   * not the thread that fetches, stages and orders. Default true; false decodes inline.
   */
  decodeThread?: boolean;
  logger: Logger;
  metrics: BridgeMetrics;
}

/** Headers added to a quarantined record (the original key, value and headers are kept). */
export const QUARANTINE_HEADERS = {
  reason: 'feromonios_quarentena_motivo',
  detail: 'feromonios_quarentena_detalhe',
  topic: 'feromonios_origem_topico',
  partition: 'feromonios_origem_particao',
  offset: 'feromonios_origem_offset',
  /** `true` on a record quarantined by reference: the copy did not fit, so no key, value or original headers. */
  reference: 'feromonios_quarentena_referencia',
  /** Size of the original value, in bytes (on references). */
  size: 'feromonios_origem_tamanho',
} as const;

type BatchControl = {
  heartbeat(): Promise<void>;
  isRunning(): boolean;
  isStale(): boolean;
  resolveOffset(offset: string): void;
};

/** What a record held in memory costs beyond its value's bytes (its ref, its log line's other columns), for the memory bound. */
const HELD_ROW_OVERHEAD = 512;

/**
 * What a lane's fetch asks per partition, and in all. The share is a tenth of the whole, so a
 * backlog's busy partitions (up to ten) each get a full share in every fetch and are staged side
 * by side, their publish times within one share (~1,300 events of the sink bench) of each other.
 * The sequencer's cuts follow the furthest-behind partition (ADR 0021): at 4 MB a partition
 * against kafkajs's 10 MB whole, one partition of three got half a share in each fetch, fell
 * ~1 s of publish time behind the others, and held ~30,000 staged events out of every cut
 * (ADR 0029, "Balanced fetches").
 */
const FETCH_PARTITION_BYTES = 1024 * 1024;
const FETCH_RESPONSE_BYTES = 10 * FETCH_PARTITION_BYTES;

/** Records decoded between turns of the event loop (`decodeChunk`): ~5 ms of CPU. */
const DECODE_TURN_RECORDS = 100;

/**
 * Deaths of the decode thread in a row (no chunk decoded there between them) after which the
 * bridge decodes on its own thread for `DECODE_INLINE_FOR_MS`, then tries a thread again: a
 * thread that cannot live (it cannot load its modules, a limit it hits every time) would
 * otherwise stop every partition, retried with backoff, for as long as it lasts.
 */
const DECODE_THREAD_DEATHS_BEFORE_INLINE = 3;
const DECODE_INLINE_FOR_MS = 5 * 60_000;

/** What the sequencer orders a held event by (bridge/causal-order.ts); staged now, by this process's clock. */
function heldRef(row: StagedRow, publishedMs: number): StagedRef {
  return {
    event_id: row.event_id,
    causation_id: row.causation_id,
    publicado_em: publishedMs,
    ordem_sessao: row.ordem_sessao,
    ordem_contador: row.ordem_contador,
    ordem_firme: row.ordem_firme,
    kafka_topic: row.kafka_topic,
    kafka_partition: row.kafka_partition,
    kafka_offset: row.kafka_offset,
    recebido_em: Date.now(),
  };
}

/** A group of topics consumed by one consumer of its own. */
interface Lane {
  name: 'eventos' | 'dlq';
  pattern: RegExp;
  groupId: string;
  consumer?: Consumer;
  subscribed: Set<string>;
  /** Joined its group and consuming (false from a crash, or a (re)subscription, until it joins). */
  running: boolean;
  /** When a planned (re)subscription started: the lane counts as ready for JOIN_GRACE_MS meanwhile. */
  joiningSince?: number;
  /** Crashes since the last batch that went through (drives the restart backoff). */
  crashes: number;
  restartTimer?: NodeJS.Timeout;
  /** A restart the timer began: `stop()` waits for it, or its consumer would outlive the bridge. */
  restarting?: Promise<void>;
  /** The last start of this lane: starts run one after the other, never side by side. */
  starting?: Promise<void>;
  handle(consumer: Consumer, batch: Batch, ctl: BatchControl): Promise<void>;
}

/** What `/ready` says (bridge/ops-server.ts), with the reason when not ready. */
export interface BridgeHealth {
  ready: boolean;
  database: boolean;
  lanes: Array<{ lane: string; topics: number; running: boolean; joining: boolean }>;
  /** Partitions with lag and no progress for `stallAfterMs`. */
  stalled: Array<{ lane: string; topic: string; partition: number; lag: number; since_ms: number }>;
  /** Whether this instance is the active sequencer (one per namespace; the others stand by). */
  sequencer_leader: boolean;
  /** Whether this instance's sequencer failed its last rounds (3 in a row): not ready meanwhile. */
  sequencer_failing: boolean;
}

/** How long a lane re-subscribing to pick up a new topic still counts as ready, in milliseconds. */
const JOIN_GRACE_MS = 30_000;

/** What `retrying` returns when it gave up because the bridge stops or lost the partition. */
const ABORTED = Symbol('aborted');

type Poison = { kind: 'poison'; reason: string; detail: string; message: KafkaMessage };
/**
 * A record decoded: its row, its publish time in milliseconds (the row's `publicado_em`,
 * unparsed), and its log line when the decode thread formatted it.
 */
type Decoded = { kind: 'ok'; row: StagedRow; message: KafkaMessage; publishedMs: number; held?: HeldLine } | Poison;

/**
 * The sink connector: mirrors every event topic into `core.event_log`, redacted, with the
 * global sequence. Offsets are committed only after the database commit (at-least-once;
 * duplicates are dropped by event_id). Records it cannot accept go to the quarantine topic
 * with their reason and never stop it. A failing database or registry pauses consumption
 * (retry with backoff, heartbeats kept) instead of losing anything.
 */
export class Bridge {
  private readonly kafka: Kafka;
  private readonly decoder: EventDecoder;
  /** Where records are decoded, unless `decodeThread: false` (then on this thread). */
  private readonly decodeThread: DecodeThread | undefined;
  /** Deaths of the decode thread since it last decoded a chunk. */
  private threadDeathsInARow = 0;
  /** Until when records are decoded on this thread, the decode thread having died too often (ms since the epoch). */
  private inlineUntil = 0;
  private readonly lanes: Lane[];
  private producer: SessionProducer | undefined;
  private admin: Admin | undefined;
  private watcher: NodeJS.Timeout | undefined;
  private gaugesTimer: NodeJS.Timeout | undefined;
  private partitionsTimer: NodeJS.Timeout | undefined;
  private gaugesRunning: Promise<void> | undefined;
  private readonly dlqColonies = new Set<string>();
  private refreshing: Promise<void> | undefined;
  private stopping = false;
  private lastDbOk = false;
  private readonly sequencer: Sequencer;
  /** The leader's staging in memory (ADR 0029): open while this instance's sequencer leads. */
  private readonly memory: MemoryStaging;
  /**
   * The events lane's consumer whose position passed events dropped from memory (leadership
   * lost): it stages and commits nothing more, and is replaced by one that starts from the
   * committed offsets.
   */
  private memoryDroppedFor: Consumer | undefined;
  /** Every consumer created and not yet disconnected (stop() disconnects them all). */
  private readonly consumers = new Set<Consumer>();
  /**
   * Per event partition, the staged frontier of the last chunk this instance staged (ADR 0027),
   * what a batch that stages nothing commits. Kept across batches and reassignments: it only ever
   * names a record this instance staged, after every record below it, so whatever offset it is
   * committed with it is the truth or earlier (a value from before a reassignment) — a cut below
   * an earlier one holds more, never moves an event another partition may still precede.
   */
  private readonly frontiers = new Map<string, number>();
  /** Per lane/topic/partition: the lag after the last committed chunk, and when. */
  private readonly progress = new Map<
    string,
    { lane: string; topic: string; partition: number; lag: number; at: number }
  >();

  constructor(private readonly o: OpcoesBridge) {
    this.kafka = new Kafka({
      clientId: o.clientId,
      brokers: o.brokers,
      ...kafkaConnection(o.seguranca),
      logLevel: logLevel.WARN,
      logCreator: kafkaLogs(o.logger),
      retry: { retries: 10, initialRetryTime: 300, maxRetryTime: 5000 },
    });
    this.decoder = new EventDecoder(o.registry, o.catalog, o.maxPayloadBytes);
    this.decodeThread =
      o.decodeThread === false
        ? undefined
        : new DecodeThread({
            catalogDir: o.catalog.dir,
            redaction: o.redaction,
            maxPayloadBytes: o.maxPayloadBytes,
            onDeath: (err) => {
              o.metrics.decodeThreadRestarts.inc();
              o.logger.error('the decode thread died: its chunks in flight are decoded again on a new one', {
                error: scrubText(err.message, undefined, 300),
              });
              if (++this.threadDeathsInARow < DECODE_THREAD_DEATHS_BEFORE_INLINE || this.stopping) return;
              this.threadDeathsInARow = 0;
              this.inlineUntil = Date.now() + DECODE_INLINE_FOR_MS;
              o.metrics.decodeThreadFallbacks.inc();
              o.logger.error("the decode thread keeps dying: records are decoded on the bridge's thread for a while", {
                deaths_in_a_row: DECODE_THREAD_DEATHS_BEFORE_INLINE,
                inline_ms: DECODE_INLINE_FOR_MS,
              });
            },
          });
    this.memory = new MemoryStaging({
      maxRows: o.memoryStagingRows ?? DEFAULT_MEMORY_STAGING_ROWS,
      maxBytes: o.memoryStagingBytes ?? 256 * 1024 * 1024,
    });
    this.sequencer = new Sequencer({
      pool: o.pool,
      admin: () => this.admin,
      groupId: o.groupId,
      pattern: o.topics.eventos,
      topicPrefix: o.topics.prefixoEventos,
      causalHoldMs: o.causalHoldMs ?? 30_000,
      maxIdleMs: o.orderMaxIdleMs ?? DEFAULT_ORDER_MAX_IDLE_MS,
      orderGapMs: o.orderGapMs ?? 30_000,
      orderSkewMs: o.orderSkewMs ?? 2_000,
      vacuumEveryRows: o.stagingVacuumRows ?? 20_000,
      roundLimit: 50_000,
      batchSize: o.batchSize,
      pollMs: 200,
      ...(o.commitJitterMs === undefined ? {} : { commitJitterMs: o.commitJitterMs }),
      onRefused: (row, sqlstate) => this.quarantineStaged(row, sqlstate),
      memory: this.memory,
      commitStaged: (points) => this.commitStaged(points),
      onMemoryDropped: () => this.restartAfterMemoryDropped(),
      logger: o.logger,
      metrics: o.metrics,
    });
    this.lanes = [
      {
        name: 'eventos',
        pattern: o.topics.eventos,
        groupId: o.groupId,
        subscribed: new Set(),
        running: false,
        crashes: 0,
        handle: (c, b, ctl) => this.handleBatch(c, b, ctl),
      },
      {
        name: 'dlq',
        pattern: o.topics.dlqs,
        groupId: `${o.groupId}.dlq`,
        subscribed: new Set(),
        running: false,
        crashes: 0,
        handle: (c, b, ctl) => this.handleDlqBatch(c, b, ctl),
      },
    ];
  }

  async start(): Promise<void> {
    // the decode thread starts (its modules and catalog: ~0.2 s, bridge/log-lines.ts says why so little)
    // while the clients connect, the topics and partitions are checked and the consumers join; a
    // batch fetched before it is ready waits for it, once. start() resolves once it is ready and
    // rejects if it cannot start, stopping whatever it started
    const thread = this.decodeThread?.start();
    thread?.catch(() => undefined); // awaited below, after the rest
    try {
      this.admin = this.kafka.admin();
      await this.admin.connect();
      this.producer = new SessionProducer(this.kafka, this.o.logger);
      await this.producer.connect();
      await ensureTopics(this.admin, [this.o.topics.quarentena()], this.o.topicSettings);
      await this.ensurePartitions();
      await this.refreshSubscription();
      await thread;
    } catch (err) {
      await this.stop().catch(() => undefined);
      throw err;
    }
    this.sequencer.start();
    this.watcher = setInterval(() => {
      this.refreshing ??= this.refreshSubscription()
        .catch((err: unknown) => this.o.logger.warn('topic refresh failed', { error: (err as Error).message }))
        .finally(() => (this.refreshing = undefined));
    }, this.o.topicRefreshMs);
    const gauges = () => (this.gaugesRunning ??= this.refreshGauges().finally(() => (this.gaugesRunning = undefined)));
    void gauges();
    this.gaugesTimer = setInterval(() => void gauges(), this.o.gaugesIntervalMs ?? 15_000);
    this.partitionsTimer = setInterval(
      () =>
        void this.ensurePartitions().catch((err: unknown) => {
          if (!this.stopping)
            this.o.logger.warn('event_log partitions check failed', { error: (err as Error).message });
        }),
      this.o.partitionsIntervalMs ?? 3_600_000,
    );
    this.o.logger.info('bridge started', { group: this.o.groupId, topics: this.topics });
  }

  /** Graceful stop: no new fetches, the batch in hand finishes and commits, then disconnect. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.watcher);
    clearInterval(this.gaugesTimer);
    clearInterval(this.partitionsTimer);
    await this.gaugesRunning;
    for (const l of this.lanes) clearTimeout(l.restartTimer);
    await this.refreshing;
    await Promise.all(this.lanes.map((l) => l.restarting ?? Promise.resolve()));
    await Promise.all(this.lanes.map((l) => (l.consumer ? l.consumer.disconnect() : Promise.resolve())));
    // any consumer a lane lost track of (none should be): disconnected, and said so
    const strays = [...this.consumers];
    if (strays.length > 0) this.o.logger.warn('consumers left behind, disconnected at stop', { count: strays.length });
    await Promise.all(strays.map((c) => c.disconnect().catch(() => undefined)));
    await this.sequencer.stop();
    await this.decodeThread?.close();
    await this.producer?.close();
    await this.admin?.disconnect();
    this.o.logger.info('bridge stopped');
  }

  /**
   * The platform gauges (docs/operations.md): every colony group's lag by committed offsets
   * (bridge/group-lag.ts) and the open DLQ entries per colony and state (bridge/dlq-depth.ts).
   * A failed poll keeps the last values, is counted and logged, and the next interval retries.
   */
  private async refreshGauges(): Promise<void> {
    const m = this.o.metrics;
    const admin = this.admin;
    await Promise.all([
      admin
        ? colonyGroupLags(admin, this.o.topics).then(
            (lags) => publishGroupLags(m.consumerGroupLag, lags),
            (err: unknown) => this.gaugeFailed('kafka', err),
          )
        : undefined,
      dlqDepths(this.o.pool).then(
        (d) => publishDlqDepths(m.dlqDepth, this.dlqColonies, d),
        (err: unknown) => this.gaugeFailed('database', err),
      ),
      linhasSemMes(this.o.pool).then(
        (n) => m.eventLogDefaultRows.set(n),
        (err: unknown) => this.gaugeFailed('database', err),
      ),
    ]);
  }

  /** Keeps the months ahead of `core.event_log` (bridge/partitions.ts); logs what it created. */
  private async ensurePartitions(): Promise<void> {
    const criadas = await garantirParticoes(this.o.pool, this.o.partitionsAheadMonths ?? 3);
    this.o.metrics.eventLogPartitionsCreated.inc(criadas.length);
    if (criadas.length > 0) this.o.logger.info('event_log partitions created', { particoes: criadas });
  }

  private gaugeFailed(source: 'kafka' | 'database', err: unknown): void {
    if (this.stopping) return;
    this.o.metrics.gaugeRefreshFailures.inc({ source });
    this.o.logger.warn('gauge refresh failed', { source, error: (err as Error).message });
  }

  /**
   * Ready when every lane that has topics is consuming (the events lane must have some), the
   * last database contact succeeded, no partition is stalled (lag without progress for
   * `stallAfterMs`), and the sequencer is not failing round after round. Also updates
   * `feromonios_bridge_stalled_partitions`.
   */
  health(): BridgeHealth {
    const now = Date.now();
    const stallMs = this.o.stallAfterMs ?? 60_000;
    const stalled = [...this.progress.values()]
      .filter((p) => p.lag > 0 && now - p.at > stallMs)
      .map((p) => ({ lane: p.lane, topic: p.topic, partition: p.partition, lag: p.lag, since_ms: now - p.at }));
    for (const l of this.lanes)
      this.o.metrics.stalledPartitions.set({ lane: l.name }, stalled.filter((p) => p.lane === l.name).length);
    const joining = (l: Lane): boolean => l.joiningSince !== undefined && now - l.joiningSince < JOIN_GRACE_MS;
    const lanes = this.lanes.map((l) => ({
      lane: l.name,
      topics: l.subscribed.size,
      running: l.running,
      joining: !l.running && joining(l),
    }));
    // a lane re-subscribing to pick up a new topic is not down: it has JOIN_GRACE_MS to join
    const lanesOk = this.lanes.every((l) =>
      l.name === 'eventos' || l.subscribed.size > 0 ? l.running || joining(l) : true,
    );
    return {
      ready: !this.stopping && lanesOk && this.lastDbOk && stalled.length === 0 && !this.sequencer.failing,
      database: this.lastDbOk,
      lanes,
      stalled,
      sequencer_leader: this.sequencer.leader,
      sequencer_failing: this.sequencer.failing,
    };
  }

  /** `health().ready`. */
  ready(): boolean {
    return this.health().ready;
  }

  /** Topics currently mirrored (events and DLQs). */
  get topics(): string[] {
    return this.lanes.flatMap((l) => [...l.subscribed]);
  }

  /**
   * kafkajs resolves a subscription once (#1086): new topics are found by listing topics, and
   * a lane's consumer is recreated with the full list when one appears. Two lanes, each its own
   * group, so a DLQ record waiting for its event never holds the events back.
   */
  private async refreshSubscription(): Promise<void> {
    if (this.stopping || !this.admin) return;
    const all = await this.admin.listTopics();
    for (const lane of this.lanes) {
      const topics = all.filter((t) => lane.pattern.test(t));
      if (topics.length === 0 || (lane.consumer && topics.every((t) => lane.subscribed.has(t)))) continue;
      // a lane being restarted has no consumer for a moment: the restart brings it back, and a
      // second start beside it would leave one of the two consumers running unowned
      if (lane.restartTimer || lane.restarting) continue;
      await this.startLane(lane, topics);
    }
    await this.checkDatabase(); // readiness follows the database, not the consumer's existence
    this.health(); // keeps the stalled-partitions gauge current between probes
  }

  /** (Re)creates a lane's consumer on `topics`, one start at a time per lane; a crash schedules a restart. */
  private startLane(lane: Lane, topics: string[], planned = true): Promise<void> {
    const run = (lane.starting ?? Promise.resolve()).then(() => this.startLaneNow(lane, topics, planned));
    lane.starting = run.catch(() => undefined);
    return run;
  }

  private async startLaneNow(lane: Lane, topics: string[], planned: boolean): Promise<void> {
    clearTimeout(lane.restartTimer);
    lane.restartTimer = undefined;
    const previous = lane.consumer;
    lane.consumer = undefined;
    lane.running = false;
    lane.joiningSince = planned && previous ? Date.now() : undefined; // the first join has no grace
    await previous?.disconnect().catch(() => undefined);
    if (this.stopping) return;
    const consumer: Consumer = this.kafka.consumer({
      groupId: lane.groupId,
      allowAutoTopicCreation: false,
      // every restart is the bridge's (scheduleRestart): kafkajs's own restarts a crashed consumer
      // on a timer nobody awaits, and a disconnect while that restart is joining does not stop the
      // join — the consumer would come back unowned after stop() (or a replacement) and fetch for ever
      retry: { restartOnFailure: () => Promise.resolve(false) },
      sessionTimeout: EVENTS_SESSION_TIMEOUT_MS,
      heartbeatInterval: 3_000,
      maxWaitTimeInMs: this.o.flushIntervalMs,
      maxBytesPerPartition: FETCH_PARTITION_BYTES,
      maxBytes: FETCH_RESPONSE_BYTES,
    });
    // records retention deleted before the bridge read them: a row of core.lacunas_retencao, a
    // metric and a log line; the lane moves on (kafkajs resumes at the log start)
    const gaps = new RetentionGapDetector({
      groupId: lane.groupId,
      // read before the consumer starts: kafkajs may reset and commit an out-of-range position
      // before an answer read at the join would come back
      committedAtStart: await this.admin?.fetchOffsets({ groupId: lane.groupId }).catch(() => undefined),
      admin: (fn) => {
        const admin = this.admin;
        if (!admin) return Promise.reject(new FeromoniosError('BUS_CLOSED', 'the bridge is not started'));
        return fn(admin);
      },
      semCommit: 'inicio', // every record must reach the log: a partition never committed expects offset 0
      onGap: async (g) => {
        this.o.metrics.retentionGap.inc({ lane: lane.name, topic: g.topico }, g.registros);
        const untilStopped = {
          heartbeat: () => Promise.resolve(),
          isRunning: () => !this.stopping,
          isStale: () => false,
        };
        await this.retrying('database', untilStopped, () => recordRetentionGap(this.o.pool, g));
      },
      logger: this.o.logger,
    });
    consumer.on(consumer.events.START_BATCH_PROCESS, ({ payload: b }) => {
      if (lane.consumer === consumer && b.batchSize > 0) gaps.batchStarted(b.topic, b.partition, b.firstOffset);
    });
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload: b }) => {
      if (lane.consumer === consumer && b.batchSize > 0) gaps.batchEnded(b.topic, b.partition, b.lastOffset);
    });
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      if (lane.consumer !== consumer) return;
      gaps.joined(payload.memberAssignment);
      // kafkajs resumes every partition at its committed offset: what memory held comes again
      if (lane.name === 'eventos') {
        this.memory.reset();
        this.o.metrics.heldInMemory.set(0);
      }
      lane.running = true;
      lane.joiningSince = undefined;
      // partitions may have moved to another instance: progress is measured anew from here
      for (const [k, p] of this.progress) if (p.lane === lane.name) this.progress.delete(k);
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (lane.consumer !== consumer) return;
      lane.running = false;
      lane.joiningSince = undefined; // a crash is not a planned rejoin: not ready until it runs again
      lane.crashes++;
      this.o.metrics.consumerRestarts.inc({ lane: lane.name });
      this.o.logger.error('consumer crashed', {
        lane: lane.name,
        error: scrubText(payload.error.message, undefined, 500),
      });
      this.scheduleRestart(lane);
    });
    if (lane.name === 'eventos')
      consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
        // a batch of only transaction markers or aborted records (transactional producers, e.g. the
        // Java client) never reaches eachBatch: nothing to stage, but the sequencer waits for the
        // committed offset to reach the high watermark, so commit past it (docs/ordering.md)
        if (lane.consumer !== consumer || payload.batchSize > 0 || !/^\d+$/.test(payload.lastOffset)) return;
        if (this.memoryDroppedFor === consumer) return;
        // never past events the leader still holds in memory (ADR 0029)
        const at = this.memory.passed(
          this.memory.epoch,
          payload.topic,
          payload.partition,
          BigInt(payload.lastOffset) + 1n,
          undefined,
        );
        consumer.commitOffsets([at]).catch((err: unknown) =>
          this.o.logger.warn('commit past transaction markers failed, retried with the next batch', {
            topic: payload.topic,
            partition: payload.partition,
            error: scrubText((err as Error).message, undefined, 300),
          }),
        );
      });
    this.consumers.add(consumer);
    consumer.on(consumer.events.DISCONNECT, () => this.consumers.delete(consumer));
    lane.consumer = consumer; // before connecting: the events above belong to this consumer
    lane.subscribed = new Set(topics);
    try {
      await consumer.connect();
      await consumer.subscribe({ topics, fromBeginning: true });
    } catch (err) {
      lane.consumer = undefined; // the next refresh (or restart) tries again
      await consumer.disconnect().catch(() => undefined);
      throw err;
    }
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      // partitions are staged independently (no lock until the sequencer writes the log): in parallel
      partitionsConsumedConcurrently: lane.name === 'eventos' ? 3 : 1,
      eachBatch: async (payload) => {
        try {
          await lane.handle(consumer, payload.batch, payload);
          lane.crashes = 0;
        } catch (err) {
          // kafkajs retries the batch from the last committed offset: nothing is lost. A broker
          // gone (the group coordinator died with it, say) is not retried in place: kafkajs keeps
          // the coordinator it joined with and would retry it for its whole budget (~30 s, fault
          // scenario 7: a partition unstaged that long after the quorum came back) — the consumer
          // crashes now instead, and the lane starts anew (scheduleRestart) and finds the new one.
          const gone = !this.stopping && isBrokerUnreachable(err);
          this.o.logger.error(
            gone
              ? 'batch failed: a broker is unreachable, the consumer starts anew'
              : 'batch failed, it will be retried',
            {
              lane: lane.name,
              topic: payload.batch.topic,
              partition: payload.batch.partition,
              error: scrubText((err as Error).message, undefined, 500),
            },
          );
          if (gone) throw Object.assign(new Error((err as Error).message, { cause: err }), { retriable: false });
          throw err;
        }
      },
    });
    // run() resolves after the first join (or its crash): a stop() that came meanwhile waited for
    // this start (refreshing / restarting), so the consumer it produced is stopped here
    if (this.stopping || lane.consumer !== consumer) {
      await consumer.disconnect().catch(() => undefined);
      return;
    }
    this.o.logger.info('subscribed', { lane: lane.name, topics });
  }

  /** Starts a crashed lane again after a backoff (500 ms doubling, at most `restartBackoffMaxMs`, jittered). */
  private scheduleRestart(lane: Lane): void {
    if (this.stopping || lane.restartTimer) return;
    const delay = backoffDelay(lane.crashes, { initialMs: 500, maxMs: this.o.restartBackoffMaxMs ?? 30_000 });
    this.o.logger.warn('restarting consumer', { lane: lane.name, delay_ms: delay });
    lane.restartTimer = setTimeout(() => {
      this.restartNow(lane);
    }, delay);
  }

  /** Starts a lane anew now, with its topics; a failure is counted and retried after a backoff. */
  private restartNow(lane: Lane): void {
    clearTimeout(lane.restartTimer);
    lane.restartTimer = undefined;
    lane.restarting = this.startLane(lane, [...lane.subscribed], false)
      .catch((err: unknown) => {
        this.o.logger.error('consumer restart failed', { lane: lane.name, error: (err as Error).message });
        lane.crashes++;
        this.scheduleRestart(lane);
      })
      .finally(() => (lane.restarting = undefined));
  }

  /**
   * One span per chunk staged, linked to each record's trace (OpenTelemetry, when registered).
   * `table` is where its rows go: `core.event_staging`, or `core.event_log` for a chunk the
   * leader holds in memory until the sequencer writes it there (ADR 0029).
   */
  private chunkSpan(
    topic: string,
    partition: number,
    good: Array<Extract<Decoded, { kind: 'ok' }>>,
    table: 'core.event_staging' | 'core.event_log',
  ) {
    return startBatchSpan(
      topic,
      {
        'messaging.consumer.group.name': this.o.groupId,
        'messaging.destination.partition.id': String(partition),
        'db.system.name': 'postgresql',
        'db.collection.name': table,
        'feromonios.componente': 'bridge',
      },
      good.length,
      () => good.map((g) => headerString(g.message.headers, HEADER.traceparent)),
    );
  }

  /**
   * Commits the events lane's offsets the sequencer's writes released (ADR 0029, rule 1). A
   * failure (a rebalance under way, a broker gone) is logged: those events were written, and
   * Kafka redelivers them to whoever stages next, where `core.event_ids` drops them.
   */
  private async commitStaged(points: CommitPoint[]): Promise<void> {
    this.o.metrics.heldInMemory.set(this.memory.size);
    const consumer = this.lanes[0]?.consumer;
    if (!consumer || consumer === this.memoryDroppedFor) return;
    try {
      await consumer.commitOffsets(points);
    } catch (err) {
      if (this.stopping) return;
      this.o.logger.warn('commit after the log write failed: its events are redelivered and dropped as duplicates', {
        partitions: points.length,
        error: scrubText((err as Error).message, undefined, 300),
      });
    }
  }

  /**
   * The sequencer lost its lock while it held events in memory that were never committed: the
   * events lane's consumer is past them, so it stages and commits nothing more and is replaced
   * now by one that starts from the committed offsets (ADR 0029, rule 3) — they then reach the
   * table, or this instance's memory again if it leads again.
   */
  private restartAfterMemoryDropped(): void {
    this.o.metrics.heldInMemory.set(0);
    const lane = this.lanes[0] as Lane;
    const consumer = lane.consumer;
    if (this.stopping || !consumer) return;
    this.memoryDroppedFor = consumer;
    this.o.metrics.memoryDrops.inc();
    this.o.logger.warn(
      'sequencer lost its lock with events held in memory: the events lane starts again from its committed offsets',
    );
    this.restartNow(lane);
  }

  /** Records a partition's lag after a committed chunk (stall detection, the lag gauge). */
  private recordProgress(lane: Lane, topic: string, partition: number, lag: number): void {
    this.progress.set(`${lane.name}|${topic}|${partition}`, { lane: lane.name, topic, partition, lag, at: Date.now() });
    this.o.metrics.lag.set({ topic, partition: String(partition) }, lag);
  }

  private async checkDatabase(): Promise<void> {
    try {
      await this.o.pool.query('SELECT 1');
      this.lastDbOk = true;
    } catch {
      this.lastDbOk = false;
    }
  }

  private async handleBatch(
    consumer: Consumer,
    batch: Batch,
    ctl: { heartbeat(): Promise<void>; isRunning(): boolean; isStale(): boolean; resolveOffset(offset: string): void },
  ): Promise<void> {
    const { topic, partition } = batch;
    // a consumer whose position passed events dropped from memory is being replaced (ADR 0029)
    if (this.memoryDroppedFor === consumer) return;
    // the memory's epoch this batch stages in: if it ends meanwhile, the batch gives up (redelivered)
    const epoch = this.memory.epoch;
    const chunks: KafkaMessage[][] = [];
    for (let i = 0; i < batch.messages.length; i += this.o.batchSize)
      chunks.push(batch.messages.slice(i, i + this.o.batchSize));
    const decode = (chunk: KafkaMessage[]) => {
      const p = this.retrying('registry', ctl, () => this.decodeChunk(topic, partition, chunk));
      p.catch(() => undefined); // awaited below; a chunk never awaited (rebalanced) must not be an unhandled rejection
      return p;
    };
    // the next chunk is decoded (CPU) while this one is staged (PostgreSQL): a two-stage pipeline
    let decoding = chunks[0] ? decode(chunks[0]) : undefined;
    let committed: string | undefined;
    // the publish time of the last record staged so far, sent with the committed offset (ADR 0027);
    // a batch that stages nothing (all poison) commits the one before it, not none
    const partitionKey = `${topic}\u0000${partition}`;
    // staged up to `offset`: stall detection and the lag gauge
    const progressed = (offset: string) =>
      this.recordProgress(
        this.lanes[0] as Lane,
        topic,
        partition,
        Math.max(0, Number(batch.highWatermark) - Number(offset) - 1),
      );
    let frontier = this.frontiers.get(partitionKey);
    for (const [k, chunk] of chunks.entries()) {
      if (!ctl.isRunning() || ctl.isStale()) return; // rebalanced or stopping: the rest is redelivered
      this.o.metrics.consumed.inc({ topic }, chunk.length);
      const decoded = await (decoding as ReturnType<typeof decode>);
      if (decoded === ABORTED) return;
      const after = chunks[k + 1];
      decoding = after ? decode(after) : undefined;
      const poison = decoded.filter((d): d is Poison => d.kind === 'poison');
      const good = decoded.filter((d): d is Extract<Decoded, { kind: 'ok' }> => d.kind === 'ok');
      if (poison.length > 0) {
        const sent = await this.retrying('kafka', ctl, () => this.quarantine(topic, partition, poison));
        if (sent === ABORTED) return;
      }
      const lastOffset = (chunk.at(-1) as KafkaMessage).offset;
      const upTo = BigInt(lastOffset) + 1n;
      // the sequencer's leader holds the chunk in memory when it fits (ADR 0029): its offsets are
      // committed after the sequencer writes it to the log
      const sizes = good.map((g) => (g.message.value?.length ?? 0) + HELD_ROW_OVERHEAD);
      const bytes = sizes.reduce((n, b) => n + b, 0);
      // (a chunk with nothing to stage takes the table's path: it commits at once, nothing held back;
      // so does one with a value the log's binary COPY cannot carry: the table takes it as text)
      const lines =
        good.length > 0 && this.memory.accepting(epoch) && this.memory.hasRoom(good.length, bytes)
          ? linesOf(good)
          : undefined;
      if (lines) {
        const chunkFrontier = stagedFrontier(good, []);
        const held = this.memory.add(
          epoch,
          topic,
          partition,
          good.map((g, i) => ({
            ref: heldRef(g.row, g.publishedMs),
            held: lines[i] as HeldLine,
            bytes: sizes[i] as number,
          })),
          upTo,
          chunkFrontier,
          frontier,
        );
        const span = this.chunkSpan(topic, partition, good, 'core.event_log');
        if (!held) {
          endSpan(span, new Error('batch abandoned: the memory was dropped (redelivered)'));
          return; // the memory's epoch ended: the batch is redelivered from the committed offset
        }
        span.setAttributes({ 'feromonios.staged': held.held.length, 'feromonios.duplicates': held.duplicates.length });
        endSpan(span);
        frontier = chunkFrontier ?? frontier;
        if (frontier !== undefined) this.frontiers.set(partitionKey, frontier);
        this.o.metrics.staged.inc(held.held.length);
        this.o.metrics.duplicates.inc(held.duplicates.length);
        this.o.metrics.heldInMemory.set(this.memory.size);
        ctl.resolveOffset(lastOffset);
        if (held.held.length > 0) this.sequencer.wake();
        progressed(lastOffset);
        this.o.logger.debug('chunk held in memory', {
          topic,
          partition,
          held: held.held.length,
          duplicates: held.duplicates.length,
          quarantined: poison.length,
        });
        await ctl.heartbeat();
        continue;
      }
      const span = this.chunkSpan(topic, partition, good, 'core.event_staging');
      let written: Awaited<ReturnType<typeof this.stageIsolatingRefused>> | typeof ABORTED;
      try {
        written = await this.retrying('database', ctl, () => this.stageIsolatingRefused(good));
      } catch (err) {
        endSpan(span, err);
        throw err;
      }
      if (written === ABORTED) {
        endSpan(span, new Error('batch abandoned: rebalanced or stopping (redelivered)'));
        return;
      }
      const { result, refused } = written;
      span.setAttributes({
        'feromonios.staged': result.staged.length,
        'feromonios.duplicates': result.duplicates.length,
      });
      endSpan(span);
      if (refused.length > 0) {
        const sent = await this.retrying('kafka', ctl, () => this.quarantine(topic, partition, refused));
        if (sent === ABORTED) return;
      }
      this.lastDbOk = true;
      frontier = stagedFrontier(good, refused) ?? frontier;
      if (frontier !== undefined) this.frontiers.set(partitionKey, frontier);
      this.o.metrics.staged.inc(result.staged.length);
      this.o.metrics.duplicates.inc(result.duplicates.length);
      // events dropped from memory meanwhile (leadership lost) lie below this chunk: no commit
      if (this.memoryDroppedFor === consumer || this.memory.epoch !== epoch) return;
      // the commit never passes events the leader still holds in memory (ADR 0029)
      const at = this.memory.passed(epoch, topic, partition, upTo, frontier);
      ctl.resolveOffset(lastOffset);
      if (result.staged.length > 0) this.sequencer.wake();
      // the committed offset is what the sequencer waits for: "staged up to here". Committed
      // after the batch's last chunk, or every 5 chunks of a large one: fewer broker round trips
      if (k === chunks.length - 1 || k % 5 === 4) {
        await consumer.commitOffsets([at]);
        committed = lastOffset;
        progressed(lastOffset);
      }
      this.o.logger.debug('chunk staged', {
        topic,
        partition,
        staged: result.staged.length,
        duplicates: result.duplicates.length,
        quarantined: poison.length,
        committed,
      });
      await ctl.heartbeat();
    }
  }

  /**
   * A colony's DLQ topic → `core.dead_letter_queue`, record by record, in order. Error texts are
   * scrubbed (sdk/wire/error-text.ts). A record whose event is not in the log yet waits for it only
   * while it can still arrive — the events lane has not passed the original's offset, which
   * exists — and at most `dlqEventWaitMs`; a record whose event cannot arrive (never produced,
   * quarantined, or a forged position) goes to quarantine at once, so a bad DLQ record never
   * delays the ones behind it.
   */
  private async handleDlqBatch(
    consumer: Consumer,
    batch: Batch,
    ctl: { heartbeat(): Promise<void>; isRunning(): boolean; isStale(): boolean; resolveOffset(offset: string): void },
  ): Promise<void> {
    const { topic, partition } = batch;
    const colonia = this.o.topics.coloniaDaDlq(topic) as string;
    const toQuarantine = (reason: string, detail: string, message: KafkaMessage) =>
      this.retrying('kafka', ctl, () =>
        this.quarantine(topic, partition, [{ kind: 'poison', reason, detail, message }]),
      );
    // a DLQ topic someone created by hand with a name that is no colony code (the `colonia`
    // column, a metric label): its records are quarantined, never written
    const coloniaProblem = colonyCodeProblem(colonia);
    for (const message of batch.messages) {
      if (!ctl.isRunning() || ctl.isStale()) return;
      const record = coloniaProblem ? `the DLQ topic's colony ${coloniaProblem}` : this.readDlqRecord(message, colonia);
      if (typeof record !== 'string' && headerString(message.headers, DLQ_OUTCOME_HEADER) === 'resolved') {
        const r = await this.retrying('database', ctl, () =>
          refusable(() => recordResolved(this.o.pool, record.event_id, colonia, record.falhou_em)),
        );
        if (r === ABORTED) return;
        if (typeof r === 'object') {
          this.o.metrics.refusedRows.inc({ sqlstate: r.refused });
          if (
            (await toQuarantine('database-refused', `PostgreSQL refused the row (SQLSTATE ${r.refused})`, message)) ===
            ABORTED
          )
            return;
        } else if (r) this.o.metrics.deadLetters.inc({ colonia, estado: 'resolved' });
      } else if (typeof record === 'string') {
        if ((await toQuarantine('invalid-header', record, message)) === ABORTED) return;
      } else {
        const waitUntil = Date.now() + (this.o.dlqEventWaitMs ?? 60_000);
        let mayArrive: boolean | undefined;
        let checkedAt = 0;
        for (;;) {
          const r = await this.retrying('database', ctl, () =>
            refusable(() => recordFailure(this.o.pool, record, this.o.dlqMaxTentativas)),
          );
          if (r === ABORTED) return;
          if ('refused' in r) {
            this.o.metrics.refusedRows.inc({ sqlstate: r.refused });
            const detail = `PostgreSQL refused the row (SQLSTATE ${r.refused})`;
            if ((await toQuarantine('database-refused', detail, message)) === ABORTED) return;
            break;
          }
          if (r.status === 'written') {
            this.o.metrics.deadLetters.inc({ colonia, estado: r.estado });
            break;
          }
          if (mayArrive === undefined || Date.now() - checkedAt > 1000) {
            const m = await this.retrying('kafka', ctl, () => this.eventMayStillArrive(message));
            if (m === ABORTED) return;
            checkedAt = Date.now();
            // the events lane may have written it between our insert attempt and the check: the
            // verdict "cannot arrive" stands only if one more attempt still finds nothing
            if (!m && mayArrive !== false) {
              mayArrive = false;
              continue;
            }
            mayArrive = m;
          }
          if (!mayArrive || Date.now() > waitUntil) {
            const detail = `event ${record.event_id} ${mayArrive ? 'did not reach core.event_log in time' : 'cannot reach core.event_log (never produced, quarantined, or the record names a position that does not exist)'}`;
            if ((await toQuarantine('event-not-in-log', detail, message)) === ABORTED) return;
            break;
          }
          await ctl.heartbeat().catch(() => undefined);
          await new Promise((res) => setTimeout(res, 250));
          if (!ctl.isRunning() || ctl.isStale() || this.stopping) return;
        }
      }
      ctl.resolveOffset(message.offset);
      await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
      this.recordProgress(
        this.lanes[1] as Lane,
        topic,
        partition,
        Math.max(0, Number(batch.highWatermark) - Number(message.offset) - 1),
      );
    }
  }

  /**
   * Whether a dead-lettered event that is not in the log may still get there: it is staged, or
   * the record names an event topic's partition and an offset that exists, and the events
   * lane's committed offset there is not past it. Anything else (a reprocessing topic, a forged or missing
   * position, a topic that does not exist) means it never will.
   */
  private async eventMayStillArrive(message: KafkaMessage): Promise<boolean> {
    if (await this.kafkaMayStillDeliver(message)) return true;
    // the events lane passed it, and stages before it commits: staged means the sequencer writes
    // it after its cause (asked last, so a row staged during the Kafka checks is seen)
    const id = eventIdOf(message);
    return (
      id !== undefined &&
      (await this.o.pool.query('SELECT 1 FROM core.event_staging WHERE event_id = $1', [id])).rowCount === 1
    );
  }

  /** Whether the events lane has yet to pass the DLQ record's original position (which exists). */
  private async kafkaMayStillDeliver(message: KafkaMessage): Promise<boolean> {
    const admin = this.admin;
    const original = headerString(message.headers, DLQ_HEADERS.topic);
    const p = Number(headerString(message.headers, DLQ_HEADERS.partition));
    const offset = headerString(message.headers, DLQ_HEADERS.offset) ?? '';
    if (!admin || !original || this.o.topics.tipoDe(original) === undefined) return false;
    if (!Number.isInteger(p) || p < 0 || !/^\d{1,19}$/.test(offset)) return false;
    if (!(await admin.listTopics()).includes(original)) return false;
    if (!(this.lanes[0]?.subscribed.has(original) ?? false)) return true; // a new topic the lane picks up soon
    const ends = await admin.fetchTopicOffsets(original);
    const end = ends.find((e) => e.partition === p);
    if (!end || BigInt(offset) >= BigInt(end.high)) return false;
    const [committed] = await admin.fetchOffsets({ groupId: this.o.groupId, topics: [original] });
    const c = committed?.partitions.find((x) => x.partition === p)?.offset;
    return c === undefined || !/^\d+$/.test(c) || BigInt(c) <= BigInt(offset);
  }

  /** The DLQ fields of a record, or why it cannot be read. */
  private readDlqRecord(message: KafkaMessage, colonia: string): DeadLetterRecord | string {
    const eventId = headerString(message.headers, HEADER.id);
    if (!eventId || !isUuid(eventId)) return 'DLQ record without a UUID ce_id header';
    let payload: unknown;
    try {
      payload = decodeValue(message.value).payload;
    } catch {
      payload = undefined; // undecodable original: scrub with the generic rules only
    }
    const text = (name: string): string | undefined => headerString(message.headers, name);
    const failedAt = text(DLQ_HEADERS.failedAt);
    const handler = text(DLQ_HEADERS.handler);
    const stack = text(DLQ_HEADERS.errorStack) || undefined;
    return {
      event_id: eventId,
      colonia,
      // every text through the shared rules: scrubText also makes it storable and cuts it to the column
      handler_nome: handler === undefined ? null : scrubText(handler, payload, 255),
      mensagem_erro: scrubText(text(DLQ_HEADERS.errorMessage) ?? '(sem mensagem)', payload, 4000),
      pilha_erro: stack === undefined ? null : scrubText(stack, payload, 8000),
      falhou_em: failedAt && isStorableTimestamp(failedAt) ? failedAt : new Date().toISOString(),
    };
  }

  private async decodeChunk(topic: string, partition: number, messages: KafkaMessage[]): Promise<Decoded[]> {
    const thread = this.decodeThread;
    if (!thread || Date.now() < this.inlineUntil) return this.decodeInline(topic, partition, messages);
    const decoded = await thread.decode(topic, partition, messages);
    this.threadDeathsInARow = 0;
    let unresolved = 0;
    for (const d of decoded) if (d.kind === 'unresolved') unresolved++;
    this.o.metrics.decoded.inc({ thread: 'decode' }, decoded.length - unresolved);
    const out = new Array<Decoded>(decoded.length);
    for (let i = 0; i < decoded.length; i++) {
      const d = decoded[i] as (typeof decoded)[number];
      const message = messages[i] as KafkaMessage;
      if (d.kind === 'ok') out[i] = { kind: 'ok', row: d.row, message, publishedMs: d.publishedMs, held: d.held };
      else if (d.kind === 'poison') out[i] = { kind: 'poison', reason: d.reason, detail: d.detail, message };
      else if (d.kind === 'unresolved') {
        // a schema id the thread was not taught: decoded here, asking the registry as inline decoding
        // does (the same checks in the same order, the same quarantine reason); once it decodes, the
        // thread is taught the id as the catalog version the record was checked against
        const own = (await this.decodeInline(topic, partition, [message]))[0] as Decoded;
        if (own.kind === 'ok')
          thread.teach((message.value as Buffer).readUInt32BE(1), own.row.tipo, own.row.versao_schema);
        out[i] = own;
      } else out[i] = this.rejectedOrThrow(topic, new Error(d.message), message); // (the thread's errors are never retriable)
    }
    return out;
  }

  /**
   * A record whose decoding threw `err`, neither a poison reason nor a registry outage: on an event
   * topic it is the record's fault, quarantined as `rejected`; a retriable error (the registry
   * unavailable), or any error on another topic, is thrown and the chunk retried.
   */
  private rejectedOrThrow(topic: string, err: unknown, message: KafkaMessage): Decoded {
    if (this.o.topics.tipoDe(topic) !== undefined && !isRetriable(err))
      return { kind: 'poison', reason: 'rejected', detail: (err as Error).message, message };
    throw err;
  }

  /** `decodeChunk` on this thread. */
  private async decodeInline(topic: string, partition: number, messages: KafkaMessage[]): Promise<Decoded[]> {
    const out: Decoded[] = [];
    const ctx = { topic, partition, receivedAt: Date.now(), catalog: this.o.catalog, redaction: this.o.redaction };
    this.o.metrics.decoded.inc({ thread: 'bridge' }, messages.length);
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i] as KafkaMessage;
      // a turn of the event loop every 100 records: decoding is CPU alone (a held chunk does no
      // I/O at all), and without turns three partitions' batches of thousands of records kept the
      // sequencer's replies (PostgreSQL, Kafka) waiting ~75 ms each: its writes then barely
      // overlapped a backlog's staging (ADR 0029, "Overlap")
      if (i > 0 && i % DECODE_TURN_RECORDS === 0) await new Promise<void>((r) => setImmediate(r));
      try {
        const d = decodeRecord(this.decoder, message, ctx);
        const r = d instanceof Promise ? await d : d;
        out.push({ ...r, message });
      } catch (err) {
        out.push(this.rejectedOrThrow(topic, err, message));
      }
    }
    return out;
  }

  /**
   * Stages the chunk in one transaction; if PostgreSQL refuses it for a row's content (a data
   * or integrity SQLSTATE — the shared rule should make this rare), its halves are staged the
   * same way, in order, down to single rows, and the refused ones come back as poison with their
   * SQLSTATE: the partition moves on instead of retrying the same batch for ever.
   */
  private async stageIsolatingRefused(
    good: Array<Extract<Decoded, { kind: 'ok' }>>,
  ): Promise<{ result: { staged: string[]; duplicates: string[] }; refused: Array<Poison & { eventId: string }> }> {
    const refused: Array<Poison & { eventId: string }> = [];
    const results = await writeIsolatingRefused(
      good,
      (items) =>
        stageEvents(
          this.o.pool,
          items.map((g) => g.row),
        ),
      (g, sqlstate) => {
        this.o.metrics.refusedRows.inc({ sqlstate });
        refused.push({
          kind: 'poison',
          reason: 'database-refused',
          detail: `PostgreSQL refused the row (SQLSTATE ${sqlstate})`,
          message: g.message,
          eventId: g.row.event_id,
        });
        return Promise.resolve();
      },
    );
    const result = {
      staged: results.flatMap((r) => r.staged),
      duplicates: results.flatMap((r) => r.duplicates),
    };
    return { result, refused };
  }

  /**
   * Copies records to the quarantine topic with their reason. A copy the broker refuses (too
   * large once the quarantine headers are added, or otherwise invalid) is quarantined by
   * reference instead — topic, partition, offset, size and reason, no key, value or original
   * headers — so the quarantine always succeeds and the partition moves on.
   */
  private async quarantine(topic: string, partition: number, poison: Poison[]): Promise<void> {
    const producer = this.producer;
    if (!producer) throw new FeromoniosError('BUS_CLOSED', 'the bridge is not started');
    const send = (messages: Message[]) =>
      producer.send({ topic: this.o.topics.quarentena(), acks: -1, messages }).then(() => undefined);
    const copies = poison.map((p) => quarantineCopy(topic, partition, p));
    try {
      await send(copies);
    } catch (err) {
      if (isRetriable(err)) throw err;
      for (const [i, p] of poison.entries()) {
        try {
          await send([copies[i] as Message]);
        } catch (one) {
          if (isRetriable(one)) throw one;
          await send([quarantineReference(topic, partition, p, one)]);
          this.o.metrics.quarantinedByReference.inc({ reason: p.reason });
        }
      }
    }
    for (const p of poison)
      this.reportQuarantined(topic, partition, p.message.offset, p.reason, eventIdOf(p.message), p.detail);
  }

  /** The metric and the log line of one quarantined record. */
  private reportQuarantined(
    topic: string,
    partition: number,
    offset: string,
    reason: string,
    eventId: string | undefined,
    detail: string,
  ): void {
    this.o.metrics.quarantined.inc({ reason });
    this.o.logger.warn('record quarantined', {
      topic,
      partition,
      offset,
      reason,
      event_id: eventId,
      detail: scrubText(detail, undefined, 300),
    });
  }

  /**
   * A staged event PostgreSQL refused when the sequencer moved it into the log (a constraint
   * the shared rule does not know): quarantined by reference — the original record stays at its
   * topic, partition and offset — with its `ce_id` and the SQLSTATE; the caller then drops it
   * from staging, so it never blocks the events after it.
   */
  private async quarantineStaged(row: StagedRef, sqlstate: string): Promise<void> {
    const producer = this.producer;
    if (!producer) throw new FeromoniosError('BUS_CLOSED', 'the bridge is not started');
    const detail = `PostgreSQL refused the row when it was written to core.event_log (SQLSTATE ${sqlstate})`;
    const headers = referenceHeaders(
      row.kafka_topic,
      row.kafka_partition,
      row.kafka_offset,
      'database-refused',
      detail,
    );
    await producer.send({
      topic: this.o.topics.quarentena(),
      acks: -1,
      messages: [{ key: null, value: null, headers: { [HEADER.id]: row.event_id, ...headers } }],
    });
    this.o.metrics.refusedRows.inc({ sqlstate });
    this.o.metrics.quarantinedByReference.inc({ reason: 'database-refused' });
    this.reportQuarantined(
      row.kafka_topic,
      row.kafka_partition,
      row.kafka_offset,
      'database-refused',
      row.event_id,
      detail,
    );
  }

  /**
   * Runs `fn` until it succeeds, backing off on retriable failures (database or registry down)
   * while keeping the group membership alive. Returns `ABORTED` when the bridge stops or the
   * partition is revoked meanwhile: nothing was committed, so the records come back.
   */
  private async retrying<T>(
    dependency: string,
    ctl: { heartbeat(): Promise<void>; isRunning(): boolean; isStale(): boolean },
    fn: () => Promise<T>,
  ): Promise<T | typeof ABORTED> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!isRetriable(err) && !(err instanceof FeromoniosError && err.retriable)) throw err;
        const delay = backoffDelay(attempt, { initialMs: 200, maxMs: 5_000 });
        if (dependency === 'database') this.lastDbOk = false;
        this.o.metrics.retries.inc({ dependency });
        this.o.logger.warn(`${dependency} unavailable, retrying`, { error: (err as Error).message, delay_ms: delay });
        const until = Date.now() + delay;
        while (Date.now() < until) {
          if (!ctl.isRunning() || ctl.isStale() || this.stopping) return ABORTED;
          await ctl.heartbeat().catch(() => undefined);
          await new Promise((r) => setTimeout(r, Math.min(500, until - Date.now())));
        }
      }
    }
  }
}

/** A header's value when it is a UUID (for logs), else nothing. */
function eventIdOf(message: KafkaMessage): string | undefined {
  const id = headerString(message.headers, HEADER.id);
  return id && isUuid(id) ? id : undefined;
}

/** The quarantine copy: original key, value and headers, plus the reason and the origin. */
function quarantineCopy(topic: string, partition: number, p: Poison): Message {
  return {
    key: p.message.key,
    value: p.message.value,
    headers: {
      ...p.message.headers,
      [QUARANTINE_HEADERS.reason]: p.reason,
      [QUARANTINE_HEADERS.detail]: storableText(p.detail, 2000),
      [QUARANTINE_HEADERS.topic]: topic,
      [QUARANTINE_HEADERS.partition]: String(partition),
      [QUARANTINE_HEADERS.offset]: p.message.offset,
    },
  };
}

/** What is quarantined when the copy itself cannot be produced: where the record is, and why. */
function quarantineReference(topic: string, partition: number, p: Poison, refusal: unknown): Message {
  const why = (refusal as { type?: unknown }).type;
  const detail = `${p.detail} — quarantined by reference: the broker refused the copy${typeof why === 'string' ? ` (${why})` : ''}`;
  return {
    key: null,
    value: null,
    headers: {
      ...referenceHeaders(topic, partition, p.message.offset, p.reason, detail),
      [QUARANTINE_HEADERS.size]: String(p.message.value?.length ?? 0),
    },
  };
}

/** The headers of a quarantine record by reference: the original stays at topic, partition and offset. */
function referenceHeaders(
  topic: string,
  partition: number,
  offset: string,
  reason: string,
  detail: string,
): Record<string, string> {
  return {
    [QUARANTINE_HEADERS.reason]: reason,
    [QUARANTINE_HEADERS.detail]: storableText(detail, 2000),
    [QUARANTINE_HEADERS.topic]: topic,
    [QUARANTINE_HEADERS.partition]: String(partition),
    [QUARANTINE_HEADERS.offset]: offset,
    [QUARANTINE_HEADERS.reference]: 'true',
  };
}
