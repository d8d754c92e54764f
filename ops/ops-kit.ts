import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

/**
 * The operations kit as data (docs/operations.md): the Prometheus rule file and the Grafana
 * dashboard, read the way Prometheus and Grafana read them, so tests can check them against
 * promtool and against what the running services export.
 */
export const OPS_DIR = __dirname;
export const RULES_FILE = path.join(OPS_DIR, 'prometheus', 'feromonios.rules.yml');
export const RULES_TEST_FILE = path.join(OPS_DIR, 'prometheus', 'feromonios.rules.test.yml');
export const DASHBOARD_FILE = path.join(OPS_DIR, 'grafana', 'feromonios-platform.json');

export interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export function rules(): Rule[] {
  const doc = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: Array<{ name: string; rules: Rule[] }> };
  return doc.groups.flatMap((g) => g.rules);
}

/** The alert names the promtool unit tests evaluate (`alert_rule_test[].alertname`). */
export function testedAlerts(): Set<string> {
  const doc = parse(readFileSync(RULES_TEST_FILE, 'utf8')) as {
    tests: Array<{ alert_rule_test?: Array<{ alertname: string }> }>;
  };
  return new Set(doc.tests.flatMap((t) => (t.alert_rule_test ?? []).map((a) => a.alertname)));
}

export interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Array<{ refId: string; expr: string; datasource?: { type: string; uid: string } }>;
}

export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query?: unknown; definition?: string }> };
}

export function dashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;
}

/** Every PromQL expression of the dashboard: panel targets and variable queries. */
export function dashboardQueries(d: Dashboard = dashboard()): string[] {
  return [
    ...d.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)),
    ...d.templating.list.flatMap((v) => (typeof v.definition === 'string' ? [v.definition] : [])),
  ];
}

/**
 * The metric names a PromQL expression selects: `feromonios_*` series (histogram suffixes kept:
 * `_bucket` is a series of its own) and recording rules (`feromonios:*`). Label values and
 * strings are left out, so `{result="feromonios_x"}` names no metric.
 */
export function metricNames(expr: string): string[] {
  const code = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  return [...new Set(code.match(/\bferomonios[_:][a-z0-9_:]+/g) ?? [])];
}
