import { randomUUID } from 'node:crypto';
import type { Kafka, Message } from 'kafkajs';
import type pg from 'pg';
import type { SchemaCatalog } from '../catalog/catalog';
import { readDeadLetterOriginals } from './dlq-topic-reader';
import { FeromoniosError, ThrottledError } from '../errors';
import { sleep } from '../runtime/retry';
import {
  condicaoSelecao,
  MAX_EVENTOS_ACAO,
  motivoEstacionamento,
  validarSelecao,
  type MotivoEstacionamento,
  type SelecaoDLQ,
} from './dlq-selection';
import type { Logger } from '../runtime/logger';
import type { SdkMetrics } from '../runtime/metrics';
import { eventoDoLog, LIMITE_MAXIMO, type LogRow } from '../log/event-log-reader';
import { reprocessMessage } from './reprocessing';
import { REPROCESS_HEADERS } from '../wire/headers';
import { withTransaction } from '../runtime/transaction';
import type { SchemaIdResolver } from '../catalog/schema-ids';
import { isUuid, operatorIdProblem, storableText } from '../wire/storable';
import { scrubText } from '../wire/error-text';
import type { TopicNames } from '../wire/topics';

/** Options of `reprocessarPendentesDLQ` / `reprocessarDLQ`. */
export interface OpcoesReprocessamento {
  /** Who asks, recorded in the audit trail (the audit API passes the token subject). Default `sdk`. */
  solicitante?: string;
  /** Refuse (`RATE_LIMITED`) when this colony had an accepted request this recently, in milliseconds. Default 0 (no limit). */
  intervaloMinimoMs?: number;
  /** At most this many entries per request (1 … 10,000), oldest first; the rest stay `pendente`. Default 1000. */
  maxEventos?: number;
  /** An entry left `retrying` this long (a request that crashed mid-way) is taken again, in milliseconds. Default 15 minutes. */
  retryingExpiraMs?: number;
  /**
   * Redrive rate, in events per second (0.1 … 10,000): the entries are sent back paced, so a
   * large DLQ does not flood the colony. A request never holds entries longer than 80 % of
   * `retryingExpiraMs`: at a low rate it takes fewer, the rest stay `pendente` (`restantes`).
   * Default: as fast as the producer goes.
   */
  taxa?: number;
  /**
   * Loop guard: an entry already sent back this many times without success becomes
   * `failed_permanent` (with the reason in `motivo`) instead of being sent again. Default 5.
   */
  maxReprocessamentos?: number;
  /** Stops a running request: entries not yet sent go back to `pendente`, the audit row says `falhou`. */
  sinal?: AbortSignal;
  /** Called after every chunk sent, with the counts so far. */
  aoProgredir?: (progresso: { enviados: number; total: number }) => void;
}

export const defaultOpcoesReprocessamento = {
  solicitante: 'sdk',
  intervaloMinimoMs: 0,
  maxEventos: 1000,
  retryingExpiraMs: 15 * 60_000,
  maxReprocessamentos: 5,
} satisfies Required<Omit<OpcoesReprocessamento, 'taxa' | 'sinal' | 'aoProgredir'>>;

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
  /** Entries the loop guard made `failed_permanent` instead of sending them. */
  guardados: number;
  /** Pending entries of the selection left for a later request (over `maxEventos`, or the rate's cap). */
  restantes: number;
  event_ids: string[];
  /** The event_ids the loop guard parked. */
  guardados_ids: string[];
}

/** A request accepted and running: its selection is claimed, `concluido` resolves when every entry is sent. */
export interface ReprocessamentoIniciado {
  pedido_id: string;
  colonia: string;
  /** Entries claimed, to be sent. */
  selecionados: number;
  guardados: number;
  restantes: number;
  /** Expected duration at the requested rate, in milliseconds (0 without a rate). */
  duracao_estimada_ms: number;
  concluido: Promise<ResultadoReprocessamento>;
}

