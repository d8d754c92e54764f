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
  readonly deadLettered: Counter<'colonia' | 'manipulador'>;
  readonly reprocessed: Counter<'colonia' | 'fonte'>;
  readonly outboxPending: Gauge<'schema'>;
  readonly outboxOldestAge: Gauge<'schema'>;
  readonly outboxPublished: Counter<'schema'>;
  readonly outboxErrors: Counter<'schema' | 'code'>;
  readonly confirmation: Histogram<'tipo' | 'result'>;

  constructor(readonly registry: Registry = new Registry()) {
    this.published = getOrCreate(
      registry,
      'feromonios_publish_total',
      () =>
        new Counter({
          name: 'feromonios_publish_total',
          help: 'Events published, by type, origin and result (ok or an error code).',
          labelNames: ['tipo', 'origem', 'result'],
          registers: [registry],
        }),
    );
    this.publishDuration = getOrCreate(
      registry,
      'feromonios_publish_duration_seconds',
      () =>
        new Histogram({
          name: 'feromonios_publish_duration_seconds',
          help: 'Time from publicar() to the broker acknowledgement, in seconds.',
          labelNames: ['tipo', 'origem', 'result'],
          buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
          registers: [registry],
        }),
    );
    this.consumed = getOrCreate(
      registry,
      'feromonios_consume_total',
      () =>
        new Counter({
          name: 'feromonios_consume_total',
          help: 'Handler runs, by type, colony and result (success, failure, timeout, duplicate).',
          labelNames: ['tipo', 'colonia', 'result'],
          registers: [registry],
        }),
    );
    this.handlerDuration = getOrCreate(
      registry,
      'feromonios_handler_duration_seconds',
      () =>
        new Histogram({
          name: 'feromonios_handler_duration_seconds',
          help: 'Duration of one handler run, in seconds.',
          labelNames: ['tipo', 'colonia', 'result'],
          buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
          registers: [registry],
        }),
    );
    this.deadLettered = getOrCreate(
      registry,
      'feromonios_dlq_sent_total',
      () =>
        new Counter({
          name: 'feromonios_dlq_sent_total',
          help: 'Messages sent to a colony DLQ topic, by colony and handler.',
          labelNames: ['colonia', 'manipulador'],
          registers: [registry],
        }),
    );
    this.reprocessed = getOrCreate(
      registry,
      'feromonios_dlq_reprocessed_total',
      () =>
        new Counter({
          name: 'feromonios_dlq_reprocessed_total',
          help: 'DLQ entries sent back to their colony, by colony and payload source (original or redigido).',
          labelNames: ['colonia', 'fonte'],
          registers: [registry],
        }),
    );
    this.outboxPending = getOrCreate(
      registry,
      'feromonios_outbox_pending',
      () =>
        new Gauge({
          name: 'feromonios_outbox_pending',
          help: 'Committed outbox rows not published yet, by colony schema.',
          labelNames: ['schema'],
          registers: [registry],
        }),
    );
    this.outboxOldestAge = getOrCreate(
      registry,
      'feromonios_outbox_oldest_pending_age_seconds',
      () =>
        new Gauge({
          name: 'feromonios_outbox_oldest_pending_age_seconds',
          help: 'Age of the oldest unpublished outbox row, in seconds (0 when none).',
          labelNames: ['schema'],
          registers: [registry],
        }),
    );
    this.outboxPublished = getOrCreate(
      registry,
      'feromonios_outbox_published_total',
      () =>
        new Counter({
          name: 'feromonios_outbox_published_total',
          help: 'Outbox rows the relay published (acknowledged by the broker and marked).',
          labelNames: ['schema'],
          registers: [registry],
        }),
    );
    this.outboxErrors = getOrCreate(
      registry,
      'feromonios_outbox_relay_errors_total',
      () =>
        new Counter({
          name: 'feromonios_outbox_relay_errors_total',
          help: 'Failed relay passes (by error code) and rows set aside (POISON).',
          labelNames: ['schema', 'code'],
          registers: [registry],
        }),
    );
    this.confirmation = getOrCreate(
      registry,
      'feromonios_publish_confirmation_seconds',
      () =>
        new Histogram({
          name: 'feromonios_publish_confirmation_seconds',
          help: 'Confirmed publishing: time from publicar() until the event is in core.event_log, in seconds.',
          labelNames: ['tipo', 'result'],
          buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
          registers: [registry],
        }),
    );
  }
}

/** Two buses sharing one registry share its metrics instead of failing on a duplicate name. */
export function getOrCreate<T>(registry: Registry, name: string, create: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? create();
}
