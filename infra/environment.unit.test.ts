import { chooseServices } from './environment';
import { parseJavaMajor } from './toolchain';

describe('choosing where the services come from', () => {
  it('starts local services when nothing is set and no Docker engine answers', () => {
    expect(chooseServices({}, false)).toEqual({ kafka: 'local', registry: 'local', postgres: 'local' });
  });

  it('uses Testcontainers when nothing is set and Docker answers', () => {
    expect(chooseServices({}, true)).toEqual({
      kafka: 'testcontainers',
      registry: 'testcontainers',
      postgres: 'testcontainers',
    });
  });

  it('starts nothing when every variable is set, with or without Docker', () => {
    const env = { KAFKA_BROKERS: 'b:9092', SCHEMA_REGISTRY_URL: 'http://r:8081', DATABASE_URL: 'postgres://p/db' };
    for (const docker of [true, false]) {
      expect(chooseServices(env, docker)).toEqual({ kafka: 'external', registry: 'external', postgres: 'external' });
    }
  });

  it('starts the missing ones locally when only some are set (never mixes in containers)', () => {
    expect(chooseServices({ DATABASE_URL: 'postgres://p/db' }, true)).toEqual({
      kafka: 'local',
      registry: 'local',
      postgres: 'external',
    });
  });

  it('treats blank variables as unset and lets FEROMONIOS_USE_TESTCONTAINERS=0 opt out', () => {
    expect(chooseServices({ KAFKA_BROKERS: '  ' }, true).kafka).toBe('testcontainers');
    expect(chooseServices({ FEROMONIOS_USE_TESTCONTAINERS: '0' }, true).kafka).toBe('local');
  });
});

describe('reading java -version', () => {
  it('parses modern and legacy version strings', () => {
    expect(parseJavaMajor('openjdk version "17.0.15" 2025-04-15')).toBe(17);
    expect(parseJavaMajor('openjdk version "25" 2025-09-16')).toBe(25);
    expect(parseJavaMajor('java version "1.8.0_402"')).toBe(8);
    expect(parseJavaMajor('command not found')).toBeNull();
  });
});
