/**
 * One instance of a colony for the fault suite (scenario 5): subscribes with the PostgreSQL
 * inbox, and each handler run writes an effect row in the inbox transaction after a short
 * pause (so a kill -9 lands mid-handler). Prints `ready` once the group has joined.
 */
import pg from 'pg';
import { EventBus, silentLogger } from '../../sdk';

async function main(): Promise<void> {
  const env = (k: string): string => {
    const v = process.env[k];
    if (!v) throw new Error(`${k} is required`);
    return v;
  };
  const pool = new pg.Pool({ connectionString: env('COLONY_DATABASE_URL'), max: 4 });
  pool.on('error', () => undefined);
  const schema = env('COLONY_SCHEMA');
  const bus = new EventBus({
    brokers: env('KAFKA_BROKERS').split(','),
    registryUrl: env('SCHEMA_REGISTRY_URL'),
    namespace: env('FEROMONIOS_TOPIC_NAMESPACE'),
    clientId: `colony-${process.pid}`,
    logger: silentLogger,
    consumo: { particoesEmParalelo: 3, janelaDeduplicacao: 10_000, desdeOInicio: true, sessionTimeoutMs: 6_000 },
  });
  bus.inscrever(
    'demanda.categorizada',
    env('COLONY'),
    async (e, ctx) => {
      await new Promise((r) => setTimeout(r, 5));
      await ctx.transacao?.query(`INSERT INTO ${schema}.efeitos (event_id) VALUES ($1)`, [e.event_id]);
    },
    { inbox: { pool, schema } },
  );
  await bus.inscricoesProntas();
  process.stdout.write('ready\n');
}

void main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
