import { logLevel } from 'kafkajs';
import { kafkaLogs } from './kafka-logs';
import type { Logger } from './logger';

function capture(): { logger: Logger; lines: Array<[string, string, Record<string, unknown>]> } {
  const lines: Array<[string, string, Record<string, unknown>]> = [];
  const at = (lvl: string) => (msg: string, fields?: Record<string, unknown>) =>
    void lines.push([lvl, msg, fields ?? {}]);
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

describe('kafkaLogs', () => {
  const entry = (level: logLevel, message: string) => ({
    namespace: 'Producer',
    level,
    label: 'WARN',
    log: { timestamp: 'now', logger: 'kafkajs', message, broker: 'b:9092' },
  });

  it('maps kafkajs levels to the logger, tagged source=kafkajs', () => {
    const { logger, lines } = capture();
    const log = kafkaLogs(logger)(logLevel.DEBUG);
    log(entry(logLevel.ERROR, 'e'));
    log(entry(logLevel.WARN, 'w'));
    log(entry(logLevel.INFO, 'i'));
    log(entry(logLevel.DEBUG, 'd'));
    expect(lines.map(([lvl, msg]) => `${lvl}:${msg}`)).toEqual(['error:e', 'warn:w', 'info:i', 'debug:d']);
    expect(lines[0]?.[2]).toMatchObject({ source: 'kafkajs', broker: 'b:9092' });
  });

  it("demotes the idempotent producer's retry warning to debug, with the reason, and nothing else", () => {
    const { logger, lines } = capture();
    const log = kafkaLogs(logger)(logLevel.DEBUG);
    log(entry(logLevel.WARN, 'Limiting retries for the idempotent producer may invalidate EoS guarantees'));
    log(entry(logLevel.WARN, 'Limiting retries for something else'));
    expect(lines[0]?.[0]).toBe('debug');
    expect(lines[0]?.[2].expected).toMatch(/publishTimeoutMs/);
    expect(lines[1]?.[0]).toBe('warn');
  });
});
