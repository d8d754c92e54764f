import type { Knex } from 'knex';

/** Seed section 2: the `core` schema, `event_log`, `dead_letter_queue`, their indexes and FK. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE SCHEMA IF NOT EXISTS core;

    CREATE TABLE core.event_log (
        sequence_number  BIGSERIAL      NOT NULL,
        event_id         UUID           NOT NULL,
        tipo             VARCHAR(255)   NOT NULL,
        versao_schema    VARCHAR(20)    NOT NULL DEFAULT '1.0.0',
        timestamp        TIMESTAMPTZ(2) NOT NULL DEFAULT CURRENT_TIMESTAMP,
        origem           VARCHAR(100)   NOT NULL,
        correlacao_id    UUID,
        payload          JSONB          NOT NULL,
        criado_em        TIMESTAMPTZ(2) NOT NULL DEFAULT CURRENT_TIMESTAMP,
        CONSTRAINT event_log_pkey PRIMARY KEY (sequence_number)
    );

    CREATE UNIQUE INDEX event_log_event_id_key ON core.event_log (event_id);
    CREATE INDEX event_log_tipo_idx           ON core.event_log (tipo);
    CREATE INDEX event_log_correlacao_id_idx  ON core.event_log (correlacao_id);
    CREATE INDEX event_log_timestamp_idx      ON core.event_log (timestamp);
    CREATE INDEX event_log_origem_idx         ON core.event_log (origem);
    CREATE INDEX event_log_tipo_timestamp_idx ON core.event_log (tipo, timestamp);

    CREATE TABLE core.dead_letter_queue (
        id               BIGSERIAL      NOT NULL,
        event_id         UUID           NOT NULL,
        sequence_number  BIGINT         NOT NULL,
        colonia          VARCHAR(100)   NOT NULL,
        handler_nome     VARCHAR(255),
        mensagem_erro    TEXT           NOT NULL,
        pilha_erro       TEXT,
        tentativas       INTEGER        NOT NULL DEFAULT 1,
        ultima_tentativa TIMESTAMPTZ(2) NOT NULL DEFAULT CURRENT_TIMESTAMP,
        status           VARCHAR(20)    NOT NULL DEFAULT 'pendente',
        criado_em        TIMESTAMPTZ(2) NOT NULL DEFAULT CURRENT_TIMESTAMP,
        resolvido_em     TIMESTAMPTZ(2),
        CONSTRAINT dead_letter_queue_pkey PRIMARY KEY (id),
        CONSTRAINT dead_letter_queue_event_id_fkey
            FOREIGN KEY (event_id) REFERENCES core.event_log(event_id)
    );

    CREATE INDEX dead_letter_queue_status_idx         ON core.dead_letter_queue (status);
    CREATE INDEX dead_letter_queue_colonia_idx        ON core.dead_letter_queue (colonia);
    CREATE INDEX dead_letter_queue_status_colonia_idx ON core.dead_letter_queue (status, colonia);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS core.dead_letter_queue; DROP TABLE IF EXISTS core.event_log;');
}
