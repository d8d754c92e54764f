import { rollback, withTransaction } from '../runtime/transaction';
import type pg from 'pg';
import { colonyTable } from '../catalog/colony-schema';

/**
 * The PostgreSQL inbox: a table in the colony's own schema recording which handler processed
 * which event, written in the same transaction the handler works in. An event is then processed
 * once per colony and handler across restarts, rebalances and duplicate publishes.
 */
export interface OpcoesInbox {
  /** The colony's database. */
  pool: pg.Pool;
  /** The colony's schema, e.g. `d4`. */
  schema: string;
}

/** @deprecated since 0.2: renamed `OpcoesInbox`. */
export type InboxOptions = OpcoesInbox;

export const INBOX_TABLE = 'feromonios_inbox';

export const inboxTable = (schema: string): string => colonyTable(schema, INBOX_TABLE, 'inbox.schema');

/** Creates the colony's schema (if needed) and its inbox table. Idempotent. */
export async function criarTabelaInbox(pool: pg.Pool, schema: string): Promise<void> {
  const table = inboxTable(schema);
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  await pool.query(
    `CREATE TABLE IF NOT EXISTS ${table} (
       event_id      UUID           NOT NULL,
       manipulador   VARCHAR(255)   NOT NULL,
       tipo          VARCHAR(255)   NOT NULL,
       processado_em TIMESTAMPTZ(2) NOT NULL DEFAULT CURRENT_TIMESTAMP,
       CONSTRAINT ${INBOX_TABLE}_pkey PRIMARY KEY (event_id, manipulador)
     )`,
  );
}

/**
 * Runs `work` inside a transaction that first claims `(event_id, manipulador)` in the inbox.
 * Returns `false` without running it when the event was already processed. The claim commits
 * with the handler's own writes, or rolls back with them.
 */
export async function withInbox(
  inbox: OpcoesInbox,
  claim: { event_id: string; manipulador: string; tipo: string },
  work: (trx: pg.PoolClient) => Promise<void>,
): Promise<boolean> {
  // the claim travels with BEGIN (one round trip less per event), its values as escaped literals
  return withTransaction(
    inbox.pool,
    async (client, claimed) => {
      if (claimed?.rowCount !== 1) return rollback(false);
      await work(client);
      return true;
    },
    (client) =>
      `INSERT INTO ${inboxTable(inbox.schema)} (event_id, manipulador, tipo)
       VALUES (${client.escapeLiteral(claim.event_id)}::uuid, ${client.escapeLiteral(claim.manipulador)},
               ${client.escapeLiteral(claim.tipo)}) ON CONFLICT DO NOTHING`,
  );
}
