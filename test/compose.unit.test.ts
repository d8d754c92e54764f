import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { auditEnv } from '../audit-api/config';
import { bridgeEnv } from '../bridge/config';
import { readEnv } from '../sdk/service';
import { renderEnvFile } from '../scripts/env-example';

interface ComposeService {
  environment?: Record<string, string>;
  command?: string[];
}

const compose = parse(fs.readFileSync(path.join(__dirname, '..', 'docker-compose.redpanda.yml'), 'utf8'), {
  merge: true,
}) as { services: Record<string, ComposeService> };

describe('docker-compose.redpanda.yml', () => {
  it.each([
    ['bridge', bridgeEnv],
    ['audit-api', auditEnv],
  ] as const)('sets for %s only variables its code reads, and they validate', (name, spec) => {
    const env = compose.services[name]?.environment ?? {};
    const unknown = Object.keys(env).filter((k) => !(k in spec));
    expect(unknown).toEqual([]);
    expect(() => readEnv(spec, env)).not.toThrow();
  });

  it.each(['bridge', 'audit-api'])('starts %s from an entry file that exists', (name) => {
    const entry = compose.services[name]?.command?.find((a) => a.endsWith('.ts'));
    expect(entry).toBe(`${name}/main.ts`);
    expect(fs.existsSync(path.join(__dirname, '..', entry!))).toBe(true);
  });
});

describe('.env.example', () => {
  it('lists every variable the services read, as the specs render it', () => {
    expect(fs.readFileSync(path.join(__dirname, '..', '.env.example'), 'utf8')).toBe(renderEnvFile());
  });
});
