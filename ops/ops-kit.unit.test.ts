import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  OPS_DIR,
  RULES_FILE,
  RULES_TEST_FILE,
  dashboard,
  dashboardQueries,
  metricNames,
  rules,
  testedAlerts,
} from './ops-kit';

/**
 * The alert rules and the dashboard as files an operator loads (docs/operations.md): promtool
 * accepts the rules and their unit tests pass (series in, alerts out); every alert is tested and
 * documented; the dashboard is provisionable. What the services really export is checked by
 * ops/ops-kit.int.test.ts.
 */
function promtool(args: string[]): string {
  try {
    return execFileSync('promtool', args, { cwd: path.dirname(RULES_FILE), encoding: 'utf8', stdio: 'pipe' });
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (e.code === 'ENOENT')
      throw new Error(
        "promtool is not installed: `apt-get install prometheus` (Debian's package; .ci/run installs it)",
      );
    throw new Error(`promtool ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

describe('alert rules (ops/prometheus)', () => {
  it('pass promtool check rules', () => {
    expect(promtool(['check', 'rules', RULES_FILE])).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('pass their promtool unit tests', () => {
    expect(promtool(['test', 'rules', RULES_TEST_FILE])).toContain('SUCCESS');
  });

  it('has a unit test for every alert, a severity, a summary and a unique name', () => {
    const alerts = rules().filter((r) => r.alert);
    const names = alerts.map((r) => r.alert as string);
    expect(new Set(names).size).toBe(names.length);
    const tested = testedAlerts();
    expect(names.filter((n) => !tested.has(n))).toEqual([]);
    for (const r of alerts) {
      expect(['critical', 'warning', 'info']).toContain(r.labels?.severity);
      expect(r.annotations?.summary).toEqual(expect.any(String));
    }
  });

  it("covers the seed's two alerts (lag above the ingestion SLO, DLQ above zero for a period) and docs/operations.md names every alert", () => {
    const byName = new Map(rules().map((r) => [r.alert ?? r.record, r]));
    expect(byName.get('FeromoniosIngestionLagAboveSLO')?.for).toBe('5m');
    expect(byName.get('FeromoniosDlqNotEmpty')?.expr).toMatch(/feromonios_dlq_depth\{estado=~"pendente\|retrying"\}/);
    expect(byName.get('FeromoniosDlqNotEmpty')?.for).toBe('15m');
    const doc = readFileSync(path.join(OPS_DIR, '..', 'docs', 'operations.md'), 'utf8');
    const undocumented = [...byName.keys()].filter((n) => n && !doc.includes(n));
    expect(undocumented).toEqual([]);
  });
});

describe('dashboard (ops/grafana)', () => {
  const d = dashboard();

  it('is provisionable: a fixed uid, unique panel ids, every query on the datasource variable, inside the 24-column grid', () => {
    expect(d.uid).toBe('feromonios-platform');
    const ids = d.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(d.templating.list.find((v) => v.name === 'datasource')?.type).toBe('datasource');
    for (const p of d.panels) {
      expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
      if (p.type === 'row') continue;
      expect(p.datasource?.uid).toBe('${datasource}');
      expect(p.targets?.length).toBeGreaterThan(0);
      for (const t of p.targets ?? []) expect(t.datasource?.uid).toBe('${datasource}');
    }
    // the provisioning files point Grafana at the dashboard and a Prometheus data source
    const provisioning = readFileSync(
      path.join(OPS_DIR, 'grafana', 'provisioning', 'dashboards', 'feromonios.yml'),
      'utf8',
    );
    expect(provisioning).toMatch(/type: file/);
  });

  it('shows what the platform team watches: publish and consume, lag, DLQ depth by colony, the bridge, the audit API', () => {
    const used = new Set(dashboardQueries(d).flatMap(metricNames));
    for (const m of [
      'feromonios_publish_total',
      'feromonios_consume_total',
      'feromonios_consumer_group_lag',
      'feromonios_consumer_lag',
      'feromonios_dlq_depth',
      'feromonios_bridge_inserted_total',
      'feromonios_bridge_quarantined_total',
      'feromonios_audit_http_request_duration_seconds_bucket',
      'feromonios_audit_denied_total',
    ])
      expect(used).toContain(m);
  });

  it('uses recording rules only when the rule file defines them', () => {
    const recorded = new Set(rules().flatMap((r) => (r.record ? [r.record] : [])));
    const usedRecords = dashboardQueries(d)
      .flatMap(metricNames)
      .filter((m) => m.includes(':'));
    expect(usedRecords.filter((m) => !recorded.has(m))).toEqual([]);
  });
});

describe('metricNames', () => {
  it('reads selected metrics, not label values or strings', () => {
    expect(
      metricNames(
        'sum by (le) (rate(feromonios_audit_http_request_duration_seconds_bucket{route="feromonios_fake"}[5m])) / feromonios:bridge_lag_seconds',
      ),
    ).toEqual(['feromonios_audit_http_request_duration_seconds_bucket', 'feromonios:bridge_lag_seconds']);
  });
});
