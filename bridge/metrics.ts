import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The bridge's Prometheus metrics (served at /metrics). */
export class BridgeMetrics {
  readonly registry = new Registry();
  readonly consumed = new Counter({
    name: 'feromonios_bridge_consumed_total',
    help: 'Records read from event topics.',
    labelNames: ['topic'],
    registers: [this.registry],
  });
  readonly inserted = new Counter({
    name: 'feromonios_bridge_inserted_total',
    help: 'Events written to core.event_log.',
    labelNames: ['tipo'],
    registers: [this.registry],
  });
  readonly duplicates = new Counter({
    name: 'feromonios_bridge_duplicates_total',
    help: 'Redelivered event_ids dropped without a sequence number.',
    registers: [this.registry],
  });
  readonly quarantined = new Counter({
    name: 'feromonios_bridge_quarantined_total',
    help: 'Records sent to the quarantine topic, by reason.',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  readonly retries = new Counter({
    name: 'feromonios_bridge_retries_total',
    help: 'Retries after a retriable failure, by dependency.',
    labelNames: ['dependency'],
    registers: [this.registry],
  });
  readonly batchSize = new Histogram({
    name: 'feromonios_bridge_batch_size',
    help: 'Events per database transaction.',
    buckets: [1, 10, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 20000],
    registers: [this.registry],
  });
  readonly insertDuration = new Histogram({
    name: 'feromonios_bridge_insert_duration_seconds',
    help: 'Duration of one event_log transaction, in seconds.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly deadLetters = new Counter({
    name: 'feromonios_bridge_dead_letters_total',
    help: 'DLQ records written to core.dead_letter_queue, by colony and resulting state.',
    labelNames: ['colonia', 'estado'],
    registers: [this.registry],
  });
  readonly lag = new Gauge({
    name: 'feromonios_bridge_lag',
    help: 'Records behind the high watermark, per partition.',
    labelNames: ['topic', 'partition'],
    registers: [this.registry],
  });
  readonly consumerGroupLag = new Gauge({
    name: 'feromonios_consumer_group_lag',
    help: "Records between each colony consumer group's committed offset and the partition's end, per colony, topic and partition (polled every BRIDGE_GAUGES_INTERVAL_MS).",
    labelNames: ['colonia', 'topic', 'partition'],
    registers: [this.registry],
  });
  readonly dlqDepth = new Gauge({
    name: 'feromonios_dlq_depth',
    help: 'Open entries of core.dead_letter_queue per colony and state (pendente and retrying are the pending count; failed_permanent waits for a person), polled every BRIDGE_GAUGES_INTERVAL_MS.',
    labelNames: ['colonia', 'estado'],
    registers: [this.registry],
  });
  readonly gaugeRefreshFailures = new Counter({
    name: 'feromonios_bridge_gauge_refresh_failures_total',
    help: 'Polls of the platform gauges (consumer group lag, DLQ depth) that failed, by source (kafka, database).',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly retentionGap = new Counter({
    name: 'feromonios_bridge_retention_gap_records_total',
    help: 'Records retention deleted before the bridge read them, per lane and topic (each gap is a row of core.lacunas_retencao and a log line).',
    labelNames: ['lane', 'topic'],
    registers: [this.registry],
  });
  readonly consumerRestarts = new Counter({
    name: 'feromonios_bridge_consumer_restarts_total',
    help: 'Lane consumers that crashed and were started again (by kafkajs or by the bridge), per lane.',
    labelNames: ['lane'],
    registers: [this.registry],
  });
  readonly quarantinedByReference = new Counter({
    name: 'feromonios_bridge_quarantined_by_reference_total',
    help: 'Quarantined records whose copy the broker refused, recorded by reference (topic, partition, offset), per reason.',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  readonly stalledPartitions = new Gauge({
    name: 'feromonios_bridge_stalled_partitions',
    help: 'Partitions with lag and no progress for BRIDGE_STALL_AFTER_MS, per lane.',
    labelNames: ['lane'],
    registers: [this.registry],
  });
  readonly refusedRows = new Counter({
    name: 'feromonios_bridge_refused_rows_total',
    help: 'Rows PostgreSQL refused (isolated from their batch and quarantined), per SQLSTATE.',
    labelNames: ['sqlstate'],
    registers: [this.registry],
  });
  readonly highestSequence = new Gauge({
    name: 'feromonios_bridge_highest_sequence',
    help: 'Highest sequence_number this instance wrote.',
    registers: [this.registry],
  });

  readonly staged = new Counter({
    name: 'feromonios_bridge_staged_total',
    help: 'Events staged in core.event_staging (the sequencer then writes them to the log in causal order).',
    registers: [this.registry],
  });
  readonly heldInMemory = new Gauge({
    name: 'feromonios_bridge_memory_staged',
    help: "Events the sequencer's leader holds in memory, staged and not yet in core.event_log (ADR 0029).",
    registers: [this.registry],
  });

  readonly memoryDrops = new Counter({
    name: 'feromonios_bridge_memory_drops_total',
    help: 'Times the sequencer lost its lock with events held in memory: they were dropped and the events lane started again from its committed offsets (ADR 0029).',
    registers: [this.registry],
  });

  readonly decoded = new Counter({
    name: 'feromonios_bridge_decoded_total',
    help: "Records decoded, by thread: `decode` (the decode thread) or `bridge` (the bridge's own: BRIDGE_DECODE_THREAD=false, or a schema id the decode thread was not taught yet).",
    labelNames: ['thread'] as const,
    registers: [this.registry],
  });

  readonly decodeThreadRestarts = new Counter({
    name: 'feromonios_bridge_decode_thread_restarts_total',
    help: 'Times the decode thread died (bridge/decode-thread.ts): its chunks in flight were retried and the next chunk started a new thread.',
    registers: [this.registry],
  });

  readonly decodeThreadFallbacks = new Counter({
    name: 'feromonios_bridge_decode_thread_fallbacks_total',
    help: 'Times the decode thread died several times in a row and the bridge decoded on its own thread for a while instead (bridge/bridge.ts).',
    registers: [this.registry],
  });

  readonly stagingDepth = new Gauge({
    name: 'feromonios_bridge_staging_depth',
    help: 'Events staged and not yet in core.event_log (at most 100000), as the sequencer last counted: beside its rounds, every 5 s at most; 0 as soon as staging is empty (leader only).',
    registers: [this.registry],
  });
  readonly eventLogDefaultRows = new Gauge({
    name: 'feromonios_bridge_event_log_default_rows',
    help: 'Rows of core.event_log in the DEFAULT partition (no month covered them; at most 10000 counted). Should be 0: the bridge creates months ahead.',
    registers: [this.registry],
  });
  readonly eventLogPartitionsCreated = new Counter({
    name: 'feromonios_bridge_event_log_partitions_created_total',
    help: 'Monthly partitions of core.event_log this bridge created (at start and every BRIDGE_PARTITIONS_INTERVAL_MS).',
    registers: [this.registry],
  });
  readonly sequencerLeader = new Gauge({
    name: 'feromonios_bridge_sequencer_leader',
    help: '1 when this instance is the active sequencer (one per database), else 0.',
    registers: [this.registry],
  });
  readonly sequencerFailures = new Counter({
    name: 'feromonios_bridge_sequencer_failures_total',
    help: 'Sequencer rounds that failed (database or Kafka unavailable) and were retried after a backoff.',
    registers: [this.registry],
  });
  readonly sequencerCuts = new Counter({
    name: 'feromonios_bridge_sequencer_cut_rounds_total',
    help: 'Sequencer rounds that wrote the events published before a cut while partitions were still being staged (a backlog: docs/ordering.md).',
    registers: [this.registry],
  });
  readonly rounds = new Histogram({
    name: 'feromonios_bridge_sequencer_round_seconds',
    help: 'Duration of one sequencer round (snapshot, wait for the partitions, order, write), in seconds.',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly stagingVacuums = new Histogram({
    name: 'feromonios_bridge_staging_vacuum_seconds',
    help: 'Duration of each VACUUM of core.event_staging by the sequencer (every BRIDGE_STAGING_VACUUM_ROWS rows moved out), in seconds.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });
  readonly causalHeld = new Gauge({
    name: 'feromonios_bridge_causal_held',
    help: 'Events held because their causation_id names an event not in the log yet (last round).',
    registers: [this.registry],
  });
  readonly causalHoldExpired = new Counter({
    name: 'feromonios_bridge_causal_hold_expired_total',
    help: 'Events written although their cause never reached the log within BRIDGE_CAUSAL_HOLD_MS.',
    registers: [this.registry],
  });
  readonly orderGapExpired = new Counter({
    name: 'feromonios_bridge_order_gap_expired_total',
    help: "Gaps in a producer session's counters that neither filled nor were settled within BRIDGE_ORDER_GAP_MS: the events after them were written without them.",
    registers: [this.registry],
  });
  readonly idlePartitions = new Counter({
    name: 'feromonios_bridge_order_idle_partitions_total',
    help: 'Times a partition with unstaged records made no progress for BRIDGE_ORDER_MAX_IDLE_MS and rounds went on without waiting for it.',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
