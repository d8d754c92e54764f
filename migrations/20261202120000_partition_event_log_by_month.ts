import type { Knex } from 'knex';

/**
 * Phase 2 log (seed 000, the volume table; issue #20; docs/adr/0017-monthly-partitions.md):
 * `core.event_log` becomes a table partitioned by month of `criado_em` (when the row was
 * logged), with the seed's indexes on every partition and the global `sequence_number`
 * unchanged (same sequence, same values).
 *
 * A unique index on a partitioned table must contain the partition key, so `event_id` can no
 * longer be unique there. Its uniqueness moves to `core.event_ids` (event_id PRIMARY KEY,
 * sequence_number, criado_em), filled by a statement trigger on every insert into the log,
 * whoever inserts: a second row with a logged `event_id` fails with unique_violation, as
 * before, in any month. The DLQ's foreign key points there; and a partition archived later
 * (dropped from PostgreSQL) keeps its ids, so de-duplication and DLQ references survive it.
 *
 * `core.garantir_particoes_event_log(meses)` creates the months from the current one to
 * `meses` ahead (the bridge calls it at start and every hour); a DEFAULT partition catches a
 * row no month covers, so an insert never fails for want of a partition, and creating a month
 * moves such rows out of it.
 *
 * Runs in one transaction: a running system migrates with the bridge stopped; readers polling
 * the log wait for the swap and then read the partitioned table (same rows, same sequence
 * numbers). `down` reverses it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE core.event_ids (
        event_id         UUID           NOT NULL,
        sequence_number  BIGINT         NOT NULL,
        criado_em        TIMESTAMPTZ(2) NOT NULL,
        CONSTRAINT event_ids_pkey PRIMARY KEY (event_id)
    );
    INSERT INTO core.event_ids (event_id, sequence_number, criado_em)
         SELECT event_id, sequence_number, criado_em FROM core.event_log;

    ALTER TABLE core.dead_letter_queue DROP CONSTRAINT dead_letter_queue_event_id_fkey;
    ALTER TABLE core.dead_letter_queue ADD CONSTRAINT dead_letter_queue_event_id_fkey
          FOREIGN KEY (event_id) REFERENCES core.event_ids(event_id);

    ALTER TABLE core.event_log RENAME TO event_log_antes_da_particao;
    CREATE TABLE core.event_log (LIKE core.event_log_antes_da_particao INCLUDING DEFAULTS)
           PARTITION BY RANGE (criado_em);
    ALTER SEQUENCE core.event_log_sequence_number_seq OWNED BY core.event_log.sequence_number;
    CREATE TABLE core.event_log_padrao PARTITION OF core.event_log DEFAULT;

    ${FUNCTIONS}

    SELECT core.criar_particao_event_log(m::date)
      FROM generate_series(
             date_trunc('month', coalesce((SELECT min(criado_em) FROM core.event_log_antes_da_particao), now()) AT TIME ZONE 'UTC'),
             date_trunc('month', now() AT TIME ZONE 'UTC') + interval '3 months',
             interval '1 month') AS m;

    INSERT INTO core.event_log SELECT * FROM core.event_log_antes_da_particao;
    DROP TABLE core.event_log_antes_da_particao;

    ALTER TABLE core.event_log ADD CONSTRAINT event_log_pkey PRIMARY KEY (sequence_number, criado_em);
    CREATE INDEX event_log_event_id_idx       ON core.event_log (event_id);
    ${SECONDARY_INDEXES}

    CREATE FUNCTION core.registrar_event_ids() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO core.event_ids (event_id, sequence_number, criado_em)
           SELECT event_id, sequence_number, criado_em FROM novos;
      RETURN NULL;
    END $$;
    CREATE TRIGGER event_log_event_ids AFTER INSERT ON core.event_log
           REFERENCING NEW TABLE AS novos FOR EACH STATEMENT EXECUTE FUNCTION core.registrar_event_ids();
  `);
}

/**
 * The log's indexes besides its key and `event_id`'s, under the seed's names (and the later
 * migrations'): the same on the plain and on the partitioned table, so `up` and `down` share them.
 */
