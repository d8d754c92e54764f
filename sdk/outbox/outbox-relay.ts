import { rollback, withTransaction, type Rollback } from '../runtime/transaction';
import { backoffAfter } from '../runtime/retry';
import { scrubText } from '../wire/error-text';
import { storableText } from '../wire/storable';
import type pg from 'pg';
import type { SchemaCatalog } from '../catalog/catalog';
import type { EventoConsultado, PublicarEventoDto } from '../contract';
import { FeromoniosError, isRetriable } from '../errors';
import type { Logger } from '../runtime/logger';
import type { SdkMetrics } from '../runtime/metrics';
import { OUTBOX_CHANNEL, OUTBOX_TABLE, outboxTable } from './outbox';
import { validarEvento, type EventoValidado } from '../publishing/validation';

/** Options of the outbox relay. Every duration is in milliseconds. */
export interface OpcoesRelayOutbox {
  /** The colony's database (where the outbox table is). */
  pool: pg.Pool;
  /** The colony's schema holding `feromonios_outbox`. */
  schema: string;
  /** Polling interval: the longest a committed row waits when no notification arrives, in milliseconds. */
  intervaloMs?: number;
  /** Rows published per batch. */
  lote?: number;
  /** How long published rows are kept (payload already cleared) before deletion, in milliseconds. */
  retencaoMs?: number;
  /** Wake up on `NOTIFY` at commit (polling stays the source of truth). */
  escutar?: boolean;
}

export const defaultOpcoesRelayOutbox = {
  intervaloMs: 250,
  lote: 500,
  retencaoMs: 24 * 3_600_000,
  escutar: true,
} satisfies Partial<OpcoesRelayOutbox>;

export interface RelayDeps {
  catalog: SchemaCatalog;
  /**
   * The publisher's `publicarIsolandoRecusas`: the batch in one request, or each event alone if
   * the broker refuses it for good; per event, the published event or the refusal.
   */
  publicarIsolandoRecusas(validados: EventoValidado[]): Promise<Array<EventoConsultado | Error>>;
  logger: Logger;
  metrics: SdkMetrics;
}

interface Row {
  id: string;
  event_id: string;
  tipo: string;
  versao_schema: string;
  timestamp_evento: string;
  origem: string;
  correlacao_id: string;
  causation_id: string | null;
  tenant_id: string | null;
  chave_particao: string | null;
  payload: Record<string, unknown> | null;
}

const LOCK_NAMESPACE = 0x6f757462; // 'outb'
const CLEANUP_EVERY_MS = 60_000;
const GAUGES_EVERY_MS = 1_000;

/**
 * Publishes the outbox's committed rows (docs/outbox.md). One relay at a time works a schema:
 * each batch runs in a transaction holding an advisory lock, so with several relay instances
 * the others stand by — no row is published twice in normal operation, and rows leave in id
 * order (within one key: the order the colony committed them). Rows are marked published (and
 * their payload cleared) in the same transaction, after the broker acknowledged them: a crash
 * in between publishes them again on restart (at-least-once; the bridge and inbox consumers
 * drop repeats by event_id). A row that can never be published (its type was deprecated since)
 * is set aside with `falhou_em` and the reason, and never blocks the rows after it.
 */
export class OutboxRelay {
  private readonly o: Required<OpcoesRelayOutbox>;
  private readonly table: string;
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private listener: pg.PoolClient | undefined;
  private lastCleanup = 0;
  private lastGauges = 0;
  private notified = false;

  constructor(
    opcoes: OpcoesRelayOutbox,
    private readonly d: RelayDeps,
  ) {
    this.o = { ...defaultOpcoesRelayOutbox, ...opcoes };
    this.table = outboxTable(this.o.schema);
  }

  /** Starts polling (and listening). Idempotent. */
  async iniciar(): Promise<void> {
    if (this.running) return;
    this.running = true;
    if (this.o.escutar)
      await this.listen().catch((err: Error) =>
        this.d.logger.warn('outbox LISTEN failed; polling only', { error: err.message }),
      );
    this.loop = this.run();
  }

