import { randomUUID } from 'node:crypto';
import type { EventoConsultado } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { createTestDatabase, waitFor } from '../test/harness';
import { TEST_JWT_SECRET } from '../test/harness/audit';
import { spawnBridge } from '../test/harness/bridge';
import { createTestBus } from '../test/harness/bus';
import { spawnTs } from '../test/harness/spawn';
import { dashboard, dashboardQueries, metricNames, rules } from './ops-kit';

/**
 * Every metric the alert rules and the dashboard query is exported by the running services:
 * the bridge and the audit API as real processes (their /metrics), and a colony (the SDK's
 * registry its host exposes) — after a little traffic, so labelled series exist and the label
 * names the queries filter and group on are checked on real samples.
 */
interface Exported {
  types: Map<string, string>;
  /** Label names seen on samples, per sample name (`x_bucket`, `x_count`… separately). */
  labels: Map<string, Set<string>>;
}

function parseExposition(text: string, into: Exported): void {
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) into.types.set(type[1] as string, type[2] as string);
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? /.exec(line);
    if (!sample || line.startsWith('#')) continue;
    const names = into.labels.get(sample[1] as string) ?? new Set<string>();
    for (const m of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) names.add(m[1] as string);
    into.labels.set(sample[1] as string, names);
  }
}

/** Whether a queried series name is exported: itself, or a histogram's `_bucket`/`_sum`/`_count`. */
function isExported(e: Exported, name: string): boolean {
  if (e.types.has(name)) return true;
  const base = /^(.*)_(bucket|sum|count)$/.exec(name)?.[1];
  return base !== undefined && ['histogram', 'summary'].includes(e.types.get(base) ?? '');
}

/** `metric{label=…}` and `by (label, …)` in a PromQL expression, per metric selected inside. */
function labelsUsed(expr: string): Array<{ metric: string; label: string }> {
  const out: Array<{ metric: string; label: string }> = [];
  const code = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  for (const m of code.matchAll(/\b(feromonios_[a-z0-9_]+)\{([^}]*)\}/g))
    for (const l of (m[2] as string).matchAll(/([a-z_]+)\s*(?:=~|!=|!~|=)/g))
      out.push({ metric: m[1] as string, label: l[1] as string });
  const metrics = metricNames(expr).filter((n) => !n.includes(':'));
  for (const by of code.matchAll(/\bby \(([^)]*)\)/g))
    for (const label of (by[1] as string).split(',').map((s) => s.trim()))
      if (label && label !== 'le') for (const metric of metrics) out.push({ metric, label });
  return out;
}

it('exports every metric the alert rules and the dashboard use, with the labels they filter and group by', async () => {
  const db = await createTestDatabase();
  const bus = await createTestBus({ pool: db.pool });
  const bridgePort = 19900 + Math.floor(Math.random() * 90);
  spawnBridge(bus, db, { BRIDGE_PORT: String(bridgePort), BRIDGE_GAUGES_INTERVAL_MS: '1000' });
  const apiPort = 19800 + Math.floor(Math.random() * 90);
  spawnTs('audit-api/main.ts', {
    DATABASE_URL: db.url,
    AUDIT_JWT_SECRET: TEST_JWT_SECRET,
    AUDIT_API_PORT: String(apiPort),
    FEROMONIOS_TOPIC_NAMESPACE: bus.topics.namespace,
    LOG_LEVEL: 'warn',
  });
  const get = (port: number, p: string) => fetch(`http://127.0.0.1:${port}${p}`).catch(() => undefined);
  await waitFor(async () => (await get(apiPort, '/ready'))?.status === 200, {
    timeoutMs: 60_000,
    message: 'audit API ready',
  });
  // traffic: a publish, a handler that retries then dead-letters, audit requests (one refused)
  const colonia = 'O-1';
  bus.inscrever(
    'demanda.recebida',
    colonia,
    (e: EventoConsultado) => {
      if (e.payload.canal === 'telefone') throw new Error('dependency down');
    },
    { tentativasExtras: 1, backoffInicialMs: 10 },
  );
  await bus.inscricoesProntas(colonia);
  const failing = await bus.publicar({
    tipo: 'demanda.recebida',
    origem: 'D-1a',
    correlacao_id: randomUUID(),
    payload: { ...SAMPLE_PAYLOADS['demanda.recebida'], canal: 'telefone' },
  });
  await bus.publicar({ tipo: 'demanda.recebida', origem: 'D-1a', payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] } });
  await bus.publicar({ tipo: 'demanda.recebida', origem: 'D-1a', payload: null as never }).catch(() => undefined);
  await waitFor(
    async () =>
      (
        await db.pool.query('SELECT 1 FROM core.dead_letter_queue WHERE event_id = $1 AND colonia = $2', [
          failing.event_id,
          colonia,
        ])
      ).rowCount === 1,
    { timeoutMs: 60_000, message: 'the failed event in the DLQ table' },
  );
  await waitFor(async () => (await get(bridgePort, '/ready'))?.status === 200, {
    timeoutMs: 60_000,
    message: 'bridge ready (its lane follows the event topics)',
  });
  expect((await get(apiPort, '/api/events'))?.status).toBe(401); // refused: no token
  const exported: Exported = { types: new Map(), labels: new Map() };
  await waitFor(
    async () => {
      exported.types.clear();
      exported.labels.clear();
      for (const port of [bridgePort, apiPort]) parseExposition(await (await get(port, '/metrics'))!.text(), exported);
      parseExposition(await bus.metrics.registry.metrics(), exported);
      return exported.labels.has('feromonios_dlq_depth') && exported.labels.has('feromonios_consumer_group_lag');
    },
    { timeoutMs: 30_000, message: 'the polled gauges exported by the bridge' },
  );

  const queries = [...rules().map((r) => r.expr), ...dashboardQueries(dashboard())];
  const recorded = new Set(rules().flatMap((r) => (r.record ? [r.record] : [])));
  const names = [...new Set(queries.flatMap(metricNames))];
  expect(names.length).toBeGreaterThan(30);
  expect(names.filter((n) => !(recorded.has(n) || isExported(exported, n)))).toEqual([]);
  // label names: checked on the series that have samples now
  const missing = queries
    .flatMap(labelsUsed)
    .filter(({ metric, label }) => exported.labels.has(metric) && !exported.labels.get(metric)?.has(label))
    .map(({ metric, label }) => `${metric}.${label}`);
  expect([...new Set(missing)]).toEqual([]);
  // the seed's metrics have samples: published, consumed, lag, retry, DLQ depth
  for (const m of [
    'feromonios_publish_total',
    'feromonios_consume_total',
    'feromonios_consumer_lag',
    'feromonios_consumer_group_lag',
    'feromonios_consume_retries_total',
    'feromonios_dlq_depth',
  ])
    expect(exported.labels.has(m)).toBe(true);
}, 180_000);
