import { randomUUID } from 'node:crypto';
import type { EventoConsultado } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { createTestDatabase, groupLag, metricValue as value, waitFor, type TestDatabase } from '../test/harness';
import { startTestBridge } from '../test/harness/bridge';
import { createTestBus } from '../test/harness/bus';
import type { BridgeMetrics } from './metrics';

/**
 * The metrics seed 003 names (section 10: published, consumed, lag, retry, DLQ depth) as the
 * platform team scrapes them: a colony's own lag per assigned partition, every colony group's
 * lag by committed offsets (the bridge, from outside: it still grows while the colony is stuck),
 * in-place retries, and the DLQ depth per colony and state — with series that go back to 0
 * instead of vanishing.
 */
describe('platform gauges (issue #23)', () => {
  let db: TestDatabase;
  let bus: Awaited<ReturnType<typeof createTestBus>>;
  let metrics: BridgeMetrics;
  beforeAll(async () => {
    db = await createTestDatabase();
    bus = await createTestBus({ pool: db.pool });
    ({ metrics } = await startTestBridge(bus, db, { gaugesIntervalMs: 1000 }));
  }, 60_000);

  it("exports a colony's lag from the colony and from the bridge; the bridge's keeps the truth while a handler is stuck", async () => {
    const colonia = 'L-1';
    const tipo = 'demanda.categorizada';
    const topic = bus.topics.evento(tipo);
    const chave = randomUUID(); // one partition for every event below
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = randomUUID();
    const seen: string[] = [];
    bus.inscrever(
      tipo,
      colonia,
      async (e: EventoConsultado) => {
        seen.push(e.event_id);
        if (e.event_id !== first) await gate;
      },
      { timeoutMs: 60_000 },
    );
    await bus.inscricoesProntas(colonia);
    const ev = () => ({ tipo, origem: 'D-3', chave_particao: chave, payload: { ...SAMPLE_PAYLOADS[tipo] } });
    // one event handled and committed: the group has a committed offset on that partition
    const one = await bus.publicar({ ...ev(), event_id: first });
    const partition = String(one.posicao?.particao);
    await waitFor(async () => (await groupLag(bus.topics.grupo(colonia), topic)) === 0, {
      message: 'the first event committed',
    });
    // six more in one produce request (one fetch): the first of them blocks its handler
    await bus.publicarLote(Array.from({ length: 6 }, ev));
    const series = { colonia, topic, partition };
    await waitFor(async () => (await value(metrics.registry, 'feromonios_consumer_group_lag', series)) === 6, {
      message: 'the bridge reports 6 records behind the committed offset',
    });
    // the colony reports what its fetch held when it started, while the handler is stuck
    await waitFor(async () => (await value(bus.metrics.registry, 'feromonios_consumer_lag', series)) === 6, {
      message: 'the colony reports 6 records not handled yet',
    });
    expect(seen).toHaveLength(2); // the first, and the one stuck
    expect(await value(metrics.registry, 'feromonios_consumer_group_lag', series)).toBe(6);
    release();
    await waitFor(async () => (await value(bus.metrics.registry, 'feromonios_consumer_lag', series)) === 0, {
      message: "the colony's lag back to 0",
    });
    await waitFor(async () => (await value(metrics.registry, 'feromonios_consumer_group_lag', series)) === 0, {
      message: "the bridge's view back to 0 once the colony committed",
    });
    // only colony groups, labelled by colony: the bridge's own groups are not in this gauge
    const { values } = await metrics.consumerGroupLag.get();
    expect(values.every((v) => /^[A-Za-z0-9-]+$/.test(String(v.labels.colonia)))).toBe(true);
    expect(values.some((v) => String(v.labels.colonia).includes('bridge'))).toBe(false);
  });

  it('counts in-place retries and exports the DLQ depth per colony and state, back to 0 when resolved', async () => {
    const colonia = 'L-2';
    const mine = new Set<string>();
    bus.inscrever(
      'demanda.recebida',
      colonia,
      (e: EventoConsultado) => {
        if (mine.has(e.event_id)) throw new Error('dependency down');
      },
      { tentativasExtras: 1, backoffInicialMs: 10 },
    );
    await bus.inscricoesProntas(colonia);
    for (let i = 0; i < 2; i++) {
      const event_id = randomUUID();
      mine.add(event_id);
      await bus.publicar({
        event_id,
        tipo: 'demanda.recebida',
        origem: 'D-1a',
        payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
      });
    }
    const depth = (estado: string) => value(metrics.registry, 'feromonios_dlq_depth', { colonia, estado });
    await waitFor(async () => (await depth('pendente')) === 2, { message: 'two pending DLQ entries exported' });
    expect(await depth('retrying')).toBe(0);
    expect(await depth('failed_permanent')).toBe(0);
    expect(
      await value(bus.metrics.registry, 'feromonios_consume_retries_total', { colonia, tipo: 'demanda.recebida' }),
    ).toBe(2); // one retry per event (tentativasExtras: 1), then the DLQ
    await db.pool.query(`UPDATE core.dead_letter_queue SET status = 'resolved' WHERE colonia = $1`, [colonia]);
    await waitFor(async () => (await depth('pendente')) === 0, {
      message: 'the series stays, at 0, once every entry is resolved',
    });
  });
});