/** What a dry run answers: what a request with the same selection would do now. Nothing changed. */
export interface SimulacaoReprocessamento {
  pedido_id: string;
  simulacao: true;
  colonia: string;
  /** Entries that would be sent back. */
  reprocessariam: number;
  originais: number;
  redigidos: number;
  /** Entries the loop guard would park instead. */
  guardados: number;
  restantes: number;
  /** Each entry that would be sent, and what it would carry: the full payload still in the DLQ topic (`original`), or only the redacted log copy (`redigido`). */
  eventos: Array<{ event_id: string; payload: 'original' | 'redigido' }>;
  guardados_ids: string[];
}

/** Options of `estacionarDLQ` / `reabrirDLQ`. */
export interface OpcoesAcaoDLQ {
  solicitante?: string;
  /** At most this many entries (1 … 10,000). Default 1000. */
  maxEventos?: number;
  /** Answer which entries would change, change nothing (audited). */
  simular?: boolean;
}

/** What parking or reopening did (or, with `simulacao`, would do). */
export interface ResultadoAcaoDLQ {
  pedido_id: string;
  acao: 'estacionar' | 'reabrir';
  simulacao: boolean;
  colonia: string;
  /** Entries changed (0 in a dry run). */
  afetados: number;
  /** The entries changed — or, in a dry run, that would be. */
  event_ids: string[];
}

/** A row of the operator-action trail (`core.dlq_reprocessamento`). */
export interface RegistroReprocessamento {
  id: string;
  /** `reprocessar`, `estacionar` or `reabrir`. */
  acao: 'reprocessar' | 'estacionar' | 'reabrir';
  /** A dry run: nothing changed. */
  simulacao: boolean;
  solicitante: string;
  solicitado_em: string;
  colonia: string;
  /** What was asked: the selection and options, as validated. */
  parametros: Record<string, unknown>;
  resultado: 'em_andamento' | 'concluido' | 'falhou' | 'recusado';
  reprocessados: number;
  originais: number;
  redigidos: number;
  guardados: number;
  afetados: number;
  detalhe: string | null;
  atualizado_em: string | null;
  concluido_em: string | null;
  /** Each event the action took and its DLQ state now (`retrying`, `resolved`, `pendente`…). */
  eventos: Array<{ event_id: string; status: string | null }>;
}

export interface FiltrosReprocessamentos {
  colonia?: string;
  acao?: RegistroReprocessamento['acao'];
  /** Only actions that took this event. */
  event_id?: string;
  /** Default 50, at most 500. */
  limite?: number;
  deslocamento?: number;
}

/** A claimed DLQ entry with its log row. */
type Claimed = LogRow & { handler_nome: string | null; guardado: boolean };

const LOCK_NAMESPACE = 0x646c7172; // 'dlqr'
/** Entries sent per producer call without a rate. */
const CHUNK = 500;
/** How often a paced request writes its progress to the audit row. */
const PROGRESS_EVERY_MS = 500;

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

type Opts = typeof defaultOpcoesReprocessamento & OpcoesReprocessamento;

/**
 * Audited reprocessing of a colony's DLQ (seed 4.5 `reprocessarPendentesDLQ`, seed 003 §8,
 * docs/reprocessing.md).
 *
 * One request: under a per-colony advisory lock, check the throttle, take the selected
 * `pendente` entries (the loop guard parks those sent back too often), mark the rest
 * `retrying` and write the audit row, in one transaction; then read the original messages back
 * from the colony's DLQ topic, and send every entry to `<ns>.reprocessar.<colonia>` — paced
 * when a rate is given — with the original full payload when the topic still has it, else the
 * redacted log copy flagged `redigido`. If sending fails (or the request is stopped), the
 * entries not sent go back to `pendente` and the audit row says `falhou`. The colony's outcome
 * for each event (resolved, or failed again) reaches `core.dead_letter_queue` through the bridge.
 */
export class DlqReprocessor {
  constructor(private readonly d: DlqReprocessorDeps) {}

  /** The seed's call: every pending entry of the colony (up to `maxEventos`). */
  reprocessar(colonia: string | SelecaoDLQ, opcoes: OpcoesReprocessamento = {}): Promise<ResultadoReprocessamento> {
    return this.iniciar(typeof colonia === 'string' ? { colonia } : colonia, opcoes).then((r) => r.concluido);
  }

