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
 * something still does after a grace period (a client a test never closed), this names what is
 * open and fails the run instead of letting it hang until CI's time runs out.
 * `FEROMONIOS_DEBUG_HANDLES=1` prints the same list sooner, without failing.
 */
function watchForLeakedHandles(): void {
  const debug = Boolean(process.env.FEROMONIOS_DEBUG_HANDLES);
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
        `[harness] still open after teardown: ${process.getActiveResourcesInfo().join(', ')}\n  ${handles.map(describe).join('\n  ')}\n`,
      );
      if (!debug) {
        process.stderr.write('[harness] jest could not exit by itself: a test leaked the handles above\n');
        process.exit(1);
      }
    },
    debug ? 3000 : 20_000,
  ).unref();
}
