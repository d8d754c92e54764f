import { rollback, withTransaction } from '../runtime/transaction';
import type pg from 'pg';
import { colonyTable } from '../catalog/colony-schema';
import { FeromoniosError } from '../errors';

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
  /**
   * Most events of one partition handled in one transaction (default 1: a transaction per event).
   * Above 1, the events a fetch brought for this handler — up to this many — are claimed by one
   * statement and handled one after the other in one transaction, committed once; if one of them
   * fails, the whole transaction rolls back and those events are handled again one transaction
   * each, with the usual retries and dead-lettering (docs/consuming.md, "Inbox in batches").
   * The handler then shares `transacao` with the other events of its batch.
   */
  eventosPorTransacao?: number;
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

/** The most `eventosPorTransacao` accepts (a transaction's length, and what a failure redoes, stay bounded). */
export const MAX_EVENTOS_POR_TRANSACAO = 500;

/** `eventosPorTransacao`, checked: `INVALID_FIELD` names the option when it is not 1…500. */
export function eventosPorTransacao(inbox: OpcoesInbox | undefined): number {
  const n = inbox?.eventosPorTransacao ?? 1;
  if (!Number.isInteger(n) || n < 1 || n > MAX_EVENTOS_POR_TRANSACAO)
    throw new FeromoniosError(
      'INVALID_FIELD',
      `inbox.eventosPorTransacao must be an integer from 1 to ${MAX_EVENTOS_POR_TRANSACAO}, got ${JSON.stringify(n)}`,
    );
  return n;
}

/**
 * Runs `work` for each event of `claims` (one handler's, in order) inside one transaction that
 * first claims them all in one statement, sent with BEGIN. `work` runs only for events not
 * processed before (and once for an event listed twice); `jaProcessados` are the others. If
 * `work` throws, nothing of the batch is kept — claims and writes roll back together — and the
 * error is rethrown.
 */
export async function withInboxEmLote(
  inbox: OpcoesInbox,
  claims: ReadonlyArray<{ event_id: string; manipulador: string; tipo: string }>,
  work: (trx: pg.PoolClient, indice: number) => Promise<void>,
): Promise<{ jaProcessados: number[] }> {
  return withTransaction(
    inbox.pool,
    async (client, claimed) => {
      const novos = new Set((claimed?.rows as Array<{ event_id: string }> | undefined)?.map((r) => r.event_id));
      const jaProcessados: number[] = [];
      for (const [i, c] of claims.entries()) {
        // a uuid comes back in PostgreSQL's lower-case form
        if (!novos.delete(c.event_id.toLowerCase())) jaProcessados.push(i);
        else await work(client, i);
      }
      return { jaProcessados };
    },
    (client) =>
      `INSERT INTO ${inboxTable(inbox.schema)} (event_id, manipulador, tipo)
       VALUES ${claims
         .map(
           (c) =>
             `(${client.escapeLiteral(c.event_id)}::uuid, ${client.escapeLiteral(c.manipulador)}, ${client.escapeLiteral(c.tipo)})`,
         )
         .join(', ')}
       ON CONFLICT DO NOTHING RETURNING event_id::text`,
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
