import type pg from 'pg';
import { colonyTable } from '../catalog/colony-schema';
import { ConfigError } from '../errors';
import type { EventoValidado } from '../publishing/validation';

/**
 * The transactional outbox (seed 003 §6, docs/outbox.md): a table in the colony's own schema
 * where `publicarNaTransacao` writes an event inside the colony's business transaction. The
 * relay (`outbox-relay.ts`) publishes committed rows; a rolled-back transaction leaves nothing.
 */
export const OUTBOX_TABLE = 'feromonios_outbox';
/** LISTEN/NOTIFY channel that wakes the relay on commit (its payload is the schema). */
export const OUTBOX_CHANNEL = 'feromonios_outbox';

export const outboxTable = (schema: string): string => colonyTable(schema, OUTBOX_TABLE, 'outbox.schema');

/** Creates the colony's schema (if needed) and its outbox table with its indexes. Idempotent. */
export async function criarTabelaOutbox(pool: pg.Pool, schema: string): Promise<void> {
  const table = outboxTable(schema);
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  await pool.query(
    `CREATE TABLE IF NOT EXISTS ${table} (
       id               BIGSERIAL      NOT NULL,
       event_id         UUID           NOT NULL,
       tipo             VARCHAR(255)   NOT NULL,
       versao_schema    VARCHAR(20)    NOT NULL,
       timestamp_evento TEXT           NOT NULL,
       origem           VARCHAR(100)   NOT NULL,
       correlacao_id    UUID           NOT NULL,
       causation_id     UUID,
       tenant_id        UUID,
       chave_particao   TEXT,
       payload          JSONB,
       criado_em        TIMESTAMPTZ(3) NOT NULL DEFAULT clock_timestamp(),
       publicado_em     TIMESTAMPTZ(3),
       falhou_em        TIMESTAMPTZ(3),
       tentativas       INTEGER        NOT NULL DEFAULT 0,
       ultimo_erro      TEXT,
       CONSTRAINT ${OUTBOX_TABLE}_pkey PRIMARY KEY (id),
       CONSTRAINT ${OUTBOX_TABLE}_event_id_key UNIQUE (event_id)
     )`,
  );
  // outboxes created before tenant_id (SDK ≤ 0.2) gain the column; a no-op afterwards
  await pool.query(`ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS tenant_id UUID`);
  await pool.query(
    `CREATE INDEX IF NOT EXISTS ${OUTBOX_TABLE}_pendentes_idx ON ${table} (id) WHERE publicado_em IS NULL AND falhou_em IS NULL`,
  );
  await pool.query(
    `CREATE INDEX IF NOT EXISTS ${OUTBOX_TABLE}_publicado_em_idx ON ${table} (publicado_em) WHERE publicado_em IS NOT NULL`,
  );
}

/**
 * A transaction of the colony's database: a `pg` client after `BEGIN` (`pool.connect()`), or a
 * knex transaction (`knex.transaction(async (trx) => …)`).
 */
export type TransacaoColonia =
  | { query(text: string, values?: unknown[]): Promise<unknown> }
  | { raw(sql: string, bindings?: readonly unknown[]): PromiseLike<unknown> };

async function exec(trx: TransacaoColonia, sql: string, values: unknown[]): Promise<void> {
  if ('raw' in trx && typeof trx.raw === 'function') {
    // knex binds `?` positionally; our statements use each `$n` once, in order
    await trx.raw(sql.replace(/\$\d+/g, '?'), values);
    return;
  }
  if ('query' in trx && typeof trx.query === 'function') {
    await trx.query(sql, values);
    return;
  }
  throw new ConfigError('publicarNaTransacao: expected a pg client in a transaction or a knex transaction', ['trx']);
}

/**
 * Writes an already validated event to the outbox inside `trx`, and asks PostgreSQL to notify
 * the relay when (and only if) the transaction commits. The same event_id twice is one row.
 */
export async function escreverNoOutbox(trx: TransacaoColonia, schema: string, v: EventoValidado): Promise<void> {
  await exec(
    trx,
    `INSERT INTO ${outboxTable(schema)}
       (event_id, tipo, versao_schema, timestamp_evento, origem, correlacao_id, causation_id, tenant_id, chave_particao, payload)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb)
     ON CONFLICT (event_id) DO NOTHING`,
    [
      v.event_id,
      v.tipo,
      v.versao_schema,
      v.timestamp,
      v.origem,
      v.correlacao_id,
      v.causation_id,
      v.tenant_id,
      v.chave_particao ?? null,
      v.payloadJson,
    ],
  );
  await exec(trx, `SELECT pg_notify($1, $2)`, [OUTBOX_CHANNEL, schema]);
}
