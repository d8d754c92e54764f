import { logLevel, type logCreator } from 'kafkajs';
import type { Logger } from './logger';

/**
 * Routes kafkajs's own logs into a structured logger (`source: "kafkajs"`), level for level.
 * The one kafkajs log bridge: the EventBus and the bridge both use it.
 */
export function kafkaLogs(logger: Logger): logCreator {
  return () =>
    ({ level, log }) => {
      const { message, ...rest } = log;
      const fields = { ...rest, source: 'kafkajs' };
      if (level <= logLevel.ERROR) logger.error(message, fields);
      else if (level === logLevel.WARN) logger.warn(message, fields);
      else if (level === logLevel.INFO) logger.info(message, fields);
      else logger.debug(message, fields);
    };
}