const SECONDARY_INDEXES = `
    CREATE INDEX event_log_tipo_idx           ON core.event_log (tipo);
    CREATE INDEX event_log_correlacao_id_idx  ON core.event_log (correlacao_id);
    CREATE INDEX event_log_timestamp_idx      ON core.event_log (timestamp);
    CREATE INDEX event_log_origem_idx         ON core.event_log (origem);
    CREATE INDEX event_log_tipo_timestamp_idx ON core.event_log (tipo, timestamp);
    CREATE INDEX event_log_payload_idx        ON core.event_log USING gin (payload jsonb_path_ops);
    CREATE INDEX event_log_tenant_idx         ON core.event_log (tenant_id, sequence_number) WHERE tenant_id IS NOT NULL;
`;

/**
 * The partition functions. Months are UTC calendar months: `core.event_log_YYYY_MM` holds
 * `[YYYY-MM-01 00:00Z, next month)`.
 */
const FUNCTIONS = `
    CREATE FUNCTION core.criar_particao_event_log(mes date) RETURNS text LANGUAGE plpgsql AS $$
    DECLARE
      inicio timestamptz := (date_trunc('month', mes::timestamp) AT TIME ZONE 'UTC');
      fim    timestamptz := ((date_trunc('month', mes::timestamp) + interval '1 month') AT TIME ZONE 'UTC');
      nome   text := 'event_log_' || to_char(date_trunc('month', mes::timestamp), 'YYYY_MM');
    BEGIN
      -- two bridges starting together: one creates, the other finds it
      PERFORM pg_advisory_xact_lock(hashtext('core.event_log partitions'));
      IF to_regclass('core.' || nome) IS NOT NULL THEN
        RETURN NULL;
      END IF;
      -- rows the DEFAULT partition caught for this month move into it (ATTACH refuses otherwise)
      EXECUTE format('CREATE TABLE core.%I (LIKE core.event_log INCLUDING DEFAULTS)', nome);
      EXECUTE format(
        'WITH movidos AS (DELETE FROM core.event_log_padrao WHERE criado_em >= %L AND criado_em < %L RETURNING *)
         INSERT INTO core.%I SELECT * FROM movidos', inicio, fim, nome);
      EXECUTE format('ALTER TABLE core.event_log ATTACH PARTITION core.%I FOR VALUES FROM (%L) TO (%L)',
                     nome, inicio, fim);
      RETURN nome;
    END $$;

    CREATE FUNCTION core.garantir_particoes_event_log(meses_a_frente integer DEFAULT 3)
           RETURNS SETOF text LANGUAGE sql AS $$
      SELECT p FROM (
        SELECT core.criar_particao_event_log(m::date) AS p
          FROM generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'),
                               date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => meses_a_frente),
                               interval '1 month') AS m
      ) criadas WHERE p IS NOT NULL
    $$;
`;

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TRIGGER IF EXISTS event_log_event_ids ON core.event_log;
    DROP FUNCTION IF EXISTS core.registrar_event_ids();
    DROP FUNCTION IF EXISTS core.garantir_particoes_event_log(integer);
    DROP FUNCTION IF EXISTS core.criar_particao_event_log(date);

    ALTER TABLE core.event_log RENAME TO event_log_particionado;
    CREATE TABLE core.event_log (LIKE core.event_log_particionado INCLUDING DEFAULTS);
    ALTER SEQUENCE core.event_log_sequence_number_seq OWNED BY core.event_log.sequence_number;
    INSERT INTO core.event_log SELECT * FROM core.event_log_particionado ORDER BY sequence_number;
    DROP TABLE core.event_log_particionado;

    ALTER TABLE core.event_log ADD CONSTRAINT event_log_pkey PRIMARY KEY (sequence_number);
    CREATE UNIQUE INDEX event_log_event_id_key ON core.event_log (event_id);
    ${SECONDARY_INDEXES}

    ALTER TABLE core.dead_letter_queue DROP CONSTRAINT dead_letter_queue_event_id_fkey;
    ALTER TABLE core.dead_letter_queue ADD CONSTRAINT dead_letter_queue_event_id_fkey
          FOREIGN KEY (event_id) REFERENCES core.event_log(event_id);
    DROP TABLE core.event_ids;
  `);
}
