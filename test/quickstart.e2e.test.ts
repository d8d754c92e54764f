import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { randomNamespace, randomSuffix } from './harness';

describe('README quick start (npm start)', () => {
  it('brings everything up, publishes the demo flow and shows it redacted in the log', () => {
    const root = path.resolve(__dirname, '..');
    const res = spawnSync(
      process.execPath,
      ['--import', 'tsx', path.join(root, 'scripts', 'quickstart.ts'), '--once'],
      {
        cwd: root,
        encoding: 'utf8',
        timeout: 180_000,
        env: {
          ...process.env,
          FEROMONIOS_TOPIC_NAMESPACE: randomNamespace(),
          FEROMONIOS_DEMO_DB: `fero_t_${process.env.FEROMONIOS_TEST_RUN_ID ?? 'x'}_demo${randomSuffix()}`,
          BRIDGE_PORT: String(19900 + Math.floor(Math.random() * 90)),
          AUDIT_API_PORT: String(19800 + Math.floor(Math.random() * 90)),
        },
      },
    );
    expect(res.stderr).not.toMatch(/Error/);
    expect(res.status).toBe(0);
    expect(res.stdout).toContain('demo colony published 3 events');
    expect(res.stdout).toMatch(/#\d+ demanda\.recebida from D-1a: .*"texto_bruto":"hmac-sha256:/);
    expect(res.stdout).not.toContain('"cidadao_id"');
    expect(res.stdout).not.toContain('Rua das Flores');
    expect(res.stdout).toMatch(/#\d+ demanda\.categorizada from D-3/);
    expect(res.stdout).toMatch(/subscriber D-4 handled demanda\.recebida/);
    expect(res.stdout).toMatch(/subscriber D-4 handled demanda\.categorizada/);
    expect(res.stdout).toMatch(
      /audit API on http:\/\/127\.0\.0\.1:\d+: trace of the demo flow answered 200 with 3 events \(#\d+ demanda\.recebida, #\d+ demanda\.normalizada, #\d+ demanda\.categorizada\)/,
    );
    expect(res.stdout).toMatch(
      /curl -H "Authorization: Bearer eyJ[\w.-]+" http:\/\/127\.0\.0\.1:\d+\/api\/events\/trace\//,
    );
  }, 200_000);
});
