/**
 * A process of the soak (bench/soak.ts): `node --expose-gc --import tsx bench/soak-worker.ts
 * <publisher|colony> <json>`. The publisher publishes `rate` events/s with `publicar`; the colony
 * subscribes with an inbox, batched (`eventosPorTransacao: 100`), as a colony taking 1,000/s would. Both report to the parent over IPC every 5 s: events so far and the
 * heap held after a full GC.
 */
import pg from 'pg';
import { EventBus, criarTabelaInbox, defaultOpcoesEventBus, silentLogger } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { randomUUID } from 'node:crypto';

interface WorkerConfig {
  brokers: string[];
  registryUrl: string;
  databaseUrl: string;
  namespace: string;
  rate: number;
  seconds: number;
  /** Partitions of the event topic, and of them handled in parallel by the colony. */
  partitions: number;
}

/** Topic settings of both workers (whichever creates the topic first). */
const topics = (c: WorkerConfig) => ({ partitions: c.partitions, replicationFactor: -1, retentionMs: 3_600_000 });

const report = (count: number): void => {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  process.send?.({ count, heapMb: (m.heapUsed + m.external) / 2 ** 20 });
};

async function publisher(c: WorkerConfig): Promise<void> {
  const bus = new EventBus({
    brokers: c.brokers,
    registryUrl: c.registryUrl,
    namespace: c.namespace,
    logger: silentLogger,
    clientId: 'soak-publisher',
    topics: topics(c),
  });
  let sent = 0;
  let failed = 0;
  const timer = setInterval(() => report(sent), 5000);
  const start = performance.now();
  const total = c.rate * c.seconds;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * c.rate) + 1);
    while (sent < due) {
      sent++;
      bus
        .publicar({
          tipo: 'demanda.recebida',
          origem: 'D-1a',
          payload: {
            ...SAMPLE_PAYLOADS['demanda.recebida'],
            demanda_id: randomUUID(),
            texto_bruto: `Buraco na rua ${sent}`,
            cidadao_id: `u${sent}`,
          },
        })
        .catch(() => void failed++);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  clearInterval(timer);
  report(sent);
  process.send?.({ done: true, failed });
  await bus.encerrar();
}

async function colony(c: WorkerConfig): Promise<void> {
  // one connection per partition handled in parallel (an inbox handler holds one for its transaction), plus one
  const pool = new pg.Pool({ connectionString: c.databaseUrl, max: c.partitions + 1 });
  await criarTabelaInbox(pool, 'soak');
  const bus = new EventBus({
    brokers: c.brokers,
    registryUrl: c.registryUrl,
    namespace: c.namespace,
    logger: silentLogger,
    clientId: 'soak-colony',
    topics: topics(c),
    consumo: { ...defaultOpcoesEventBus.consumo, particoesEmParalelo: c.partitions },
  });
  let handled = 0;
  bus.inscrever(
    'demanda.recebida',
    'SOAK',
    async (_e, ctx) => {
      await ctx.transacao?.query('SELECT 1');
      handled++;
    },
    { inbox: { pool, schema: 'soak', eventosPorTransacao: 100 } },
  );
  await bus.inscricoesProntas();
  process.send?.({ ready: true });
  const timer = setInterval(() => report(handled), 5000);
  process.on('SIGTERM', () => {
    clearInterval(timer);
    void bus
      .encerrar()
      .then(() => pool.end())
      .then(() => process.exit(0));
  });
}

const [role, json] = process.argv.slice(2);
const config = JSON.parse(json ?? '{}') as WorkerConfig;
(role === 'publisher' ? publisher(config) : colony(config)).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
