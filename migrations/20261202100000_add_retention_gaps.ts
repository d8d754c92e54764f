import type { Knex } from 'knex';

/**
 * Retention gaps the bridge detected (docs/reliability.md, "Retention gaps"): records of an
 * event or DLQ topic that retention deleted before the bridge read them, so they are in neither
 * Kafka nor `core.event_log`. One row per gap — `[desde, ate)` of one partition, `ate`
 * exclusive — found once per (group, partition, start offset): a bridge that restarts before
 * moving past it records it once. The audit API lists them (`GET /api/events/lacunas`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE core.lacunas_retencao (
        id             BIGSERIAL      NOT NULL,
        grupo          VARCHAR(255)   NOT NULL,
        topico         VARCHAR(255)   NOT NULL,
        particao       INTEGER        NOT NULL,
        desde          BIGINT         NOT NULL,
        ate            BIGINT         NOT NULL,
        inicio_do_log  BIGINT         NOT NULL,
        registros      BIGINT         NOT NULL,
        detectada_em   TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
        CONSTRAINT lacunas_retencao_pkey PRIMARY KEY (id),
        CONSTRAINT lacunas_retencao_unica UNIQUE (grupo, topico, particao, desde),
        CONSTRAINT lacunas_retencao_intervalo CHECK (ate > desde AND registros = ate - desde)
    );
    CREATE INDEX lacunas_retencao_detectada_em_idx ON core.lacunas_retencao (detectada_em DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS core.lacunas_retencao;');
}
