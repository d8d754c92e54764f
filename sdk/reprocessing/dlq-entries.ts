import type pg from 'pg';
import { FeromoniosError } from '../errors';
import { LIMITE_MAXIMO, type DLQEntrada } from '../log/event-log-reader';
import { isUuid } from '../wire/storable';
import { condicaoSelecao, validarSelecao, type SelecaoDLQ } from './dlq-selection';

export const DLQ_STATUS = ['pendente', 'retrying', 'resolved', 'failed_permanent'] as const;
export type StatusDLQ = (typeof DLQ_STATUS)[number];

/** A DLQ entry as the platform team sees it: the seed's columns plus what reprocessing v2 keeps. */
export interface EntradaDLQ extends DLQEntrada {
  /** What groups entries failing the same way (handler + error message with ids and numbers folded). */
  erro_fingerprint: string;
  /** Rounds this entry was sent back without success (the loop guard's count). */
  reprocessamentos: number;
  /** Why it is `failed_permanent`: the loop guard, or the operator's reason. */
  motivo: string | null;
  resolvido_em: string | null;
}

/** Filters of `listarEntradasDLQ`: a selection (colony required) plus a status. */
export interface FiltrosEntradasDLQ extends SelecaoDLQ {
  status?: StatusDLQ;
  /** Default 100, at most 500. */
  limite?: number;
  deslocamento?: number;
}

/** Per colony: entries by state, and the most frequent failures among the open ones. */
export interface ResumoDLQ {
  colonias: Array<{
    colonia: string;
    por_status: Record<StatusDLQ, number>;
    /** When the oldest `pendente` entry failed first (ISO-8601), null when none is pending. */
    pendente_mais_antigo: string | null;
    /** Open (`pendente`, `retrying`) entries by fingerprint, most frequent first (10 at most). */
    falhas: Array<{ erro_fingerprint: string; handler_nome: string | null; mensagem_erro: string; entradas: number }>;
  }>;
  total_abertas: number;
}

type EntryRow = Omit<EntradaDLQ, 'sequence_number' | 'ultima_tentativa' | 'criado_em' | 'resolvido_em'> & {
  sequence_number: string;
  ultima_tentativa: Date;
  criado_em: Date;
  resolvido_em: Date | null;
};

const ENTRY_COLUMNS = `d.id::text, d.event_id::text, d.sequence_number::text, d.colonia, d.handler_nome, d.mensagem_erro,
  d.tentativas, d.ultima_tentativa, d.status, d.criado_em, d.erro_fingerprint, d.reprocessamentos, d.motivo, d.resolvido_em`;

/** Reads of `core.dead_letter_queue` for operators (docs/reprocessing.md). Redacted, like every table. */
export class DlqEntries {
  constructor(private readonly pool: pg.Pool) {}

