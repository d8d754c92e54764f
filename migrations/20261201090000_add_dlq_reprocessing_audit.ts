import type { Knex } from 'knex';

/**
 * Seed 003 section 8: reprocessing is audited. One row per request to reprocess a colony's
 * DLQ — who asked (the token subject, an opaque operator id), when, for which colony, which
 * event_ids were sent back, and what came of the request. Refused requests (throttled) are
 * recorded too. Each event's own outcome stays in `core.dead_letter_queue`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE core.dlq_reprocessamento (
        id              UUID           NOT NULL,
        solicitante     VARCHAR(255)   NOT NULL,
        solicitado_em   TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
        colonia         VARCHAR(100)   NOT NULL,
        event_ids       UUID[]         NOT NULL DEFAULT '{}',
        resultado       VARCHAR(20)    NOT NULL,
        reprocessados   INTEGER        NOT NULL DEFAULT 0,
        originais       INTEGER        NOT NULL DEFAULT 0,
        redigidos       INTEGER        NOT NULL DEFAULT 0,
        detalhe         TEXT,
        concluido_em    TIMESTAMPTZ(3),
        CONSTRAINT dlq_reprocessamento_pkey PRIMARY KEY (id),
        CONSTRAINT dlq_reprocessamento_resultado_check
          CHECK (resultado IN ('em_andamento', 'concluido', 'falhou', 'recusado'))
    );
    CREATE INDEX dlq_reprocessamento_colonia_idx ON core.dlq_reprocessamento (colonia, solicitado_em DESC);
    CREATE INDEX dlq_reprocessamento_solicitado_em_idx ON core.dlq_reprocessamento (solicitado_em DESC);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS core.dlq_reprocessamento');
}
