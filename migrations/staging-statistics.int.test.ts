import { migrateLatest } from './index';
import { emptyDatabase, laterThan, query, rollbackOrder, rollbackThrough } from './testing';

const MIGRATION = '20261203160000_slim_event_staging_statistics';

/** Staged rows with every column filled, then an ANALYZE like the sequencer's upkeep. */
const stageAndAnalyze = async (url: string) => {
  await query(
    url,
    `TRUNCATE core.event_staging;
     INSERT INTO core.event_staging (event_id, tipo, versao_schema, timestamp, origem, correlacao_id, causation_id,
                                     tenant_id, payload, kafka_topic, kafka_partition, kafka_offset, publicado_em,
                                     ordem_sessao, ordem_contador)
     SELECT gen_random_uuid(), 'demanda.recebida', '1.0.0', now(), 'D-1a', gen_random_uuid(), gen_random_uuid(),
            gen_random_uuid(), jsonb_build_object('demanda_id', gen_random_uuid(), 'n', g), 'ns.evento.demanda.recebida',
            g % 3, g, now() - g * interval '1 millisecond', gen_random_uuid(), g
       FROM generate_series(1, 2000) g`,
  );
  await query(url, 'VACUUM (ANALYZE) core.event_staging');
};

/** The columns of staging PostgreSQL holds statistics on, and their histogram's size. */
const statistics = (url: string) =>
  query<{ attname: string; buckets: number | null }>(
    url,
    `SELECT attname, array_length(histogram_bounds::text::text[], 1) AS buckets FROM pg_stats
      WHERE schemaname = 'core' AND tablename = 'event_staging' ORDER BY attname`,
  );

describe('statistics of core.event_staging (the sequencer upkeep’s ANALYZE)', () => {
  it('are gathered only on the columns the sequencer’s queries plan with, coarse; down gathers them all again', async () => {
    const url = await emptyDatabase();
    await migrateLatest(url);
    await stageAndAnalyze(url);
    const slim = await statistics(url);
    expect(slim.map((s) => s.attname)).toEqual([
      'event_id',
      'kafka_offset',
      'kafka_partition',
      'kafka_topic',
      'publicado_em',
    ]);
    // 10 buckets at most (11 bounds), where the default target gives up to 100
    expect(slim.every((s) => s.buckets === null || s.buckets <= 11)).toBe(true);

    expect(await rollbackThrough(url, MIGRATION)).toEqual(rollbackOrder(MIGRATION));
    await stageAndAnalyze(url);
    const all = await statistics(url);
    expect(all.map((s) => s.attname)).toEqual(expect.arrayContaining(['payload', 'origem', 'recebido_em', 'event_id']));
    expect(all).toHaveLength(16);
    expect(Math.max(...all.map((s) => s.buckets ?? 0))).toBeGreaterThan(11);
    expect(await migrateLatest(url)).toEqual([MIGRATION, ...laterThan(MIGRATION)]);
  });
});
