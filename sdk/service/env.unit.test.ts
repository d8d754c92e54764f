import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../errors';
import { env, readEnv } from './env';
import { connectionEnv } from './config';

describe('environment configuration', () => {
  it('uses the documented defaults when variables are unset', () => {
    const cfg = readEnv(connectionEnv, {});
    expect(cfg.KAFKA_BROKERS).toEqual(['127.0.0.1:9092']);
    expect(cfg.FEROMONIOS_TOPIC_NAMESPACE).toBe('feromonios');
  });

  it('names the variable and the expected form when a value is malformed', () => {
    expect(() => readEnv(connectionEnv, { KAFKA_BROKERS: 'localhost' })).toThrow(
      'KAFKA_BROKERS: expected a comma-separated list of host:port, got "localhost"',
    );
    expect(() => readEnv(connectionEnv, { DATABASE_URL: 'mysql://x/y' })).toThrow(
      'DATABASE_URL: expected a URL (postgres, postgresql)',
    );
    expect(() => readEnv(connectionEnv, { LOG_LEVEL: 'loud' })).toThrow(
      'LOG_LEVEL: expected one of debug, info, warn, error',
    );
  });

  it('reports every problem at once, as a typed error', () => {
    const spec = { A: env.int({ min: 1, doc: 'a' }), B: env.secret({ minLength: 32, doc: 'b' }) };
    let caught: unknown;
    try {
      readEnv(spec, { A: '0' });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).code).toBe('CONFIG_INVALID');
    expect((caught as ConfigError).problems).toEqual([
      'A: expected an integer >= 1, got "0"',
      'B: required, expected a secret of at least 32 characters',
    ]);
  });

  it('rejects non-integers and out-of-range numbers', () => {
    const spec = { N: env.int({ min: 1, max: 10, doc: 'n' }) };
    for (const bad of ['1.5', 'abc', '11', '-1'])
      expect(() => readEnv(spec, { N: bad })).toThrow(/^invalid configuration: N:/);
    expect(readEnv(spec, { N: '10' }).N).toBe(10);
  });

  describe('secrets', () => {
    const spec = { KEY: env.secret({ minLength: 8, doc: 'k' }) };
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fero-env-'));
    afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

    it('never quotes a secret back, only its length', () => {
      let message = '';
      try {
        readEnv(spec, { KEY: 'hunter2' });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message).toBe(
        'invalid configuration: KEY: expected a secret of at least 8 characters, got a value of 7 characters',
      );
      expect(message).not.toContain('hunter2');
    });

    it('reads NAME_FILE (one trailing newline dropped), refuses both set and an unreadable file', () => {
      const file = path.join(tmp, 'key');
      fs.writeFileSync(file, 'a-mounted-secret-value\n');
      expect(readEnv(spec, { KEY_FILE: file }).KEY).toBe('a-mounted-secret-value');
      expect(() => readEnv(spec, { KEY: 'x'.repeat(8), KEY_FILE: file })).toThrow(
        'KEY: set either KEY or KEY_FILE, not both',
      );
      expect(() => readEnv(spec, { KEY_FILE: path.join(tmp, 'missing') })).toThrow(
        /KEY_FILE: cannot read ".*missing" \(ENOENT\)/,
      );
      // a file too short is judged like the variable, without quoting it
      fs.writeFileSync(file, 'short');
      expect(() => readEnv(spec, { KEY_FILE: file })).toThrow(
        'KEY: expected a secret of at least 8 characters, got a value of 5 characters',
      );
    });

    it('ignores NAME_FILE for variables that are not secrets', () => {
      const plain = { N: env.int({ default: 3, doc: 'n' }) };
      expect(readEnv(plain, { N_FILE: '/nonexistent' }).N).toBe(3);
    });
  });
});