  /**
   * Claims the selection and starts sending; resolves once the claim is committed (the audit
   * row exists, `em_andamento`). `concluido` settles when every entry is sent (or it failed).
   */
  async iniciar(selecao: SelecaoDLQ, opcoes: OpcoesReprocessamento = {}): Promise<ReprocessamentoIniciado> {
    const o = this.options(opcoes);
    const sel = validarSelecao(selecao);
    const pedido = randomUUID();
    const { claimed, restantes } = await this.claim(pedido, sel, o);
    const toSend = claimed.filter((c) => !c.guardado);
    const guardados = claimed.filter((c) => c.guardado);
    const concluido = this.send(pedido, sel.colonia, toSend, guardados, restantes, o);
    concluido.catch(() => undefined); // the caller of `iniciar` may only look at the claim
    return {
      pedido_id: pedido,
      colonia: sel.colonia,
      selecionados: toSend.length,
      guardados: guardados.length,
      restantes,
      duracao_estimada_ms: o.taxa ? Math.round((Math.max(0, toSend.length - 1) / o.taxa) * 1000) : 0,
      concluido,
    };
  }

  /** A dry run: what `reprocessar` with this selection would do now. Changes nothing; audited (`simulacao`). */
  async simular(selecao: SelecaoDLQ, opcoes: OpcoesReprocessamento = {}): Promise<SimulacaoReprocessamento> {
    const o = this.options(opcoes);
    const sel = validarSelecao(selecao);
    const pedido = randomUUID();
    const params: unknown[] = [];
    const where = condicaoSelecao(sel, params);
    const open = claimable(params, o.retryingExpiraMs);
    const { rows } = await this.d.pool.query<{ event_id: string; guardado: boolean }>(
      `SELECT d.event_id::text, d.reprocessamentos >= $${params.push(o.maxReprocessamentos)}::int AS guardado
         FROM core.dead_letter_queue d
        WHERE ${where} AND ${open}
        ORDER BY d.sequence_number
        LIMIT $${params.push(this.limitOf(o))}`,
      params,
    );
    const restantes = (await pendingOf(this.d.pool, sel)) - rows.length;
    const send = rows.filter((r) => !r.guardado).map((r) => r.event_id);
    const originals = await readDeadLetterOriginals(this.d.kafka, this.d.topics.dlq(sel.colonia), new Set(send));
    const eventos = send.map((id) => ({ event_id: id, payload: originals.has(id) ? 'original' : 'redigido' }) as const);
    const result: SimulacaoReprocessamento = {
      pedido_id: pedido,
      simulacao: true,
      colonia: sel.colonia,
      reprocessariam: send.length,
      originais: eventos.filter((e) => e.payload === 'original').length,
      redigidos: eventos.filter((e) => e.payload === 'redigido').length,
      guardados: rows.length - send.length,
      restantes: Math.max(0, restantes),
      eventos,
      guardados_ids: rows.filter((r) => r.guardado).map((r) => r.event_id),
    };
    await this.d.pool.query(
      `INSERT INTO core.dlq_reprocessamento
              (id, acao, simulacao, solicitante, colonia, parametros, event_ids, resultado,
               originais, redigidos, guardados, detalhe, concluido_em)
       VALUES ($1, 'reprocessar', true, $2, $3, $4, $5::uuid[], 'concluido', $6, $7, $8, $9, now())`,
      [
        pedido,
        o.solicitante,
        sel.colonia,
        parametrosOf(sel, o),
        send,
        result.originais,
        result.redigidos,
        result.guardados,
        `dry run: would send ${send.length}, park ${result.guardados}`,
      ],
    );
    this.d.logger.info('DLQ reprocessing dry run', {
      colonia: sel.colonia,
      pedido_id: pedido,
      reprocessariam: send.length,
    });
    return result;
  }

