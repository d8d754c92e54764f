import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');

/** Functions that stop, restart or kill a service every test of a run shares. */
const DISRUPTIVE = ['stopKafka', 'stopRegistry', 'stopLocalPostgres', 'killKafkaNode', 'resetKafka', 'down'];

function testFiles(dir: string, out: string[] = []): string[] {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) testFiles(p, out);
    else if (/\.test\.ts$/.test(entry.name)) out.push(path.relative(ROOT, p));
  }
  return out;
}

/** Names a file imports from the project's infra scripts (`infra/…`). */
function infraImports(source: string): string[] {
  const names: string[] = [];
  for (const m of source.matchAll(/import\s*\{([^}]*)\}\s*from\s*'[./]*\/?(?:\.\.\/)*infra\/[^']*'/g))
    names.push(
      ...(m[1] ?? '')
        .split(',')
        .map((n) => n.trim().split(/\s+as\s+/)[0] ?? '')
        .filter(Boolean),
    );
  return names;
}

describe('test tiers (docs/testing.md)', () => {
  const files = testFiles(ROOT);

  it('finds the test files', () => {
    expect(files.length).toBeGreaterThan(20);
    expect(files).toContain('bridge/bridge-outages.outage.test.ts');
  });

  it('only the outage and fault tiers stop, restart or kill a shared service', () => {
    const offenders = files
      .filter((f) => !/\.(outage|faults)\.test\.ts$/.test(f) && f !== path.relative(ROOT, __filename))
      .flatMap((f) => {
        const used = infraImports(fs.readFileSync(path.join(ROOT, f), 'utf8')).filter((n) => DISRUPTIVE.includes(n));
        return used.length > 0 ? [`${f} imports ${used.join(', ')}`] : [];
      });
    expect(offenders).toEqual([]);
  });

  it('the scan sees a disruptive import when there is one', () => {
    expect(infraImports(`import { ensurePostgres, stopLocalPostgres } from '../infra/postgres';`)).toEqual([
      'ensurePostgres',
      'stopLocalPostgres',
    ]);
    expect(infraImports(`import { startKafka as s, stopKafka } from '../../infra/kafka';`)).toEqual([
      'startKafka',
      'stopKafka',
    ]);
  });

  it('npm test runs the outage tier in band, after the parallel tiers', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts['test:outage']).toMatch(/--selectProjects outage --runInBand/);
    expect(pkg.scripts.test).toMatch(
      /--selectProjects unit int e2e --coverage && npm run test:outage && npm run test:faults/,
    );
  });

  it('npm test enforces a coverage floor (docs/testing.md, "Coverage")', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const config = require(path.join(ROOT, 'jest.config.js')) as {
      coverageThreshold?: { global?: Record<string, number> };
    };
    const floor = config.coverageThreshold?.global ?? {};
    for (const key of ['lines', 'statements', 'functions', 'branches']) expect(floor[key]).toBeGreaterThanOrEqual(80);
  });
});
