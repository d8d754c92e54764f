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
  if (process.env.FEROMONIOS_DEBUG_HANDLES) {
    setTimeout(() => {
      const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
      const describe = (h: unknown): string => {
        const s = h as {
          constructor?: { name?: string };
          remotePort?: number;
          localPort?: number;
          _idleTimeout?: number;
        };
        return `${s.constructor?.name ?? '?'}${s.remotePort ? ` remote:${s.remotePort}` : ''}${s.localPort ? ` local:${s.localPort}` : ''}`;
      };
      process.stderr.write(
        `[harness] still open after teardown: ${process.getActiveResourcesInfo().join(', ')}\n  ${handles.map(describe).join('\n  ')}\n`,
      );
    }, 3000).unref();
  }
}
