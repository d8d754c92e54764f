import type { Knex } from 'knex';

/**
 * The cold archive of `core.event_log` (issue #20; docs/archive.md; ADR 0018): one row per
 * Parquet file of an archived month — where it is (`destino` + `arquivo`), what it covers
 * (sequence, `timestamp` and `criado_em` ranges, the types and origins in it, for pruning),
 * and how to check it (rows, bytes, SHA-256 of the file and of its rows). The archiver
 * inserts a month's rows in the transaction that detaches and drops its partition, and
 * `restaurar` deletes them in the transaction that brings the partition back, so a month is
 * always in exactly one place. The same facts are in the destination's `manifest.json`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE core.event_log_arquivo (
        mes              DATE           NOT NULL,
        arquivo          TEXT           NOT NULL,
        destino          TEXT           NOT NULL,
        linhas           INTEGER        NOT NULL,
        sequence_min     BIGINT         NOT NULL,
        sequence_max     BIGINT         NOT NULL,
        timestamp_min    TIMESTAMPTZ(2) NOT NULL,
        timestamp_max    TIMESTAMPTZ(2) NOT NULL,
        criado_em_min    TIMESTAMPTZ(2) NOT NULL,
        criado_em_max    TIMESTAMPTZ(2) NOT NULL,
        tipos            TEXT[]         NOT NULL,
        origens          TEXT[]         NOT NULL,
        bytes            BIGINT         NOT NULL,
        sha256           CHAR(64)       NOT NULL,
        conteudo_sha256  CHAR(64)       NOT NULL,
        arquivado_em     TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
        CONSTRAINT event_log_arquivo_pkey PRIMARY KEY (mes, arquivo),
        CONSTRAINT event_log_arquivo_intervalo CHECK (linhas > 0 AND sequence_max >= sequence_min)
    );
    CREATE INDEX event_log_arquivo_sequence_idx ON core.event_log_arquivo (sequence_min, sequence_max);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS core.event_log_arquivo;');
}
