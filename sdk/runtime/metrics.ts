import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The SDK's Prometheus metrics, in a registry the host exposes (`bus.metrics.registry`).
 * Give your own `Registry` in the options to merge them with the application's.
 */
export class SdkMetrics {
  readonly published: Counter<'tipo' | 'origem' | 'result'>;
  readonly publishDuration: Histogram<'tipo' | 'origem' | 'result'>;
  readonly consumed: Counter<'tipo' | 'colonia' | 'result'>;
  readonly handlerDuration: Histogram<'tipo' | 'colonia' | 'result'>;
  readonly consumeRetries: Counter<'tipo' | 'colonia'>;
  readonly inboxBatches: Counter<'colonia' | 'manipulador' | 'resultado'>;
  readonly consumerLag: Gauge<'colonia' | 'topic' | 'partition'>;
  readonly retentionGap: Counter<'colonia' | 'topic'>;
  readonly deadLettered: Counter<'colonia' | 'manipulador'>;
  readonly reprocessed: Counter<'colonia' | 'fonte'>;
  readonly dlqTransitions: Counter<'colonia' | 'acao'>;
  readonly outboxPending: Gauge<'schema'>;
  readonly outboxOldestAge: Gauge<'schema'>;
  readonly outboxPublished: Counter<'schema'>;
  readonly outboxErrors: Counter<'schema' | 'code'>;
  readonly confirmation: Histogram<'tipo' | 'result'>;
  readonly subscriberRestarts: Counter<'colonia' | 'causa'>;

  constructor(readonly registry: Registry = new Registry()) {
    this.published = counter(
      registry,
      'feromonios_publish_total',
      'Events published, by type, origin and result (ok or an error code).',
      ['tipo', 'origem', 'result'],
    );
    this.publishDuration = histogram(
      registry,
      'feromonios_publish_duration_seconds',
      'Time from publicar() to the broker acknowledgement, in seconds.',
      ['tipo', 'origem', 'result'],
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    );
    this.consumed = counter(
      registry,
      'feromonios_consume_total',
      'Handler runs, by type, colony and result (success, failure, timeout, duplicate).',
      ['tipo', 'colonia', 'result'],
    );
    this.handlerDuration = histogram(
      registry,
      'feromonios_handler_duration_seconds',
      'Duration of one handler run, in seconds.',
      ['tipo', 'colonia', 'result'],
      [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    );
    this.consumeRetries = counter(
      registry,
      'feromonios_consume_retries_total',
      'Handler runs retried in place after a failure (attempts beyond the first), by type and colony.',
      ['tipo', 'colonia'],
    );
    this.inboxBatches = counter(
      registry,
      'feromonios_inbox_batches_total',
      'Inbox transactions holding several events (inbox.eventosPorTransacao > 1), by colony, handler and result: committed, or rolled_back (its events then handled one transaction each).',
      ['colonia', 'manipulador', 'resultado'],
    );
    this.consumerLag = gauge(
      registry,
      'feromonios_consumer_lag',
      "Records behind the partition's end, for the partitions this colony instance is assigned: at a fetch's start the whole fetch counts, at its end what is left (a stuck handler keeps the start value). The platform-wide view by committed offsets: feromonios_consumer_group_lag (bridge).",
      ['colonia', 'topic', 'partition'],
    );
    this.retentionGap = counter(
      registry,
      'feromonios_consumer_retention_gap_records_total',
      "Records a colony's group never read because retention deleted them first (its committed offset fell below the log start), by colony and topic; each gap is also logged with its partition and offset range.",
      ['colonia', 'topic'],
    );
    this.deadLettered = counter(
      registry,
      'feromonios_dlq_sent_total',
      'Messages sent to a colony DLQ topic, by colony and handler.',
      ['colonia', 'manipulador'],
    );
    this.reprocessed = counter(
      registry,
      'feromonios_dlq_reprocessed_total',
      'DLQ entries sent back to their colony, by colony and payload source (original or redigido).',
      ['colonia', 'fonte'],
    );
    this.dlqTransitions = counter(
      registry,
      'feromonios_dlq_transitions_total',
      'DLQ entries an operator action changed: parked by the loop guard (guarda), parked (estacionar) or reopened (reabrir), by colony.',
      ['colonia', 'acao'],
    );
    this.outboxPending = gauge(
      registry,
      'feromonios_outbox_pending',
      'Committed outbox rows not published yet, by colony schema.',
      ['schema'],
    );
    this.outboxOldestAge = gauge(
      registry,
      'feromonios_outbox_oldest_pending_age_seconds',
      'Age of the oldest unpublished outbox row, in seconds (0 when none).',
      ['schema'],
    );
    this.outboxPublished = counter(
      registry,
      'feromonios_outbox_published_total',
      'Outbox rows the relay published (acknowledged by the broker and marked).',
      ['schema'],
    );
    this.outboxErrors = counter(
      registry,
      'feromonios_outbox_relay_errors_total',
      'Failed relay passes (by error code) and rows set aside (POISON).',
      ['schema', 'code'],
    );
    this.subscriberRestarts = counter(
      registry,
      'feromonios_subscriber_restarts_total',
      "A colony's consumer started again: after a failed subscription (causa=inscricao) or a crash (causa=falha); refused by the broker's ACLs (causa=autorizacao) or credentials (causa=autenticacao), which waiting does not fix.",
      ['colonia', 'causa'],
    );
    this.confirmation = histogram(
      registry,
      'feromonios_publish_confirmation_seconds',
      'Confirmed publishing: time from publicar() until the event is in core.event_log, in seconds.',
      ['tipo', 'result'],
      [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    );
  }
}

/** Two buses sharing one registry share its metrics instead of failing on a duplicate name. */
export function getOrCreate<T>(registry: Registry, name: string, create: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? create();
}

function counter<L extends string>(registry: Registry, name: string, help: string, labelNames: L[]): Counter<L> {
  return getOrCreate(registry, name, () => new Counter({ name, help, labelNames, registers: [registry] }));
}

function gauge<L extends string>(registry: Registry, name: string, help: string, labelNames: L[]): Gauge<L> {
  return getOrCreate(registry, name, () => new Gauge({ name, help, labelNames, registers: [registry] }));
}

function histogram<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: L[],
  buckets: number[],
): Histogram<L> {
  return getOrCreate(registry, name, () => new Histogram({ name, help, labelNames, buckets, registers: [registry] }));
}
