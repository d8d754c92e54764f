import { logLevel, type logCreator } from 'kafkajs';
import type { Logger } from './logger';

/**
 * kafkajs warnings that describe a choice this SDK made on purpose; they are logged at debug,
 * not warn, so an operator's warn stream only holds what needs attention (docs/publishing.md,
 * "Registry and broker outages").
 */
export const EXPECTED_KAFKAJS_WARNINGS: ReadonlyMap<string, string> = new Map([
  [
    // kafkajs warns whenever an idempotent producer has a finite retry count. Ours is finite on
    // purpose: kafkajs gives up within seconds and the publisher retries the same batch under its
    // own deadline (publishTimeoutMs), so a call never hangs on a send kafkajs would retry for
    // ever. A batch sent twice that way is dropped downstream by event_id, like any redelivery.
    'Limiting retries for the idempotent producer may invalidate EoS guarantees',
    'finite retries are deliberate: the publisher retries under publishTimeoutMs; duplicates are dropped by event_id',
  ],
]);

/**
 * Routes kafkajs's own logs into a structured logger (`source: "kafkajs"`), level for level,
 * except the expected warnings above (debug, with the reason). The one kafkajs log bridge: the
 * EventBus and the bridge both use it.
 */
export function kafkaLogs(logger: Logger): logCreator {
  return () =>
    ({ level, log }) => {
      const { message, ...rest } = log;
      const fields = { ...rest, source: 'kafkajs' };
      const expected = level === logLevel.WARN ? EXPECTED_KAFKAJS_WARNINGS.get(message) : undefined;
      if (expected) logger.debug(message, { ...fields, expected });
      else if (level <= logLevel.ERROR) logger.error(message, fields);
      else if (level === logLevel.WARN) logger.warn(message, fields);
      else if (level === logLevel.INFO) logger.info(message, fields);
      else logger.debug(message, fields);
    };
}
