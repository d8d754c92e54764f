/**
 * `npm run schemas:sync` registers every version of `schemas/` with the registry;
 * `npm run schemas:check` compares without writing and exits 1 on an incompatible version.
 * Reads SCHEMA_REGISTRY_URL and FEROMONIOS_TOPIC_NAMESPACE.
 */
import { connectionEnv, readEnv } from '../sdk/service';
import { ConfluentSchemaRegistry, SchemaCatalog, TopicNames, checkSchemas, syncSchemas } from '../sdk/wire';

async function main(mode: string | undefined): Promise<number> {
  if (mode !== 'sync' && mode !== 'check') {
    console.error('usage: tsx scripts/schemas.ts sync|check');
    return 2;
  }
  const cfg = readEnv({
    SCHEMA_REGISTRY_URL: connectionEnv.SCHEMA_REGISTRY_URL,
    FEROMONIOS_TOPIC_NAMESPACE: connectionEnv.FEROMONIOS_TOPIC_NAMESPACE,
  });
  const registry = new ConfluentSchemaRegistry({ url: cfg.SCHEMA_REGISTRY_URL });
  const catalog = SchemaCatalog.load();
  const topics = new TopicNames(cfg.FEROMONIOS_TOPIC_NAMESPACE);
  const entries = await (mode === 'sync' ? syncSchemas : checkSchemas)(registry, catalog, topics);
  for (const e of entries) {
    console.log(
      `${e.status.padEnd(18)} ${`${e.tipo}@${e.versao}`.padEnd(32)} ${e.subject}${e.id !== undefined ? ` id=${e.id}` : ''}`,
    );
    for (const m of e.messages) console.log(`    ${m}`);
  }
  const broken = entries.filter((e) => e.status === 'incompatible').length;
  console.log(broken ? `${broken} incompatible version(s)` : `${entries.length} version(s) ok`);
  return broken ? 1 : 0;
}

main(process.argv[2])
  .then((code) => process.exit(code))
  .catch((err: unknown) => {
    console.error(err instanceof Error ? `error: ${err.message}` : err);
    process.exit(1);
  });