  async listar(
    filtros: FiltrosEntradasDLQ,
  ): Promise<{ linhas: EntradaDLQ[]; total: number; limite: number; deslocamento: number }> {
    const { status, limite: l, deslocamento: o, ...selecao } = filtros;
    const sel = validarSelecao(selecao);
    if (status !== undefined && !DLQ_STATUS.includes(status))
      throw new FeromoniosError('BAD_REQUEST', `status must be one of ${DLQ_STATUS.join(', ')}`);
    const limite = Math.min(l ?? 100, LIMITE_MAXIMO);
    const deslocamento = o ?? 0;
    const params: unknown[] = [];
    let where = condicaoSelecao(sel, params);
    if (status !== undefined) where += ` AND d.status = $${params.push(status)}`;
    const [count, rows] = await Promise.all([
      this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM core.dead_letter_queue d WHERE ${where}`, params),
      this.pool.query<EntryRow>(
        `SELECT ${ENTRY_COLUMNS} FROM core.dead_letter_queue d WHERE ${where}
          ORDER BY d.sequence_number LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
        [...params, limite, deslocamento],
      ),
    ]);
    return { linhas: rows.rows.map(entryOf), total: Number(count.rows[0]?.n ?? 0), limite, deslocamento };
  }

  /** Every colony's entry for one event (one row per colony that failed it). */
  async doEvento(eventId: string): Promise<EntradaDLQ[]> {
    if (!isUuid(eventId)) throw new FeromoniosError('BAD_REQUEST', 'event_id must be a UUID');
    const { rows } = await this.pool.query<EntryRow>(
      `SELECT ${ENTRY_COLUMNS} FROM core.dead_letter_queue d WHERE d.event_id = $1 ORDER BY d.colonia`,
      [eventId],
    );
    return rows.map(entryOf);
  }

  /**
   * The DLQ entries of every event of one flow (`correlacao_id`), in sequence order.
   * `arquivados`: the flow's events in archived months (their rows are no longer in
   * `core.event_log`; the entries still name them).
   */
  async doFluxo(correlacaoId: string, arquivados: readonly string[] = []): Promise<EntradaDLQ[]> {
    if (!isUuid(correlacaoId)) throw new FeromoniosError('BAD_REQUEST', 'correlacao_id must be a UUID');
    const { rows } = await this.pool.query<EntryRow>(
      `SELECT ${ENTRY_COLUMNS} FROM core.dead_letter_queue d
        WHERE d.event_id IN (SELECT e.event_id FROM core.event_log e WHERE e.correlacao_id = $1)
           OR d.event_id = ANY($2::uuid[])
        ORDER BY d.sequence_number, d.colonia LIMIT 2000`,
      [correlacaoId, arquivados],
    );
    return rows.map(entryOf);
  }

  async resumo(): Promise<ResumoDLQ> {
    const [byStatus, oldest, failures] = await Promise.all([
      this.pool.query<{ colonia: string; status: StatusDLQ; n: string }>(
        `SELECT colonia, status, count(*) AS n FROM core.dead_letter_queue GROUP BY colonia, status ORDER BY colonia`,
      ),
      this.pool.query<{ colonia: string; t: Date }>(
        `SELECT colonia, min(criado_em) AS t FROM core.dead_letter_queue WHERE status = 'pendente' GROUP BY colonia`,
      ),
      this.pool.query<{
        colonia: string;
        erro_fingerprint: string;
        handler_nome: string | null;
        mensagem_erro: string;
        n: string;
      }>(
        `SELECT colonia, erro_fingerprint, handler_nome, mensagem_erro, n FROM (
           SELECT colonia, erro_fingerprint, min(handler_nome) AS handler_nome, min(mensagem_erro) AS mensagem_erro,
                  count(*) AS n, row_number() OVER (PARTITION BY colonia ORDER BY count(*) DESC, erro_fingerprint) AS r
             FROM core.dead_letter_queue WHERE status IN ('pendente', 'retrying')
            GROUP BY colonia, erro_fingerprint) t
          WHERE r <= 10 ORDER BY colonia, n DESC, erro_fingerprint`,
      ),
    ]);
    const colonias = new Map<string, ResumoDLQ['colonias'][number]>();
    const of = (colonia: string) => {
      let c = colonias.get(colonia);
      if (!c) {
        c = {
          colonia,
          por_status: { pendente: 0, retrying: 0, resolved: 0, failed_permanent: 0 },
          pendente_mais_antigo: null,
          falhas: [],
        };
        colonias.set(colonia, c);
      }
      return c;
    };
    for (const r of byStatus.rows) of(r.colonia).por_status[r.status] = Number(r.n);
    for (const r of oldest.rows) of(r.colonia).pendente_mais_antigo = r.t.toISOString();
    for (const f of failures.rows)
      of(f.colonia).falhas.push({
        erro_fingerprint: f.erro_fingerprint,
        handler_nome: f.handler_nome,
        mensagem_erro: f.mensagem_erro,
        entradas: Number(f.n),
      });
    const list = [...colonias.values()];
    return {
      colonias: list,
      total_abertas: list.reduce((n, c) => n + c.por_status.pendente + c.por_status.retrying, 0),
    };
  }
}

function entryOf(r: EntryRow): EntradaDLQ {
  return {
    ...r,
    sequence_number: BigInt(r.sequence_number),
    ultima_tentativa: r.ultima_tentativa.toISOString(),
    criado_em: r.criado_em.toISOString(),
    resolvido_em: r.resolvido_em?.toISOString() ?? null,
  };
}
