import { randomUUID } from 'node:crypto';
import type { Kafka, Message } from 'kafkajs';
import type pg from 'pg';
import type { SchemaCatalog } from '../catalog/catalog';
import { readDeadLetterOriginals } from './dlq-topic-reader';
import { FeromoniosError, ThrottledError } from '../errors';
import type { Logger } from '../runtime/logger';
import type { SdkMetrics } from '../runtime/metrics';
import { eventoDoLog, LIMITE_MAXIMO, type LogRow } from '../log/event-log-reader';
import { reprocessMessage } from './reprocessing';
import { REPROCESS_HEADERS } from '../wire/headers';
import { withTransaction } from '../runtime/transaction';
import type { SchemaIdResolver } from '../catalog/schema-ids';
import { colonyCodeProblem, operatorIdProblem, storableText } from '../wire/storable';
import { scrubText } from '../wire/error-text';
import type { TopicNames } from '../wire/topics';

/** Options of `reprocessarPendentesDLQ`. */
export interface OpcoesReprocessamento {
  /** Who asks, recorded in the audit trail (the audit API passes the token subject). Default `sdk`. */
  solicitante?: string;
  /** Refuse (`RATE_LIMITED`) when this colony had an accepted request this recently, in milliseconds. Default 0 (no limit). */
  intervaloMinimoMs?: number;
  /** At most this many pending entries per request, oldest first; the rest stay `pendente`. Default 1000. */
  maxEventos?: number;
  /** An entry left `retrying` this long (a request that crashed mid-way) is taken again, in milliseconds. Default 15 minutes. */
  retryingExpiraMs?: number;
}

export const defaultOpcoesReprocessamento = {
  solicitante: 'sdk',
  intervaloMinimoMs: 0,
  maxEventos: 1000,
  retryingExpiraMs: 15 * 60_000,
} satisfies Required<OpcoesReprocessamento>;

/** What one reprocessing request did (seed: `{ reprocessados }`, plus the audit details). */
export interface ResultadoReprocessamento {
  pedido_id: string;
  colonia: string;
  /** Entries sent back to the colony (now `retrying`). */
  reprocessados: number;
  /** …of which with the original full payload, read back from the colony's DLQ topic. */
  originais: number;
  /** …of which with the redacted log copy (the DLQ topic no longer had the original). */
  redigidos: number;
  /** Pending entries left for a later request (over `maxEventos`). */
  restantes: number;
  event_ids: string[];
}

/** A row of the reprocessing audit trail (`core.dlq_reprocessamento`). */
export interface RegistroReprocessamento {
  id: string;
  solicitante: string;
  solicitado_em: string;
  colonia: string;
  resultado: 'em_andamento' | 'concluido' | 'falhou' | 'recusado';
  reprocessados: number;
  originais: number;
  redigidos: number;
  detalhe: string | null;
  concluido_em: string | null;
  /** Each event sent back and its DLQ state now (`retrying`, `resolved`, `pendente`…). */
  eventos: Array<{ event_id: string; status: string | null }>;
}

export interface FiltrosReprocessamentos {
  colonia?: string;
  /** Default 50, at most 500. */
  limite?: number;
  deslocamento?: number;
}

/** A claimed DLQ entry with its log row. */
type Claimed = LogRow & { handler_nome: string | null };

const LOCK_NAMESPACE = 0x646c7172; // 'dlqr'

export interface DlqReprocessorDeps {
  pool: pg.Pool;
  kafka: Kafka;
  topics: TopicNames;
  catalog: SchemaCatalog;
  schemaIds: SchemaIdResolver;
  send(topic: string, messages: Message[]): Promise<void>;
  logger: Logger;
  metrics: SdkMetrics;
  /** Fault injection only (tests): runs right after the claim committed. */
  faultAfterClaim?: () => Promise<void>;
}

