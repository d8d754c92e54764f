/**
 * `npm start`: the main job on a fresh machine. Brings the services up, prepares the
 * database, and runs every Feromônios component that exists so far, then says where to look.
 */
import pg from 'pg';
import { migrateLatest } from '../migrations';
import { up } from '../infra/services';

const log = (msg: string): void => console.log(`[start] ${msg}`);

async function ensureDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

async function main(): Promise<void> {
  log('starting Kafka, the schema registry and PostgreSQL (first run downloads the jars)…');
  const { endpoints, started } = await up();
  log(`services ready (${started.length ? `started ${started.join(', ')}` : 'already running'})`);
  const databaseUrl = await ensureDatabase(endpoints.DATABASE_URL, 'feromonios');
  const applied = await migrateLatest(databaseUrl);
  log(`database ${databaseUrl}: ${applied.length ? `applied ${applied.join(', ')}` : 'schema up to date'}`);
  log('coming next (open issues): schema sync, the bridge, the demo colony, the audit API.');
  for (const [k, v] of Object.entries({ ...endpoints, DATABASE_URL: databaseUrl })) log(`${k}=${v}`);
  log('stop the services with `npm run infra:down`.');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