  /**
   * Parks the selected `pendente` entries: `failed_permanent`, with `motivo` saying why — a
   * code of `MOTIVOS_ESTACIONAMENTO` and an optional ticket reference, never free text (it
   * could name a citizen). Audited; `simular` changes nothing.
   */
  estacionar(
    selecao: SelecaoDLQ,
    motivo: { motivo: MotivoEstacionamento; referencia?: string },
    opcoes: OpcoesAcaoDLQ = {},
  ): Promise<ResultadoAcaoDLQ> {
    const text = motivoEstacionamento(motivo?.motivo, motivo?.referencia);
    return this.transition('estacionar', selecao, opcoes, text, motivo);
  }

  /**
   * Reopens the selected `failed_permanent` entries (parked by an operator or by the loop
   * guard) to `pendente`, with a fresh loop-guard budget (`reprocessamentos` 0, `tentativas` 1;
   * the history stays in the audit trail). Audited; `simular` changes nothing.
   */
  reabrir(selecao: SelecaoDLQ, opcoes: OpcoesAcaoDLQ = {}): Promise<ResultadoAcaoDLQ> {
    return this.transition('reabrir', selecao, opcoes);
  }

  /** One row of the trail, with each event's DLQ state now; null when there is none. */
  async obter(id: string): Promise<RegistroReprocessamento | null> {
    if (!isUuid(id)) throw new FeromoniosError('BAD_REQUEST', 'id must be a UUID');
    const { rows } = await this.d.pool.query<TrailRow>(`${TRAIL_SELECT} WHERE r.id = $1`, [id]);
    return rows[0] ? trailOf(rows[0]) : null;
  }

