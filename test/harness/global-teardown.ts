import pg from 'pg';
import { down } from '../../infra/services';

/** Drops this run's databases and stops only what global-setup started. */
export default async function globalTeardown(): Promise<void> {
  const runId = process.env.FEROMONIOS_TEST_RUN_ID;
  const url = process.env.DATABASE_URL;
  if (runId && url) {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ datname: string }>(
        `SELECT datname FROM pg_database WHERE datname LIKE $1 OR datname LIKE $2`,
        [`fero_tpl_${runId}`, `fero_t_${runId}_%`],
      );
      for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    } finally {
      await admin.end();
    }
    delete process.env.FEROMONIOS_TEST_RUN_ID;
  }
  const started = (process.env.FEROMONIOS_TEST_STARTED ?? '').split(',').filter(Boolean);
  if (started.length > 0 && process.env.FEROMONIOS_KEEP_SERVICES !== '1') await down(started);
  process.env.FEROMONIOS_TEST_STARTED = '';
  watchForLeakedHandles();
}

/**
 * jest runs without `forceExit`: once the run is over, nothing may keep the process alive. If
 * something still does after a grace period, this names every open handle — each socket with
 * the test file and stack that opened it (leak-checking-environment.ts) — then closes the
 * sockets and ends the process with jest's own result instead of hanging until CI's time runs
 * out. A leak is a bug to find from that report; the tests' verdict stands.
 * `FEROMONIOS_STRICT_HANDLES=1` (used by `npm run test:repeat`) fails the run instead;
 * `FEROMONIOS_DEBUG_HANDLES=1` prints the list after 3 s and leaves everything open.
 */
function watchForLeakedHandles(): void {
  const debug = Boolean(process.env.FEROMONIOS_DEBUG_HANDLES);
  const strict = process.env.FEROMONIOS_STRICT_HANDLES === '1';
  setTimeout(
    () => {
      const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
      const describe = (h: unknown): string => {
        const s = h as {
          constructor?: { name?: string };
          remotePort?: number;
          localPort?: number;
          feromoniosOrigin?: string;
        };
        const origin = s.feromoniosOrigin ? `\n    opened by ${s.feromoniosOrigin.replace(/\n/g, '\n    ')}` : '';
        return `${s.constructor?.name ?? '?'}${s.remotePort ? ` remote:${s.remotePort}` : ''}${s.localPort ? ` local:${s.localPort}` : ''}${origin}`;
      };
      process.stderr.write(
        `[harness] LEAK: still open after teardown: ${process.getActiveResourcesInfo().join(', ')}\n  ${handles.map(describe).join('\n  ')}\n`,
      );
      if (debug) return;
      if (strict) {
        process.stderr.write('[harness] jest could not exit by itself: a test leaked the handles above\n');
        process.exit(1);
      }
      process.stderr.write('[harness] closing the leaked sockets and ending the run; the leak is a bug to find\n');
      for (const h of handles) (h as { destroy?: () => void }).destroy?.();
      // kafkajs's timers of those clients cannot be reached from here: end the process with
      // jest's own verdict (jest sets process.exitCode in its 'exit' handler)
      setTimeout(() => process.exit(), 1000).unref();
    },
    debug ? 3000 : 20_000,
  ).unref();
}
