import type { Knex } from 'knex';

/**
 * Causal order (docs/ordering.md, ADR 0009): the bridge stages decoded, redacted events in
 * `core.event_staging` and the sequencer moves them into `core.event_log` in causal and
 * publish order (the bridge's committed offsets say how far each partition is staged).
 * Column types are event_log's: whatever is staged can always be moved.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE core.event_staging (
        event_id         UUID           NOT NULL,
        tipo             VARCHAR(255)   NOT NULL,
        versao_schema    VARCHAR(20)    NOT NULL,
        timestamp        TIMESTAMPTZ(2) NOT NULL,
        origem           VARCHAR(100)   NOT NULL,
        correlacao_id    UUID,
        causation_id     UUID,
        payload          JSONB          NOT NULL,
        kafka_topic      VARCHAR(255)   NOT NULL,
        kafka_partition  INTEGER        NOT NULL,
        kafka_offset     BIGINT         NOT NULL,
        publicado_em     TIMESTAMPTZ(3) NOT NULL,
        ordem_sessao     UUID,
        ordem_contador   BIGINT,
        recebido_em      TIMESTAMPTZ    NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT event_staging_pkey PRIMARY KEY (event_id)
    );

  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS core.event_staging;');
}
