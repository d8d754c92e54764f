import { migrateLatest, rollbackLatest } from './index';

const url = process.env.DATABASE_URL;
if (!url) {
  console.error('DATABASE_URL: required, expected a URL (postgres, postgresql)');
  process.exit(2);
}
const cmd = process.argv[2] ?? 'latest';
(cmd === 'rollback' ? rollbackLatest(url) : migrateLatest(url))
  .then((names) => console.log(names.length ? `${cmd}: ${names.join(', ')}` : `${cmd}: nothing to do`))
  .catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
