import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The audit API's Prometheus metrics (served at /metrics, with the SDK's in the same registry). */
export class AuditMetrics {
  readonly requests: Counter<'method' | 'route' | 'status'>;
  readonly duration: Histogram<'method' | 'route'>;
  readonly denied: Counter<'reason'>;

  constructor(readonly registry: Registry = new Registry()) {
    collectDefaultMetrics({ register: registry });
    this.requests = new Counter({
      name: 'feromonios_audit_http_requests_total',
      help: 'HTTP requests, by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'feromonios_audit_http_request_duration_seconds',
      help: 'HTTP request duration, in seconds.',
      labelNames: ['method', 'route'],
      buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
    this.denied = new Counter({
      name: 'feromonios_audit_denied_total',
      help: 'Requests refused before reaching a route, by reason (address, rate, token, role, throttle).',
      labelNames: ['reason'],
      registers: [registry],
    });
  }
}
