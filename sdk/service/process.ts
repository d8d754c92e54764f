import { ConfigError } from '../errors';
import type { Logger } from '../runtime/logger';

/**
 * The shared lifecycle of Feromônios processes (bridge, audit API, outbox relay): a bad
 * configuration exits 2 with the message naming the variables; any other failure at start exits 1
 * with one structured JSON line.
 */
export function runMain(component: string, main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    if (err instanceof ConfigError) {
      console.error(`${component}: ${err.message}`);
      process.exit(2);
    }
    console.error(
      JSON.stringify({
        level: 'error',
        component,
        msg: 'fatal',
        error: (err as Error).message,
        stack: (err as Error).stack,
      }),
    );
    process.exit(1);
  });
}

/** On the first SIGTERM or SIGINT: log, run `stop`, exit 0 (exit 1 if `stop` fails). */
export function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    stop().then(
      () => process.exit(0),
      (err: unknown) => {
        logger.error('shutdown failed', { error: (err as Error).message });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
