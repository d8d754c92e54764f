import { randomUUID } from 'node:crypto';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { createTestDatabase, metricValue as value, waitFor } from '../test/harness';
import { startTestBridge } from '../test/harness/bridge';
import { createTestBus } from '../test/harness/bus';

const categorizada = (event_id = randomUUID()) => ({
  event_id,
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  correlacao_id: randomUUID(),
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});

/**
 * The bridge over the monthly-partitioned log (issue #20, ADR 0017): it keeps the months ahead,
 * and an event logged in an earlier month is still a duplicate when Kafka delivers it again.
 */
describe('the bridge and the monthly partitions of core.event_log', () => {
  it('creates the months ahead at start, once, and drops an event logged in an earlier month as a duplicate', async () => {
    const db = await createTestDatabase();
    const bus = await createTestBus({ pool: db.pool });
    // an event logged 40 days ago, in last month's partition
    await db.pool.query(`SELECT core.criar_particao_event_log((now() - interval '40 days')::date)`);
    const old = randomUUID();
    await db.pool.query(
      `INSERT INTO core.event_log (event_id, tipo, origem, payload, criado_em)
       VALUES ($1, 'demanda.categorizada', 'D-3', '{}', now() - interval '40 days')`,
      [old],
    );
    const months = async () =>
      (
        await db.pool.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM pg_inherits WHERE inhparent = 'core.event_log'::regclass`,
        )
      ).rows[0]?.n;
    const before = Number(await months());

    const { metrics } = await startTestBridge(bus, db, { partitionsAheadMonths: 6, gaugesIntervalMs: 500 });
    expect(await value(metrics.registry, 'feromonios_bridge_event_log_partitions_created_total')).toBe(3); // months 4, 5 and 6 ahead
    expect(Number(await months())).toBe(before + 3);

    await bus.publicar(categorizada(old)); // Kafka delivers an event the log has, from another month
    const fresh = await bus.publicar(categorizada());
    await waitFor(
      async () =>
        (await db.pool.query('SELECT 1 FROM core.event_log WHERE event_id = $1', [fresh.event_id])).rowCount === 1,
      { timeoutMs: 30_000, message: 'the next event in the log' },
    );
    const { rows } = await db.pool.query<{ p: string }>(
      'SELECT tableoid::regclass::text AS p FROM core.event_log WHERE event_id = $1',
      [old],
    );
    expect(rows).toHaveLength(1); // not logged again in this month
    expect(rows[0]?.p).not.toBe('core.event_log_padrao');
    expect(await value(metrics.registry, 'feromonios_bridge_duplicates_total')).toBeGreaterThanOrEqual(1);
    // a row no month covers is caught by DEFAULT and shown by the gauge
    await db.pool.query(
      `INSERT INTO core.event_log (event_id, tipo, origem, payload, criado_em)
       VALUES ($1, 'demanda.categorizada', 'D-3', '{}', '2031-01-15T00:00:00Z')`,
      [randomUUID()],
    );
    await waitFor(async () => (await value(metrics.registry, 'feromonios_bridge_event_log_default_rows')) === 1, {
      message: 'feromonios_bridge_event_log_default_rows counts the row without a month',
    });
  });
});