/**
 * Audited reprocessing of a colony's DLQ (seed 4.5 `reprocessarPendentesDLQ`, seed 003 §8).
 *
 * One request: under a per-colony advisory lock, check the throttle, move the colony's
 * `pendente` entries to `retrying` and write the audit row, in one transaction; then read the
 * original messages back from the colony's DLQ topic, and send every entry to
 * `<ns>.reprocessar.<colonia>` — the original full payload when the topic still has it, else
 * the redacted log copy flagged `redigido`. If sending fails, the entries go back to
 * `pendente` and the audit row says `falhou`. The colony's outcome for each event (resolved,
 * or failed again) reaches `core.dead_letter_queue` through the bridge.
 */
export class DlqReprocessor {
  constructor(private readonly d: DlqReprocessorDeps) {}

  async reprocessar(colonia: string, opcoes: OpcoesReprocessamento = {}): Promise<ResultadoReprocessamento> {
    const o = { ...defaultOpcoesReprocessamento, ...opcoes };
    // The shared rules (storable.ts): the colony becomes a topic name and a column, the
    // requester a column of the audit trail, which must never hold personal data.
    const coloniaProblem = colonyCodeProblem(colonia);
    if (coloniaProblem) throw new FeromoniosError('BAD_REQUEST', `colonia ${coloniaProblem}`);
    const solicitanteProblem = operatorIdProblem(o.solicitante);
    if (solicitanteProblem) throw new FeromoniosError('BAD_REQUEST', `solicitante ${solicitanteProblem}`);
    const pedido = randomUUID();
    const { claimed, restantes } = await this.claim(pedido, colonia, o);
    // From here on every failure goes through `release`: the entries go back to `pendente` and
    // the audit row is closed as `falhou`, never left `em_andamento`.
    try {
      await this.d.faultAfterClaim?.();
      const topic = this.d.topics.reprocessar(colonia);
      const originals = await readDeadLetterOriginals(
        this.d.kafka,
        this.d.topics.dlq(colonia),
        new Set(claimed.map((c) => c.event_id)),
      );
      const messages: Message[] = [];
      let originais = 0;
      for (const c of claimed) {
        const original = originals.get(c.event_id);
        if (original) {
          originais++;
          messages.push(fromOriginal(original, c, pedido));
        } else {
          messages.push(await this.fromLog(c, pedido));
        }
      }
      if (messages.length > 0) await this.d.send(topic, messages);
      const result: ResultadoReprocessamento = {
        pedido_id: pedido,
        colonia,
        reprocessados: messages.length,
        originais,
        redigidos: messages.length - originais,
        restantes,
        event_ids: claimed.map((c) => c.event_id),
      };
      await this.d.pool.query(
        `UPDATE core.dlq_reprocessamento SET resultado = 'concluido', reprocessados = $2, originais = $3, redigidos = $4,
                concluido_em = now() WHERE id = $1`,
        [pedido, result.reprocessados, result.originais, result.redigidos],
      );
      // Only colonies that really had entries get series: a caller-chosen name never does.
      if (result.originais > 0) this.d.metrics.reprocessed.inc({ colonia, fonte: 'original' }, result.originais);
      if (result.redigidos > 0) this.d.metrics.reprocessed.inc({ colonia, fonte: 'redigido' }, result.redigidos);
      this.d.logger.info('DLQ reprocessed', { colonia, pedido_id: pedido, ...countsOf(result) });
      return result;
    } catch (err) {
      await this.release(pedido, colonia, claimed, err);
      throw err;
    }
  }