  /** Stops after the batch in hand. */
  async parar(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loop;
    const l = this.listener;
    this.listener = undefined;
    if (l) {
      // destroyed, not pooled: a pooled client would keep its LISTEN, and the error handler set in
      // listen() would release it a second time when that connection later dies
      l.removeAllListeners('notification');
      l.removeAllListeners('error');
      l.on('error', () => undefined);
      l.release(true);
    }
  }

  /**
   * One pass: publishes up to `lote` pending rows. Returns how many were published (0 when
   * another relay holds the schema). Exposed for tests and for hosts that drive their own loop.
   */
  async executarCiclo(): Promise<number> {
    // a retriable publish failure rolls the pass back, then counts the attempt on the rows
    let retriable: { err: unknown; ids: string[] } | undefined;
    let setAside = 0;
    const count = await withTransaction(this.o.pool, async (client) => {
      const lock = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS ok', [
        LOCK_NAMESPACE,
        this.o.schema,
      ]);
      if (!lock.rows[0]?.ok) return rollback(0);
      const { rows } = await client.query<Row>(
        `SELECT id::text, event_id::text, tipo, versao_schema, timestamp_evento, origem, correlacao_id::text,
                causation_id::text, tenant_id::text, chave_particao, payload
           FROM ${this.table}
          WHERE publicado_em IS NULL AND falhou_em IS NULL
          ORDER BY ${OUTBOX_TABLE}.id LIMIT $1`, // the table's bigint, not the text alias
        [this.o.lote],
      );
      if (rows.length === 0) return 0;
      const good: Array<{ row: Row; evento: EventoValidado }> = [];
      const poison: Array<{ row: Row; erro: string }> = [];
      for (const row of rows) {
        try {
          good.push({ row, evento: validarEvento(toDto(row), this.d.catalog) });
        } catch (err) {
          poison.push({ row, erro: (err as Error).message });
        }
      }
      const failed = (err: unknown): Rollback<number> => {
        retriable = { err, ids: good.map((g) => g.row.id) };
        return rollback(0);
      };
      // If the broker refuses the batch for good (a record too large for its topic, say), the
      // publisher sends each row alone, and the ones it refuses are set aside, so one row never
      // blocks the outbox. It keeps the batch's counters open meanwhile (docs/ordering.md).
      const published: typeof good = [];
      if (good.length > 0) {
        let outcomes: Array<EventoConsultado | Error>;
        try {
          outcomes = await this.d.publicarIsolandoRecusas(good.map((g) => g.evento));
        } catch (err) {
          if (isRetriable(err)) return failed(err);
          throw err;
        }
        good.forEach((g, i) => {
          const o = outcomes[i];
          if (o instanceof Error) poison.push({ row: g.row, erro: o.message });
          else published.push(g);
        });
      }
      await client.query(
        `UPDATE ${this.table} SET publicado_em = clock_timestamp(), payload = NULL, tentativas = tentativas + 1
          WHERE id = ANY($1::bigint[])`,
        [published.map((g) => g.row.id)],
      );
      for (const p of poison) {
        await client.query(
          `UPDATE ${this.table} SET falhou_em = clock_timestamp(), ultimo_erro = $2, tentativas = tentativas + 1 WHERE id = $1`,
          [p.row.id, storableText(p.erro, 2000)],
        );
        this.d.logger.error('outbox row set aside: it can never be published', {
          event_id: p.row.event_id,
          correlacao_id: p.row.correlacao_id,
          schema: this.o.schema,
          error: scrubText(p.erro, p.row.payload, 1000),
        });
      }
      setAside = poison.length;
      return published.length;
    });
    // counted once committed
    if (count > 0) this.d.metrics.outboxPublished.inc({ schema: this.o.schema }, count);
    if (setAside > 0) this.d.metrics.outboxErrors.inc({ schema: this.o.schema, code: 'POISON' }, setAside);
    if (retriable) {
      const { err, ids } = retriable;
      await this.o.pool
        .query(`UPDATE ${this.table} SET tentativas = tentativas + 1, ultimo_erro = $2 WHERE id = ANY($1::bigint[])`, [
          ids,
          storableText((err as Error).message, 2000),
        ])
        .catch(() => undefined);
      throw err;
    }
    return count;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      let published = 0;
      const started = Date.now();
      try {
        published = await this.executarCiclo();
        failures = 0;
      } catch (err) {
        failures++;
        const code = err instanceof FeromoniosError ? err.code : 'DATABASE_UNAVAILABLE';
        this.d.metrics.outboxErrors.inc({ schema: this.o.schema, code });
        this.d.logger.warn('outbox relay pass failed; retrying', {
          schema: this.o.schema,
          code,
          retriable: isRetriable(err),
          error: scrubText((err as Error).message, undefined, 1000),
        });
      }
      // After failed passes too: the pending gauges matter most while nothing gets published.
      await this.housekeeping().catch((err: Error) =>
        this.d.logger.debug('outbox housekeeping failed', { schema: this.o.schema, error: err.message }),
      );
      if (!this.running) break;
      if (published >= this.o.lote || this.notified) {
        this.notified = false; // more are waiting, or a commit arrived during the pass
        continue;
      }
      // The backoff after a failure counts from the start of the pass: a pass the broker refused
      // until publishTimeoutMs was paced by the publisher's own retries already, and it may have
      // been written for some partitions and not others — the sequencer holds those copies for the
      // rest while their counters are open (the publisher holds a retriable failure's counters open
      // 10 s at least, the sequencer waits `BRIDGE_ORDER_GAP_MS`; docs/ordering.md), so the next
      // pass must not wait more.
      const wait =
        failures > 0
          ? backoffAfter(
              failures + 1,
              { initialMs: this.o.intervaloMs, maxMs: 5_000 },
              Date.now() - started,
              this.o.intervaloMs,
            )
          : this.o.intervaloMs;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
  }

  /** Pending gauges (at most once a second) and deletion of rows past retention (once a minute). */
  private async housekeeping(): Promise<void> {
    const now = Date.now();
    if (this.o.escutar && !this.listener) await this.listen().catch(() => undefined);
    if (now - this.lastGauges >= GAUGES_EVERY_MS) {
      this.lastGauges = now;
      const { rows } = await this.o.pool.query<{ n: string; age: number | null }>(
        `SELECT count(*) AS n, extract(epoch FROM clock_timestamp() - min(criado_em))::float8 AS age
           FROM ${this.table} WHERE publicado_em IS NULL AND falhou_em IS NULL`,
      );
      this.d.metrics.outboxPending.set({ schema: this.o.schema }, Number(rows[0]?.n ?? 0));
      this.d.metrics.outboxOldestAge.set({ schema: this.o.schema }, rows[0]?.age ?? 0);
    }
    if (now - this.lastCleanup >= CLEANUP_EVERY_MS) {
      this.lastCleanup = now;
      const res = await this.o.pool.query(
        `DELETE FROM ${this.table} WHERE id IN (
           SELECT id FROM ${this.table} WHERE publicado_em < clock_timestamp() - $1 * interval '1 millisecond' LIMIT 10000)`,
        [this.o.retencaoMs],
      );
      if (res.rowCount)
        this.d.logger.info('outbox: published rows past retention deleted', {
          schema: this.o.schema,
          rows: res.rowCount,
        });
    }
  }

  private async listen(): Promise<void> {
    const client = await this.o.pool.connect();
    client.on('notification', (n) => {
      if (n.channel !== OUTBOX_CHANNEL || n.payload !== this.o.schema) return;
      if (this.wake) this.wake();
      else this.notified = true;
    });
    client.on('error', (err) => {
      // the connection died (PostgreSQL restarted): polling carries on, housekeeping listens again.
      // Released once only: parar() may have released it already
      if (this.listener !== client) return;
      this.listener = undefined;
      client.release(err);
    });
    this.listener = client; // before LISTEN: the error handler above owns it from here
    try {
      await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
    } catch (err) {
      if (this.listener === client) {
        this.listener = undefined;
        client.release(true);
      }
      throw err;
    }
  }
}

function toDto(r: Row): PublicarEventoDto {
  return {
    event_id: r.event_id,
    tipo: r.tipo,
    versao_schema: r.versao_schema,
    timestamp: r.timestamp_evento,
    origem: r.origem,
    correlacao_id: r.correlacao_id,
    ...(r.causation_id ? { causation_id: r.causation_id } : {}),
    tenant_id: r.tenant_id,
    ...(r.chave_particao ? { chave_particao: r.chave_particao } : {}),
    payload: r.payload as Record<string, unknown>,
  };
}