  /** The trail, newest first, with each event's DLQ state now. */
  async listar(filtros: FiltrosReprocessamentos = {}): Promise<{
    linhas: RegistroReprocessamento[];
    total: number;
    limite: number;
    deslocamento: number;
  }> {
    const limite = Math.min(filtros.limite ?? 50, LIMITE_MAXIMO);
    const deslocamento = filtros.deslocamento ?? 0;
    const params: unknown[] = [];
    const conds: string[] = [];
    if (filtros.colonia !== undefined) conds.push(`r.colonia = $${params.push(filtros.colonia)}`);
    if (filtros.acao !== undefined) conds.push(`r.acao = $${params.push(filtros.acao)}`);
    if (filtros.event_id !== undefined) {
      if (!isUuid(filtros.event_id)) throw new FeromoniosError('BAD_REQUEST', 'event_id must be a UUID');
      conds.push(`r.event_ids @> ARRAY[$${params.push(filtros.event_id)}::uuid]`);
    }
    const where = conds.length ? `WHERE ${conds.join(' AND ')}` : '';
    const [count, rows] = await Promise.all([
      this.d.pool.query<{ n: string }>(`SELECT count(*) AS n FROM core.dlq_reprocessamento r ${where}`, params),
      this.d.pool.query<TrailRow>(
        `${TRAIL_SELECT} ${where}
          ORDER BY r.solicitado_em DESC, r.id
          LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
        [...params, limite, deslocamento],
      ),
    ]);
    return { linhas: rows.rows.map(trailOf), total: Number(count.rows[0]?.n ?? 0), limite, deslocamento };
  }

  private options(opcoes: OpcoesReprocessamento): Opts {
    const o: Opts = { ...defaultOpcoesReprocessamento, ...opcoes };
    const problem = operatorIdProblem(o.solicitante);
    if (problem) throw new FeromoniosError('BAD_REQUEST', `solicitante ${problem}`);
    if (!Number.isInteger(o.maxEventos) || o.maxEventos < 1 || o.maxEventos > MAX_EVENTOS_ACAO)
      throw new FeromoniosError('BAD_REQUEST', `maxEventos must be an integer from 1 to ${MAX_EVENTOS_ACAO}`);
    if (o.taxa !== undefined && !(Number.isFinite(o.taxa) && o.taxa >= 0.1 && o.taxa <= 10_000))
      throw new FeromoniosError('BAD_REQUEST', 'taxa must be a number of events per second from 0.1 to 10000');
    if (!Number.isInteger(o.maxReprocessamentos) || o.maxReprocessamentos < 1)
      throw new FeromoniosError('BAD_REQUEST', 'maxReprocessamentos must be a positive integer');
    return o;
  }

  /** How many entries one request may take: `maxEventos`, and what the rate sends within 80 % of the retrying expiry. */
  private limitOf(o: Opts): number {
    if (!o.taxa) return o.maxEventos;
    return Math.max(1, Math.min(o.maxEventos, Math.floor((o.taxa * o.retryingExpiraMs * 0.8) / 1000)));
  }

  private async claim(pedido: string, sel: SelecaoDLQ, o: Opts): Promise<{ claimed: Claimed[]; restantes: number }> {
    type Outcome = { claimed: Claimed[]; restantes: number } | { throttledForMs: number };
    const colonia = sel.colonia;
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
            WHERE colonia = $1 AND acao = 'reprocessar' AND NOT simulacao AND resultado <> 'recusado'
              AND solicitado_em > now() - $2 * interval '1 millisecond'`,
          [colonia, o.intervaloMinimoMs],
        );
        const wait = recent.rows[0]?.wait_ms;
        if (wait !== null && wait !== undefined) {
          await client.query(
            `INSERT INTO core.dlq_reprocessamento (id, solicitante, colonia, parametros, resultado, detalhe, concluido_em)
             VALUES ($1, $2, $3, $4, 'recusado', $5, now())`,
            [
              pedido,
              o.solicitante,
              colonia,
              parametrosOf(sel, o),
              `throttled: one request per ${o.intervaloMinimoMs} ms per colony`,
            ],
          );
          return { throttledForMs: Math.max(1, wait) }; // the refusal is recorded: commit, then throw
        }
      }
      const params: unknown[] = [];
      const where = condicaoSelecao(sel, params);
      const open = claimable(params, o.retryingExpiraMs);
      const guard = `$${params.push(o.maxReprocessamentos)}::int`;
      const limit = `$${params.push(this.limitOf(o))}`;
      const { rows } = await client.query<Claimed>(
        `WITH alvo AS (
           SELECT d.id, d.reprocessamentos >= ${guard} AS guardado FROM core.dead_letter_queue d
            WHERE ${where} AND ${open}
            ORDER BY d.sequence_number
            LIMIT ${limit}
            FOR UPDATE SKIP LOCKED)
         UPDATE core.dead_letter_queue d
            SET status           = CASE WHEN alvo.guardado THEN 'failed_permanent' ELSE 'retrying' END,
                ultima_tentativa = CASE WHEN alvo.guardado THEN d.ultima_tentativa ELSE now() END,
                reprocessamentos = d.reprocessamentos + CASE WHEN alvo.guardado THEN 0 ELSE 1 END,
                resolvido_em     = CASE WHEN alvo.guardado THEN now() ELSE d.resolvido_em END,
                motivo           = CASE WHEN alvo.guardado
                                        THEN format('loop guard: sent back %s time(s) without success (limit %s)',
                                                    d.reprocessamentos, ${guard})
                                        ELSE d.motivo END
           FROM alvo, core.event_log e
          WHERE d.id = alvo.id AND e.event_id = d.event_id
         RETURNING d.event_id::text, d.handler_nome, d.sequence_number::text, e.tipo, e.versao_schema, e.timestamp,
                   e.origem, e.correlacao_id::text, e.causation_id::text, e.tenant_id::text, e.payload, e.criado_em,
                   alvo.guardado`,
        params,
      );
      rows.sort((a, b) => (BigInt(a.sequence_number) < BigInt(b.sequence_number) ? -1 : 1));
      const restantes = await pendingOf(client, sel);
      const guardados = rows.filter((r) => r.guardado);
      await client.query(
        `INSERT INTO core.dlq_reprocessamento
                (id, solicitante, colonia, parametros, event_ids, resultado, guardados, atualizado_em)
         VALUES ($1, $2, $3, $4, $5::uuid[], 'em_andamento', $6, now())`,
        [
          pedido,
          o.solicitante,
          colonia,
          parametrosOf(sel, o),
          rows.filter((r) => !r.guardado).map((r) => r.event_id),
          guardados.length,
        ],
      );
      return { claimed: rows, restantes };
    });
    if ('throttledForMs' in out) throw new ThrottledError(colonia, out.throttledForMs);
    return out;
  }

  /** Reads the originals back, then sends every claimed entry, paced; settles the audit row. */
  private async send(
    pedido: string,
    colonia: string,
    claimed: Claimed[],
    guardados: Claimed[],
    restantes: number,
    o: Opts,
  ): Promise<ResultadoReprocessamento> {
    let sent = 0;
    let originais = 0;
    // From here on every failure goes through `release`: the entries not sent go back to
    // `pendente` and the audit row is closed as `falhou`, never left `em_andamento`.
    try {
      await this.d.faultAfterClaim?.();
      for (const g of guardados)
        this.d.logger.warn('DLQ entry parked by the loop guard', { colonia, event_id: g.event_id, pedido_id: pedido });
      if (guardados.length > 0) this.d.metrics.dlqTransitions.inc({ colonia, acao: 'guarda' }, guardados.length);
      const topic = this.d.topics.reprocessar(colonia);
      const originals = await readDeadLetterOriginals(
        this.d.kafka,
        this.d.topics.dlq(colonia),
        new Set(claimed.map((c) => c.event_id)),
      );
      const messages: Message[] = [];
      for (const c of claimed) {
        const original = originals.get(c.event_id);
        if (original) {
          originais++;
          messages.push(fromOriginal(original, c, pedido));
        } else {
          messages.push(await this.fromLog(c, pedido));
        }
      }
      const chunk = o.taxa ? Math.max(1, Math.min(CHUNK, Math.floor(o.taxa / 10))) : CHUNK;
      const t0 = Date.now();
      let lastProgress = t0;
      for (let i = 0; i < messages.length; i += chunk) {
        if (o.taxa) await sleep(t0 + (i / o.taxa) * 1000 - Date.now(), o.sinal);
        if (o.sinal?.aborted)
          throw new FeromoniosError('INTERRUPTED', `stopped after sending ${sent} of ${messages.length}`);
        const slice = messages.slice(i, i + chunk);
        await this.d.send(topic, slice);
        sent += slice.length;
        o.aoProgredir?.({ enviados: sent, total: messages.length });
        if (o.taxa && Date.now() - lastProgress >= PROGRESS_EVERY_MS && sent < messages.length) {
          lastProgress = Date.now();
          await this.d.pool.query(
            `UPDATE core.dlq_reprocessamento SET reprocessados = $2, atualizado_em = now() WHERE id = $1`,
            [pedido, sent],
          );
        }
      }
      const result: ResultadoReprocessamento = {
        pedido_id: pedido,
        colonia,
        reprocessados: messages.length,
        originais,
        redigidos: messages.length - originais,
        guardados: guardados.length,
        restantes,
        event_ids: claimed.map((c) => c.event_id),
        guardados_ids: guardados.map((g) => g.event_id),
      };
      await this.d.pool.query(
        `UPDATE core.dlq_reprocessamento SET resultado = 'concluido', reprocessados = $2, originais = $3, redigidos = $4,
                atualizado_em = now(), concluido_em = now() WHERE id = $1`,
        [pedido, result.reprocessados, result.originais, result.redigidos],
      );
      // Only colonies that really had entries get series: a caller-chosen name never does.
      if (result.originais > 0) this.d.metrics.reprocessed.inc({ colonia, fonte: 'original' }, result.originais);
      if (result.redigidos > 0) this.d.metrics.reprocessed.inc({ colonia, fonte: 'redigido' }, result.redigidos);
      this.d.logger.info('DLQ reprocessed', { colonia, pedido_id: pedido, ...countsOf(result) });
      return result;
    } catch (err) {
      await this.release(pedido, colonia, claimed.slice(sent), sent, err);
      throw err;
    }
  }

  /** Sending failed or was stopped: the entries not sent go back to `pendente`, the audit row says why. */
  private async release(pedido: string, colonia: string, unsent: Claimed[], sent: number, err: unknown): Promise<void> {
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
        `UPDATE core.dead_letter_queue SET status = 'pendente', reprocessamentos = greatest(reprocessamentos - 1, 0)
          WHERE colonia = $1 AND status = 'retrying' AND event_id = ANY($2::uuid[])`,
        [colonia, unsent.map((c) => c.event_id)],
      )
      .catch(() => undefined);
    await this.d.pool
      .query(
        `UPDATE core.dlq_reprocessamento SET resultado = 'falhou', detalhe = $2, reprocessados = $3,
                atualizado_em = now(), concluido_em = now() WHERE id = $1`,
        [pedido, detalhe, sent],
      )
      .catch(() => undefined);
    this.d.logger.error('DLQ reprocessing failed', { colonia, pedido_id: pedido, error: detalhe, enviados: sent });
  }

  private async transition(
    acao: 'estacionar' | 'reabrir',
    selecao: SelecaoDLQ,
    opcoes: OpcoesAcaoDLQ,
    motivo?: string,
    pedido_motivo?: { motivo: MotivoEstacionamento; referencia?: string },
  ): Promise<ResultadoAcaoDLQ> {
    const solicitante = opcoes.solicitante ?? defaultOpcoesReprocessamento.solicitante;
    const maxEventos = opcoes.maxEventos ?? defaultOpcoesReprocessamento.maxEventos;
    const simulacao = opcoes.simular === true;
    const problem = operatorIdProblem(solicitante);
    if (problem) throw new FeromoniosError('BAD_REQUEST', `solicitante ${problem}`);
    if (!Number.isInteger(maxEventos) || maxEventos < 1 || maxEventos > MAX_EVENTOS_ACAO)
      throw new FeromoniosError('BAD_REQUEST', `maxEventos must be an integer from 1 to ${MAX_EVENTOS_ACAO}`);
    const sel = validarSelecao(selecao);
    const pedido = randomUUID();
    const from = acao === 'estacionar' ? 'pendente' : 'failed_permanent';
    const ids = await withTransaction(this.d.pool, async (client) => {
      const params: unknown[] = [];
      const where = condicaoSelecao(sel, params);
      const pick = `SELECT d.id FROM core.dead_letter_queue d
                     WHERE ${where} AND d.status = '${from}'
                     ORDER BY d.sequence_number LIMIT $${params.length + 1} FOR UPDATE SKIP LOCKED`;
      params.push(maxEventos);
      const set = simulacao
        ? ''
        : acao === 'estacionar'
          ? `status = 'failed_permanent', resolvido_em = now(), motivo = $${params.push(motivo)}`
          : `status = 'pendente', resolvido_em = NULL, motivo = NULL, reprocessamentos = 0, tentativas = 1`;
      const { rows } = await client.query<{ event_id: string; sequence_number: string }>(
        simulacao
          ? `SELECT d.event_id::text, d.sequence_number::text FROM core.dead_letter_queue d WHERE d.id IN (${pick.replace(' FOR UPDATE SKIP LOCKED', '')}) ORDER BY d.sequence_number`
          : `UPDATE core.dead_letter_queue d SET ${set} WHERE d.id IN (${pick}) RETURNING d.event_id::text, d.sequence_number::text`,
        params,
      );
      const eventIds = rows
        .sort((a, b) => (BigInt(a.sequence_number) < BigInt(b.sequence_number) ? -1 : 1))
        .map((r) => r.event_id);
      await client.query(
        `INSERT INTO core.dlq_reprocessamento
                (id, acao, simulacao, solicitante, colonia, parametros, event_ids, resultado, afetados, detalhe, concluido_em)
         VALUES ($1, $2, $3, $4, $5, $6, $7::uuid[], 'concluido', $8, $9, now())`,
        [
          pedido,
          acao,
          simulacao,
          solicitante,
          sel.colonia,
          {
            ...selectionOf(sel),
            max: maxEventos,
            ...(pedido_motivo ? { motivo: pedido_motivo.motivo, referencia: pedido_motivo.referencia } : {}),
            ...(simulacao ? { dry_run: true } : {}),
          },
          eventIds,
          simulacao ? 0 : eventIds.length,
          simulacao ? `dry run: would ${acao === 'estacionar' ? 'park' : 'reopen'} ${eventIds.length}` : null,
        ],
      );
      return eventIds;
    });
    // only colonies that really had entries get series: a caller-chosen name never does
    if (!simulacao && ids.length > 0) this.d.metrics.dlqTransitions.inc({ colonia: sel.colonia, acao }, ids.length);
    this.d.logger.info(acao === 'estacionar' ? 'DLQ entries parked' : 'DLQ entries reopened', {
      colonia: sel.colonia,
      pedido_id: pedido,
      afetados: ids.length,
      simulacao,
    });
    return {
      pedido_id: pedido,
      acao,
      simulacao,
      colonia: sel.colonia,
      afetados: simulacao ? 0 : ids.length,
      event_ids: ids,
    };
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

/** `pendente`, or `retrying` left by a request that died (older than the expiry). */
function claimable(params: unknown[], retryingExpiraMs: number): string {
  return `(d.status = 'pendente' OR (d.status = 'retrying'
            AND d.ultima_tentativa < now() - $${params.push(retryingExpiraMs)} * interval '1 millisecond'))`;
}

/** The selection's entries still `pendente` (in the claim's transaction, or outside one). */
async function pendingOf(db: Pick<pg.Pool, 'query'>, sel: SelecaoDLQ): Promise<number> {
  const params: unknown[] = [];
  const { rows } = await db.query<{ n: string }>(
    `SELECT count(*) AS n FROM core.dead_letter_queue d WHERE ${condicaoSelecao(sel, params)} AND d.status = 'pendente'`,
    params,
  );
  return Number(rows[0]?.n ?? 0);
}

/** What was asked, for the audit trail: the validated selection and options (no free text). */
function parametrosOf(sel: SelecaoDLQ, o: Opts): Record<string, unknown> {
  return {
    ...selectionOf(sel),
    max: o.maxEventos,
    ...(o.taxa !== undefined ? { taxa: o.taxa } : {}),
    max_reprocessamentos: o.maxReprocessamentos,
  };
}

/** The selection without the colony (a column of its own). */
function selectionOf(sel: SelecaoDLQ): Omit<SelecaoDLQ, 'colonia'> {
  const { colonia: _colonia, ...rest } = sel;
  return rest;
}

type TrailRow = Omit<RegistroReprocessamento, 'solicitado_em' | 'concluido_em' | 'atualizado_em'> & {
  solicitado_em: Date;
  concluido_em: Date | null;
  atualizado_em: Date | null;
};

const TRAIL_SELECT = `
  SELECT r.id::text, r.acao, r.simulacao, r.solicitante, r.solicitado_em, r.colonia, r.parametros, r.resultado,
         r.reprocessados, r.originais, r.redigidos, r.guardados, r.afetados, r.detalhe, r.atualizado_em, r.concluido_em,
         coalesce((SELECT json_agg(json_build_object('event_id', e.id, 'status', d.status) ORDER BY e.ord)
                     FROM unnest(r.event_ids) WITH ORDINALITY AS e(id, ord)
                     LEFT JOIN core.dead_letter_queue d ON d.event_id = e.id AND d.colonia = r.colonia),
                  '[]'::json) AS eventos
    FROM core.dlq_reprocessamento r`;

function trailOf(r: TrailRow): RegistroReprocessamento {
  return {
    ...r,
    solicitado_em: r.solicitado_em.toISOString(),
    atualizado_em: r.atualizado_em?.toISOString() ?? null,
    concluido_em: r.concluido_em?.toISOString() ?? null,
  };
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
  return {
    reprocessados: r.reprocessados,
    originais: r.originais,
    redigidos: r.redigidos,
    guardados: r.guardados,
    restantes: r.restantes,
  };
}