  /** The audit trail, newest first, with each event's DLQ state now. */
  async listar(filtros: FiltrosReprocessamentos = {}): Promise<{
    linhas: RegistroReprocessamento[];
    total: number;
    limite: number;
    deslocamento: number;
  }> {
    const limite = Math.min(filtros.limite ?? 50, LIMITE_MAXIMO);
    const deslocamento = filtros.deslocamento ?? 0;
    const params: unknown[] = [];
    const where = filtros.colonia === undefined ? '' : (params.push(filtros.colonia), 'WHERE r.colonia = $1');
    const [count, rows] = await Promise.all([
      this.d.pool.query<{ n: string }>(`SELECT count(*) AS n FROM core.dlq_reprocessamento r ${where}`, params),
      this.d.pool.query<{
        id: string;
        solicitante: string;
        solicitado_em: Date;
        colonia: string;
        resultado: RegistroReprocessamento['resultado'];
        reprocessados: number;
        originais: number;
        redigidos: number;
        detalhe: string | null;
        concluido_em: Date | null;
        eventos: Array<{ event_id: string; status: string | null }>;
      }>(
        `SELECT r.id::text, r.solicitante, r.solicitado_em, r.colonia, r.resultado, r.reprocessados, r.originais,
                r.redigidos, r.detalhe, r.concluido_em,
                coalesce((SELECT json_agg(json_build_object('event_id', e.id, 'status', d.status) ORDER BY e.ord)
                            FROM unnest(r.event_ids) WITH ORDINALITY AS e(id, ord)
                            LEFT JOIN core.dead_letter_queue d ON d.event_id = e.id AND d.colonia = r.colonia),
                         '[]'::json) AS eventos
           FROM core.dlq_reprocessamento r ${where}
          ORDER BY r.solicitado_em DESC, r.id
          LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
        [...params, limite, deslocamento],
      ),
    ]);
    return {
      linhas: rows.rows.map((r) => ({
        ...r,
        solicitado_em: r.solicitado_em.toISOString(),
        concluido_em: r.concluido_em?.toISOString() ?? null,
      })),
      total: Number(count.rows[0]?.n ?? 0),
      limite,
      deslocamento,
    };
  }

  private async claim(
    pedido: string,
    colonia: string,
    o: Required<OpcoesReprocessamento>,
  ): Promise<{ claimed: Claimed[]; restantes: number }> {
    type Outcome = { claimed: Claimed[]; restantes: number } | { throttledForMs: number };
    const out = await withTransaction(this.d.pool, async (client): Promise<Outcome> => {
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_NAMESPACE, colonia]);
      // A request whose process died between its claim and its end left its row in progress:
      // once its entries are taken again (retryingExpiraMs), its row is closed as failed.
      await client.query(
        `UPDATE core.dlq_reprocessamento
            SET resultado = 'falhou', concluido_em = now(), detalhe = 'abandoned: the request did not finish'
          WHERE colonia = $1 AND resultado = 'em_andamento' AND solicitado_em < now() - $2 * interval '1 millisecond'`,
        [colonia, o.retryingExpiraMs],
      );
      if (o.intervaloMinimoMs > 0) {
        const recent = await client.query<{ wait_ms: number }>(
          `SELECT ceil(extract(epoch FROM (max(solicitado_em) + $2 * interval '1 millisecond' - now())) * 1000)::int AS wait_ms
             FROM core.dlq_reprocessamento
            WHERE colonia = $1 AND resultado <> 'recusado' AND solicitado_em > now() - $2 * interval '1 millisecond'`,
          [colonia, o.intervaloMinimoMs],
        );
        const wait = recent.rows[0]?.wait_ms;
        if (wait !== null && wait !== undefined) {
          await client.query(
            `INSERT INTO core.dlq_reprocessamento (id, solicitante, colonia, resultado, detalhe, concluido_em)
             VALUES ($1, $2, $3, 'recusado', $4, now())`,
            [pedido, o.solicitante, colonia, `throttled: one request per ${o.intervaloMinimoMs} ms per colony`],
          );
          return { throttledForMs: Math.max(1, wait) }; // the refusal is recorded: commit, then throw
        }
      }
      const { rows } = await client.query<Claimed>(
        `WITH alvo AS (
           SELECT d.id FROM core.dead_letter_queue d
            WHERE d.colonia = $1
              AND (d.status = 'pendente'
                   OR (d.status = 'retrying' AND d.ultima_tentativa < now() - $3 * interval '1 millisecond'))
            ORDER BY d.sequence_number
            LIMIT $2
            FOR UPDATE SKIP LOCKED)
         UPDATE core.dead_letter_queue d SET status = 'retrying', ultima_tentativa = now()
           FROM alvo, core.event_log e
          WHERE d.id = alvo.id AND e.event_id = d.event_id
         RETURNING d.event_id::text, d.handler_nome, d.sequence_number::text, e.tipo, e.versao_schema, e.timestamp,
                   e.origem, e.correlacao_id::text, e.causation_id::text, e.payload, e.criado_em`,
        [colonia, o.maxEventos, o.retryingExpiraMs],
      );
      rows.sort((a, b) => (BigInt(a.sequence_number) < BigInt(b.sequence_number) ? -1 : 1));
      const left = await client.query<{ n: string }>(
        `SELECT count(*) AS n FROM core.dead_letter_queue WHERE colonia = $1 AND status = 'pendente'`,
        [colonia],
      );
      await client.query(
        `INSERT INTO core.dlq_reprocessamento (id, solicitante, colonia, event_ids, resultado)
         VALUES ($1, $2, $3, $4::uuid[], 'em_andamento')`,
        [pedido, o.solicitante, colonia, rows.map((r) => r.event_id)],
      );
      return { claimed: rows, restantes: Number(left.rows[0]?.n ?? 0) };
    });
    if ('throttledForMs' in out) throw new ThrottledError(colonia, out.throttledForMs);
    return out;
  }

  /** Sending failed: the entries go back to `pendente`, the audit row says why. */
  private async release(pedido: string, colonia: string, claimed: Claimed[], err: unknown): Promise<void> {
    const detalhe = storableText(
      scrubText(
        err instanceof FeromoniosError
          ? `${err.code}: ${err.message}`
          : `internal error (${(err as Error)?.name ?? typeof err})`,
      ),
      2000,
    );
    await this.d.pool
      .query(
        `UPDATE core.dead_letter_queue SET status = 'pendente'
          WHERE colonia = $1 AND status = 'retrying' AND event_id = ANY($2::uuid[])`,
        [colonia, claimed.map((c) => c.event_id)],
      )
      .catch(() => undefined);
    await this.d.pool
      .query(
        `UPDATE core.dlq_reprocessamento SET resultado = 'falhou', detalhe = $2, concluido_em = now() WHERE id = $1`,
        [pedido, detalhe],
      )
      .catch(() => undefined);
    this.d.logger.error('DLQ reprocessing failed', { colonia, pedido_id: pedido, error: detalhe });
  }

  private async fromLog(c: Claimed, pedido: string): Promise<Message> {
    const versao = this.d.catalog.versao(c.tipo, c.versao_schema);
    if (!versao)
      throw new FeromoniosError(
        'UNKNOWN_VERSION',
        `versao_schema '${c.versao_schema}' of ${c.tipo} has no schema in this catalog`,
      );
    const schemaId = await this.d.schemaIds.idOf(versao);
    return reprocessMessage(eventoDoLog(c), schemaId, {
      redigido: true,
      pedido,
      ...(c.handler_nome ? { manipulador: c.handler_nome } : {}),
    });
  }
}

/** The original record, stripped of its DLQ context, sent back with this request's headers. */
function fromOriginal(original: { value: Buffer; headers: Message['headers'] }, c: Claimed, pedido: string): Message {
  const headers: NonNullable<Message['headers']> = {};
  for (const [k, v] of Object.entries(original.headers ?? {})) {
    if (k.startsWith('feromonios_dlq_') || k.startsWith('feromonios_reprocesso_') || v === undefined) continue;
    headers[k] = v;
  }
  headers[REPROCESS_HEADERS.request] = pedido;
  if (c.handler_nome) headers[REPROCESS_HEADERS.handler] = c.handler_nome;
  return { key: c.event_id, value: original.value, headers };
}

function countsOf(r: ResultadoReprocessamento): Record<string, number> {
  return { reprocessados: r.reprocessados, originais: r.originais, redigidos: r.redigidos, restantes: r.restantes };
}
