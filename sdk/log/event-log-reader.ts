import type pg from 'pg';
import { escapeLiteral } from 'pg';
import type { EventoConsultado } from '../contract';
import { FeromoniosError } from '../errors';
import type { Logger } from '../runtime/logger';
import { setNewest } from '../runtime/bounded-map';
import { colonyCodeProblem, textProblem, timestampProblem, isUuid } from '../wire/storable';
import {
  listarSegmentos,
  LogArquivado,
  SQL_SEGMENTOS,
  segmentosDasLinhas,
  uniao,
  type SegmentoArquivado,
  type SegmentoRow,
} from './archive/archived-log';
import type { LinhaDoLog } from './archive/parquet-file';

/** Filters of `consultarEventos` (seed 4.3). */
export interface ConsultarEventosDto {
  tipo?: string;
  origem?: string;
  correlacao_id?: string;
  /** Events of this tenant (a UUID); `null` for events without one. Absent: every tenant. */
  tenant_id?: string | null;
  /** ISO-8601, inclusive. */
  timestamp_inicio?: string;
  /** ISO-8601, inclusive. */
  timestamp_fim?: string;
  /** Inclusive. */
  sequence_inicio?: number | bigint | string;
  /** Inclusive. */
  sequence_fim?: number | bigint | string;
  /**
   * A top-level key of the (redacted) payload, with `payload_valor`: events whose payload holds
   * exactly that string there — e.g. `demanda_id`. The audit API allows only the keys of
   * `AUDIT_PAYLOAD_SEARCH_KEYS` (non-personal ones, kept by the redaction policy).
   */
  payload_campo?: string;
  payload_valor?: string;
  /**
   * Keyset paging: only events with `sequence_number` above this one (exclusive) — pass the
   * previous page's `proximo_cursor`. Costs the same on page 1 and page 10,000, unlike
   * `deslocamento` (kept for the seed's contract); the two cannot be combined.
   */
  apos_sequence?: number | bigint | string;
  /** Page size, default 100, capped at 500. */
  limite?: number;
  /** Rows of the filter skipped before the page (O(deslocamento) in PostgreSQL: prefer `apos_sequence`). */
  deslocamento?: number;
}

/** Up to this many matching rows, `total` is an exact count; above it, PostgreSQL's estimate. */
export const LIMITE_TOTAL_EXATO = 10_000;

export interface ResultadoPaginado<T> {
  linhas: T[];
  /**
   * Rows matching the filter (whatever the page: `apos_sequence` and `deslocamento` do not
   * change it). Exact when at most `LIMITE_TOTAL_EXATO` match; above that, the planner's
   * estimate (never below `LIMITE_TOTAL_EXATO + 1`) and `total_exato: false`.
   */
  total: number;
  /** Whether `total` is a count (true) or an estimate of more than `LIMITE_TOTAL_EXATO` rows (false). */
  total_exato: boolean;
  limite: number;
  deslocamento: number;
  /**
   * The `apos_sequence` of the next page (the last row's `sequence_number`, as a string), or
   * `null` when this page is the last.
   */
  proximo_cursor: string | null;
}

/**
 * The page and its cursor from up to `limite + 1` rows in sequence order (one more than the page
 * says whether a next page exists). The SQL reader and the in-memory bus both page through it.
 */
export function pagina<T extends { sequence_number: bigint }>(
  rows: T[],
  limite: number,
): { linhas: T[]; proximo_cursor: string | null } {
  const linhas = rows.slice(0, limite);
  const last = linhas.at(-1);
  return { linhas, proximo_cursor: rows.length > limite && last ? String(last.sequence_number) : null };
}

/**
 * A row of the log: payload redacted (`redigido: true` says so). `arquivado: true` marks a row
 * read from the cold archive (docs/archive.md); absent, the row came from PostgreSQL.
 */
export type EventoDoLog = EventoConsultado & {
  sequence_number: bigint;
  criado_em: string;
  redigido: true;
  arquivado?: true;
};

export interface DLQEstatisticas {
  pendentes_por_colonia: Record<string, number>;
  total_pendentes: number;
}

export interface DLQEntrada {
  id: string;
  event_id: string;
  sequence_number: bigint;
  colonia: string;
  handler_nome: string | null;
  mensagem_erro: string;
  tentativas: number;
  ultima_tentativa: string;
  status: string;
  criado_em: string;
}

export const LIMITE_MAXIMO = 500;
/** Largest `sequence_number` PostgreSQL's BIGINT holds. */
const MAX_BIGINT = 9223372036854775807n;
export const LOTE_REPLAY = 1000;
/** Archived files a `consultarEventos` total reads to count matches; beyond, the total is an upper bound. */
export const MAX_ARQUIVOS_CONTADOS = 8;

/** How long an estimated `total` (a filter matching more than `LIMITE_TOTAL_EXATO`) is reused, in ms. */
export const ESTIMATIVA_VALIDA_MS = 10_000;
export const MAX_LOTES_REPLAY = 100;

const COLUMNS = `sequence_number::text AS sequence_number, event_id::text AS event_id, tipo, versao_schema, timestamp, origem,
  correlacao_id::text AS correlacao_id, causation_id::text AS causation_id, tenant_id::text AS tenant_id, payload, criado_em`;

/**
 * The page query of `consultarEventos` (exported for the benchmark's EXPLAIN). With
 * `chavesPrimeiro` — a time window, or rows skipped by `deslocamento` — the page's keys come
 * first, from an index alone where one covers the filter (the covering `event_log_timestamp_idx` /
 * `event_log_tipo_timestamp_idx`, ADR 0019), so index entries are sorted or skipped instead of
 * rows; then only the page's rows are read, each by the key of its month. Otherwise one ordered
 * scan (the primary key, or the filter's index) is already the cheapest plan. `where` filters the
 * log (`WHERE …` or empty); `limite` and `deslocamento` are SQL (parameters).
 */
export function sqlDaPagina(where: string, limite: string, deslocamento: string, chavesPrimeiro: boolean): string {
  if (!chavesPrimeiro)
    return `SELECT ${COLUMNS} FROM core.event_log ${where} ORDER BY event_log.sequence_number LIMIT ${limite} OFFSET ${deslocamento}`;
  return `SELECT ${COLUMNS} FROM core.event_log
           WHERE (sequence_number, criado_em) IN (SELECT sequence_number, criado_em FROM core.event_log ${where}
                                                  ORDER BY sequence_number LIMIT ${limite} OFFSET ${deslocamento})
           ORDER BY event_log.sequence_number`;
}

/**
 * The bounded count of `consultarEventos`'s total: at most `LIMITE_TOTAL_EXATO + 1` index entries
 * read, whatever the size of the log (exported for the benchmark's EXPLAIN).
 */
export function sqlContagem(where: string): string {
  return `SELECT count(*)::int AS n FROM (SELECT 1 FROM core.event_log ${where} LIMIT ${LIMITE_TOTAL_EXATO + 1}) s`;
}

/** A `core.event_log` row as the reads select it (`sequence_number` and uuids as text). */
export interface LogRow {
  sequence_number: string;
  event_id: string;
  tipo: string;
  versao_schema: string;
  timestamp: Date;
  origem: string;
  correlacao_id: string | null;
  causation_id: string | null;
  tenant_id: string | null;
  payload: Record<string, unknown>;
  criado_em: Date;
}

/** An archived row as the SDK returns it: the same fields, marked `arquivado: true`. */
export const eventoArquivado = (r: LogRow): EventoDoLog => ({ ...eventoDoLog(r), arquivado: true });

/** A selected log row as the SDK returns it. */
export const eventoDoLog = (r: LogRow): EventoDoLog => ({
  sequence_number: BigInt(r.sequence_number),
  event_id: r.event_id,
  tipo: r.tipo,
  versao_schema: r.versao_schema,
  timestamp: r.timestamp.toISOString(),
  origem: r.origem,
  correlacao_id: r.correlacao_id,
  causation_id: r.causation_id,
  tenant_id: r.tenant_id,
  payload: r.payload,
  criado_em: r.criado_em.toISOString(),
  redigido: true,
});

const bad = (msg: string): never => {
  throw new FeromoniosError('BAD_REQUEST', msg);
};

function seq(v: unknown, name: string): string | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const s = typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' ? String(v) : JSON.stringify(v);
  if (!/^\d{1,19}$/.test(s) || BigInt(s) > MAX_BIGINT)
    bad(`${name} must be an integer between 0 and ${MAX_BIGINT}, got ${JSON.stringify(v)}`);
  return s;
}

/** `consultarEventos` filters once checked: what every implementation of the read matches on. */
export interface FiltrosValidados {
  tipo?: string;
  origem?: string;
  correlacao_id?: string;
  /** `null`: events without a tenant. */
  tenant_id?: string | null;
  timestamp_inicio?: string;
  timestamp_fim?: string;
  sequence_inicio?: bigint;
  sequence_fim?: bigint;
  payload?: { campo: string; valor: string };
  apos_sequence?: bigint;
  limite: number;
  deslocamento: number;
}

/**
 * Checks `consultarEventos` filters (a `BAD_REQUEST` naming the first bad one) and applies the
 * defaults: `limite` 100, capped at `LIMITE_MAXIMO`; `deslocamento` 0; `apos_sequence` and a
 * non-zero `deslocamento` together are refused. The SQL reader and the
 * in-memory bus (`@feromonios/sdk/testing`) both read through it, so they accept and refuse the
 * same filters.
 */
export function filtrosValidados(filtros: ConsultarEventosDto = {}): FiltrosValidados {
  const limite = Math.min(filtros.limite ?? 100, LIMITE_MAXIMO);
  const deslocamento = filtros.deslocamento ?? 0;
  if (!Number.isInteger(limite) || limite < 1)
    bad(`limite must be a positive integer, got ${JSON.stringify(filtros.limite)}`);
  if (!Number.isInteger(deslocamento) || deslocamento < 0) bad(`deslocamento must be a non-negative integer`);
  const out: FiltrosValidados = { limite, deslocamento };
  if (filtros.tipo !== undefined) {
    const p = textProblem(filtros.tipo, 255);
    if (p) bad(`tipo ${p}`);
    out.tipo = filtros.tipo;
  }
  if (filtros.origem !== undefined) {
    const p = colonyCodeProblem(filtros.origem);
    if (p) bad(`origem ${p}`);
    out.origem = filtros.origem;
  }
  if (filtros.correlacao_id !== undefined) {
    if (!isUuid(filtros.correlacao_id)) bad(`correlacao_id must be a UUID`);
    out.correlacao_id = filtros.correlacao_id;
  }
  if (filtros.tenant_id !== undefined) {
    if (filtros.tenant_id !== null && !isUuid(filtros.tenant_id)) bad(`tenant_id must be a UUID or null`);
    out.tenant_id = filtros.tenant_id;
  }
  for (const k of ['timestamp_inicio', 'timestamp_fim'] as const) {
    const v = filtros[k];
    if (v === undefined) continue;
    const p = timestampProblem(v);
    if (p) bad(`${k} ${p}`);
    out[k] = v;
  }
  if (filtros.payload_campo !== undefined || filtros.payload_valor !== undefined) {
    const { payload_campo: campo, payload_valor: valor } = filtros;
    if (typeof campo !== 'string' || !/^[a-z_][a-z0-9_]{0,63}$/.test(campo))
      bad('payload_campo must be a payload key: 1-64 of [a-z0-9_], starting with a letter or _');
    const p = valor === undefined ? 'is required with payload_campo' : textProblem(valor, 255);
    if (p) bad(`payload_valor ${p}`);
    out.payload = { campo: campo as string, valor: valor as string };
  }
  const si = seq(filtros.sequence_inicio, 'sequence_inicio');
  const sf = seq(filtros.sequence_fim, 'sequence_fim');
  const apos = seq(filtros.apos_sequence, 'apos_sequence');
  if (si !== undefined) out.sequence_inicio = BigInt(si);
  if (sf !== undefined) out.sequence_fim = BigInt(sf);
  if (apos !== undefined) {
    if (deslocamento > 0) bad('apos_sequence and deslocamento cannot be combined: page with apos_sequence alone');
    out.apos_sequence = BigInt(apos);
  }
  return out;
}

/**
 * Whether an event matches checked filters (all but the page: `apos_sequence`, `limite`,
 * `deslocamento`) — the predicate of the in-memory bus and of reads of archived months, the same
 * as the SQL reader's WHERE clause.
 */
export function correspondeAosFiltros(f: FiltrosValidados, e: EventoDoLog): boolean {
  return (
    (f.tipo === undefined || e.tipo === f.tipo) &&
    (f.origem === undefined || e.origem === f.origem) &&
    (f.correlacao_id === undefined || e.correlacao_id === f.correlacao_id.toLowerCase()) &&
    (f.tenant_id === undefined || e.tenant_id === (f.tenant_id === null ? null : f.tenant_id.toLowerCase())) &&
    (f.timestamp_inicio === undefined || Date.parse(e.timestamp) >= Date.parse(f.timestamp_inicio)) &&
    (f.timestamp_fim === undefined || Date.parse(e.timestamp) <= Date.parse(f.timestamp_fim)) &&
    (f.sequence_inicio === undefined || e.sequence_number >= f.sequence_inicio) &&
    (f.sequence_fim === undefined || e.sequence_number <= f.sequence_fim) &&
    (f.payload === undefined || e.payload[f.payload.campo] === f.payload.valor)
  );
}

/** Whether an archived file may hold rows matching the filters (its ranges, types and origins). */
function segmentoPodeConter(f: FiltrosValidados, s: SegmentoArquivado): boolean {
  return (
    (f.tipo === undefined || s.tipos.includes(f.tipo)) &&
    (f.origem === undefined || s.origens.includes(f.origem)) &&
    (f.timestamp_inicio === undefined || s.timestamp_max.getTime() >= Date.parse(f.timestamp_inicio)) &&
    (f.timestamp_fim === undefined || s.timestamp_min.getTime() <= Date.parse(f.timestamp_fim)) &&
    (f.sequence_inicio === undefined || s.sequence_max >= f.sequence_inicio) &&
    (f.sequence_fim === undefined || s.sequence_min <= f.sequence_fim) &&
    (f.apos_sequence === undefined || s.sequence_max > f.apos_sequence)
  );
}

const porSequence = (a: EventoDoLog, b: EventoDoLog): number =>
  a.sequence_number < b.sequence_number ? -1 : a.sequence_number > b.sequence_number ? 1 : 0;

/** Rows of both places in sequence order, each sequence once (a month moving mid-read is seen twice). */
function juntar(a: EventoDoLog[], b: EventoDoLog[]): EventoDoLog[] {
  if (b.length === 0) return a;
  const out: EventoDoLog[] = [];
  for (const e of [...a, ...b].sort(porSequence)) if (out.at(-1)?.sequence_number !== e.sequence_number) out.push(e);
  return out;
}

/** The checked form of `replayDeSequence`'s starting point (`BAD_REQUEST` when it is not one). */
export const cursorValidado = (deSequence: number | bigint): bigint => BigInt(seq(deSequence, 'deSequence') ?? '0');

/**
 * Reads of `core.event_log` and `core.dead_letter_queue` with the seed's semantics
 * (sections 4.3–4.5). Every query is parameterised and served by the seed's indexes.
 */
export class EventLogReader {
  /** Estimated totals per filter (its WHERE clause, values included), until `ate`. */
  private readonly estimativas = new Map<string, { total: number; ate: number }>();
  /** Whether the last read found archived months (how `consultarEventos` cuts its page). */
  private haArquivo = false;

  /**
   * @param arquivo reads of archived months (docs/archive.md): every read below also finds rows
   *   whose month is in the cold archive, marked `arquivado: true`. Default: files in memory 4,
   *   S3 settings from the environment.
   */
  constructor(
    private readonly pool: pg.Pool,
    private readonly logger: Logger,
    private readonly arquivo: LogArquivado = new LogArquivado(),
  ) {}

  /**
   * The archived files a read must look at besides PostgreSQL, from two listings: one taken
   * before and one after the read of PostgreSQL (`antes` / `depois`). A month archived or
   * restored between them is then found in one place or the other, never in neither (the
   * archive's record and the partition change in one transaction).
   */
  private segmentos(): Promise<SegmentoArquivado[]> {
    return listarSegmentos(this.pool);
  }

  /** Archived rows of `segs` matching `aceita`, above `apos`, at most `limite` (all when undefined). */
  private async arquivadas(
    segs: SegmentoArquivado[],
    apos: bigint,
    aceita: (e: EventoDoLog) => boolean,
    limite?: number,
  ): Promise<EventoDoLog[]> {
    const out: EventoDoLog[] = [];
    // with `limite` rows kept, nothing starting after the last of them can enter the result
    const cheio = (from: bigint): boolean => {
      if (limite === undefined || out.length < limite) return false;
      out.sort(porSequence);
      out.length = limite;
      return from > (out.at(-1) as EventoDoLog).sequence_number;
    };
    for (const s of segs) {
      if (s.sequence_max <= apos) continue;
      if (cheio(s.sequence_min)) break; // files are in sequence_min order
      for (const g of await this.arquivo.grupos(s)) {
        if (g.sequence_max <= apos) continue;
        if (cheio(g.sequence_min)) break;
        const rows = await this.arquivo.linhasDoGrupo(s, g);
        let i = 0;
        let hi = rows.length;
        while (i < hi) {
          const mid = (i + hi) >> 1;
          if (BigInt((rows[mid] as LogRow).sequence_number) <= apos) i = mid + 1;
          else hi = mid;
        }
        // rows ascend within a group: past `limite` of them, none can be among the smallest
        for (let added = 0; i < rows.length && (limite === undefined || added < limite); i++) {
          const e = eventoArquivado(rows[i] as LogRow);
          if (aceita(e)) {
            out.push(e);
            added++;
          }
        }
      }
    }
    out.sort(porSequence);
    if (limite !== undefined && out.length > limite) out.length = limite;
    return out;
  }

  /**
   * One page of the log matching every filter, in sequence order (seed 4.3). The page is one
   * indexed query (`limite + 1` rows, to know whether a next page exists); `total` is counted
   * with a bounded query (at most `LIMITE_TOTAL_EXATO + 1` index entries read) and, above the
   * bound, estimated by the planner — so a broad filter costs the same at 1M rows as at 10M.
   */
  async consultarEventos(filtros: ConsultarEventosDto = {}): Promise<ResultadoPaginado<EventoDoLog>> {
    const f = filtrosValidados(filtros);
    const where: string[] = [];
    // checked values as escaped literals: the whole read is one simple query (below)
    const add = (sql: string, v: string): void => void where.push(sql.replace('?', () => escapeLiteral(v)));
    if (f.tipo !== undefined) add('tipo = ?', f.tipo);
    if (f.origem !== undefined) add('origem = ?', f.origem);
    if (f.correlacao_id !== undefined) add('correlacao_id = ?::uuid', f.correlacao_id);
    // a tenant: event_log_tenant_idx (partial, in sequence order)
    if (f.tenant_id === null) where.push('tenant_id IS NULL');
    else if (f.tenant_id !== undefined) add('tenant_id = ?::uuid', f.tenant_id);
    if (f.timestamp_inicio !== undefined) add('timestamp >= ?::timestamptz', f.timestamp_inicio);
    if (f.timestamp_fim !== undefined) add('timestamp <= ?::timestamptz', f.timestamp_fim);
    if (f.sequence_inicio !== undefined) add('sequence_number >= ?::bigint', f.sequence_inicio.toString());
    if (f.sequence_fim !== undefined) add('sequence_number <= ?::bigint', f.sequence_fim.toString());
    // served by event_log_payload_idx (GIN, jsonb_path_ops)
    if (f.payload !== undefined) add('payload @> ?::jsonb', JSON.stringify({ [f.payload.campo]: f.payload.valor }));
    const w = where.length ? `WHERE ${where.join(' AND ')}` : '';
    // the cursor narrows the page, not the total
    if (f.apos_sequence !== undefined) add('sequence_number > ?::bigint', f.apos_sequence.toString());
    const pw = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const estimado = this.estimativaGuardada(w);
    // With archived months, PostgreSQL's part of the page is merged with theirs: it is read from
    // the first matching row (`deslocamento` applied after the merge). Whether there are any is
    // known from the previous read; a read that finds it changed reads again (below).
    const comArquivo = this.haArquivo;
    const [limite, deslocamento] = comArquivo ? [f.deslocamento + f.limite + 1, 0] : [f.limite + 1, f.deslocamento];
    // One round trip: the archive listed before the page, the bounded count (unless an estimate is
    // kept), the page, the archive listed again after it (see `segmentos`). Each statement of a
    // simple query takes its own snapshot, in this order.
    const consultas = [
      SQL_SEGMENTOS,
      ...(estimado ? [] : [sqlContagem(w)]),
      sqlDaPagina(
        pw,
        String(limite),
        String(deslocamento),
        f.timestamp_inicio !== undefined || f.timestamp_fim !== undefined || f.deslocamento > 0,
      ),
      SQL_SEGMENTOS,
    ];
    const resultados = (await this.pool.query(consultas.join(';\n'))) as unknown as pg.QueryResult[];
    const antes = segmentosDasLinhas((resultados[0] as pg.QueryResult<SegmentoRow>).rows);
    const depois = segmentosDasLinhas((resultados.at(-1) as pg.QueryResult<SegmentoRow>).rows);
    const page = resultados.at(-2) as pg.QueryResult<LogRow>;
    this.haArquivo = antes.length > 0 || depois.length > 0;
    const total =
      estimado ??
      (await this.totalContado(w, Number((resultados[1] as pg.QueryResult<{ n: number }>).rows[0]?.n ?? 0)));
    // the total counts archived rows before the cursor too; the page only those after it
    const doFiltro = uniao(antes, depois).filter((sg) => segmentoPodeConter({ ...f, apos_sequence: undefined }, sg));
    const segs = doFiltro.filter((sg) => f.apos_sequence === undefined || sg.sequence_max > f.apos_sequence);
    if (!comArquivo) {
      if (antes.length === 0 && doFiltro.length === 0) {
        const { linhas, proximo_cursor } = pagina(page.rows.map(eventoDoLog), f.limite);
        return { linhas, ...total, limite: f.limite, deslocamento: f.deslocamento, proximo_cursor };
      }
      // a month was archived before or while this read ran, and its page was cut with OFFSET: read again
      return this.consultarEventos(filtros);
    }
    const aceita = (e: EventoDoLog): boolean => correspondeAosFiltros(f, e);
    const apos = f.apos_sequence ?? -1n;
    const arquivadas = segs.length ? await this.arquivadas(segs, apos, aceita, f.deslocamento + f.limite + 1) : [];
    const todas = juntar(page.rows.map(eventoDoLog), arquivadas);
    const { linhas, proximo_cursor } = pagina(todas.slice(f.deslocamento, f.deslocamento + f.limite + 1), f.limite);
    const noArquivo = await this.totalArquivado(f, doFiltro);
    return {
      linhas,
      total: total.total + noArquivo.total,
      total_exato: total.total_exato && noArquivo.total_exato,
      limite: f.limite,
      deslocamento: f.deslocamento,
      proximo_cursor,
    };
  }

  /**
   * Archived rows matching the filter: a file the filter covers whole (only sequence and time
   * bounds, around its ranges) counts its manifest's rows; others are read and counted, up to
   * `MAX_ARQUIVOS_CONTADOS` files — beyond them each counts its rows as an upper bound and the
   * total is marked inexact.
   */
  private async totalArquivado(
    f: FiltrosValidados,
    segs: SegmentoArquivado[],
  ): Promise<{ total: number; total_exato: boolean }> {
    const soLimites =
      f.tipo === undefined &&
      f.origem === undefined &&
      f.correlacao_id === undefined &&
      f.tenant_id === undefined &&
      f.payload === undefined;
    let total = 0;
    let exato = true;
    let lidos = 0;
    for (const sg of segs) {
      const cobre =
        soLimites &&
        (f.sequence_inicio === undefined || f.sequence_inicio <= sg.sequence_min) &&
        (f.sequence_fim === undefined || f.sequence_fim >= sg.sequence_max) &&
        (f.timestamp_inicio === undefined || Date.parse(f.timestamp_inicio) <= sg.timestamp_min.getTime()) &&
        (f.timestamp_fim === undefined || Date.parse(f.timestamp_fim) >= sg.timestamp_max.getTime());
      if (cobre) total += sg.linhas;
      else if (lidos++ < MAX_ARQUIVOS_CONTADOS)
        for (const g of await this.arquivo.grupos(sg))
          total += (await this.arquivo.linhasDoGrupo(sg, g)).filter((r) =>
            correspondeAosFiltros(f, eventoDoLog(r)),
          ).length;
      else {
        total += sg.linhas;
        exato = false;
      }
    }
    return { total, total_exato: exato };
  }

  /**
   * `total` is exact up to `LIMITE_TOTAL_EXATO` (a count that stops there, `sqlContagem`); above,
   * the planner's row estimate — kept `ESTIMATIVA_VALIDA_MS` per filter: the log only grows, so a
   * filter that matched more than the bound still does, and its next pages skip the bounded count
   * (10,001 index entries) and the EXPLAIN. An exact total is never reused.
   */
  private estimativaGuardada(where: string): { total: number; total_exato: false } | undefined {
    const cached = this.estimativas.get(where);
    if (cached && cached.ate > Date.now()) return { total: cached.total, total_exato: false };
    this.estimativas.delete(where);
    return undefined;
  }

  /** The total from the bounded count `n` of `where`: `n` itself, or past the bound the estimate (kept). */
  private async totalContado(where: string, n: number): Promise<{ total: number; total_exato: boolean }> {
    if (n <= LIMITE_TOTAL_EXATO) return { total: n, total_exato: true };
    const plan = await this.pool.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
      `EXPLAIN (FORMAT JSON) SELECT 1 FROM core.event_log ${where}`,
    );
    const total = Math.max(Math.round(plan.rows[0]?.['QUERY PLAN'][0]?.Plan['Plan Rows'] ?? 0), LIMITE_TOTAL_EXATO + 1);
    // the filters estimated longest ago go first past 1,000 kept
    setNewest(this.estimativas, where, { total, ate: Date.now() + ESTIMATIVA_VALIDA_MS }, 1000);
    return { total, total_exato: false };
  }

  async obterEventoPorId(eventId: string): Promise<EventoDoLog | null> {
    if (!isUuid(eventId)) return null;
    const { rows } = await this.pool.query<LogRow>(`SELECT ${COLUMNS} FROM core.event_log WHERE event_id = $1`, [
      eventId,
    ]);
    if (rows[0]) return eventoDoLog(rows[0]);
    const r = await this.arquivada(eventId);
    return r ? eventoArquivado(r) : null;
  }

  /**
   * An archived event by id: `core.event_ids` (which archiving keeps) gives its sequence number,
   * the archive's record the file that holds it. `null` when it is in neither.
   */
  private async arquivada(eventId: string): Promise<LinhaDoLog | null> {
    const { rows } = await this.pool.query<{ s: string }>(
      'SELECT sequence_number::text AS s FROM core.event_ids WHERE event_id = $1',
      [eventId],
    );
    if (!rows[0]) return null;
    const seqn = BigInt(rows[0].s);
    for (const sg of await this.segmentos()) {
      if (seqn < sg.sequence_min || seqn > sg.sequence_max) continue;
      for (const g of await this.arquivo.grupos(sg)) {
        if (seqn < g.sequence_min || seqn > g.sequence_max) continue;
        const found = (await this.arquivo.linhasDoGrupo(sg, g)).find((l) => l.event_id === eventId);
        if (found) return found;
      }
    }
    return null;
  }

  /**
   * Events with `sequence_number > deSequence`, ascending, optionally of some types: read in
   * batches of 1000, at most 100 batches (a warning at the cap), accumulated (seed 4.4). For
   * large ranges prefer `replayStream`, which never holds the range in memory.
   */
  async replayDeSequence(deSequence: number | bigint, tipos?: string[]): Promise<EventoDoLog[]> {
    const out: EventoDoLog[] = [];
    let batches = 0;
    for await (const lote of this.lotes(deSequence, tipos)) {
      out.push(...lote);
      batches++;
      if (batches >= MAX_LOTES_REPLAY) {
        this.logger.warn('replay iteration ceiling reached', {
          de_sequence: String(deSequence),
          eventos: out.length,
        });
        break;
      }
      if (batches % 10 === 0)
        this.logger.info('replay in progress', { eventos: out.length, ate: String(out.at(-1)?.sequence_number) });
    }
    return out;
  }

  /** The same range as `replayDeSequence`, one event at a time, batch by batch (no cap). */
  async *replayStream(deSequence: number | bigint, tipos?: string[]): AsyncGenerator<EventoDoLog> {
    for await (const lote of this.lotes(deSequence, tipos)) yield* lote;
  }

  private async *lotes(deSequence: number | bigint, tipos?: string[]): AsyncGenerator<EventoDoLog[]> {
    let cursor = cursorValidado(deSequence);
    const aceita = tipos && tipos.length > 0 ? (e: EventoDoLog) => tipos.includes(e.tipo) : () => true;
    const util = (sg: SegmentoArquivado): boolean =>
      sg.sequence_max > cursor && (!tipos || tipos.length === 0 || sg.tipos.some((t) => tipos.includes(t)));
    let antes = await this.segmentos();
    for (;;) {
      // archived rows first: a full batch of them bounds what PostgreSQL must return
      const lidos = antes.filter(util);
      const doArquivo = lidos.length ? await this.arquivadas(lidos, cursor, aceita, LOTE_REPLAY) : [];
      const teto = doArquivo.length >= LOTE_REPLAY ? (doArquivo.at(-1) as EventoDoLog).sequence_number : undefined;
      const params: unknown[] = [cursor.toString(), LOTE_REPLAY];
      const filtro = tipos && tipos.length > 0 ? (params.push(tipos), `AND tipo = ANY($${params.length}::text[])`) : '';
      const limite =
        teto === undefined ? '' : (params.push(teto.toString()), `AND sequence_number < $${params.length}::bigint`);
      const { rows } = await this.pool.query<LogRow>(
        `SELECT ${COLUMNS} FROM core.event_log WHERE sequence_number > $1::bigint ${filtro} ${limite} ORDER BY event_log.sequence_number LIMIT $2`,
        params,
      );
      // files recorded while PostgreSQL was read (a month archived meanwhile) are read too
      const depois = await this.segmentos();
      const novos = depois.filter(
        (sg) => util(sg) && !lidos.some((l) => l.destino === sg.destino && l.arquivo === sg.arquivo),
      );
      antes = depois;
      let lote = juntar(rows.map(eventoDoLog), doArquivo);
      if (novos.length) lote = juntar(lote, await this.arquivadas(novos, cursor, aceita, LOTE_REPLAY));
      if (lote.length > LOTE_REPLAY) lote = lote.slice(0, LOTE_REPLAY);
      if (lote.length === 0) return;
      yield lote;
      cursor = (lote.at(-1) as EventoDoLog).sequence_number;
      if (lote.length < LOTE_REPLAY) return;
    }
  }

  /** The event ids of a flow's archived events (none read when nothing is archived). */
  async idsArquivadosDoFluxo(correlacaoId: string): Promise<string[]> {
    const segs = await this.segmentos();
    if (segs.length === 0) return [];
    const c = correlacaoId.toLowerCase();
    return (await this.arquivadas(segs, -1n, (e) => e.correlacao_id === c)).map((e) => e.event_id);
  }

  /** Where the event was in Kafka (topic, partition, offset), as the bridge logged it; null when unknown. */
  async obterPosicaoKafka(eventId: string): Promise<{ topic: string; partition: number; offset: string } | null> {
    if (!isUuid(eventId)) bad('event_id must be a UUID');
    const { rows } = await this.pool.query<{ topic: string | null; partition: number | null; offset: string | null }>(
      `SELECT kafka_topic AS topic, kafka_partition AS partition, kafka_offset::text AS offset
         FROM core.event_log WHERE event_id = $1`,
      [eventId],
    );
    const r =
      rows[0] ??
      (await this.arquivada(eventId).then((a) =>
        a ? { topic: a.kafka_topic, partition: a.kafka_partition, offset: a.kafka_offset } : undefined,
      ));
    return r?.topic != null && r.partition != null && r.offset != null
      ? { topic: r.topic, partition: r.partition, offset: r.offset }
      : null;
  }

  async obterMaiorSequence(): Promise<bigint> {
    const { rows } = await this.pool.query<{ s: string | null }>(
      `SELECT greatest((SELECT max(sequence_number) FROM core.event_log),
                       (SELECT max(sequence_max) FROM core.event_log_arquivo))::text AS s`,
    );
    return BigInt(rows[0]?.s ?? '0');
  }

  async obterUltimoEventId(): Promise<string | null> {
    const { rows } = await this.pool.query<{ id: string }>(
      'SELECT event_id::text AS id FROM core.event_log ORDER BY event_log.sequence_number DESC LIMIT 1',
    );
    return rows[0]?.id ?? null;
  }

  async obterEstatisticasDLQ(): Promise<DLQEstatisticas> {
    const { rows } = await this.pool.query<{ colonia: string; n: string }>(
      `SELECT colonia, count(*) AS n FROM core.dead_letter_queue WHERE status IN ('pendente', 'retrying') GROUP BY colonia`,
    );
    const pendentes_por_colonia: Record<string, number> = {};
    for (const r of rows) pendentes_por_colonia[r.colonia] = Number(r.n);
    return { pendentes_por_colonia, total_pendentes: rows.reduce((n, r) => n + Number(r.n), 0) };
  }

  async obterPendentesDLQ(colonia: string): Promise<DLQEntrada[]> {
    const { rows } = await this.pool.query<
      Omit<DLQEntrada, 'sequence_number' | 'ultima_tentativa' | 'criado_em'> & {
        sequence_number: string;
        ultima_tentativa: Date;
        criado_em: Date;
      }
    >(
      `SELECT id::text, event_id::text, sequence_number::text, colonia, handler_nome, mensagem_erro, tentativas, ultima_tentativa, status, criado_em
         FROM core.dead_letter_queue WHERE colonia = $1 AND status = 'pendente' ORDER BY dead_letter_queue.sequence_number`,
      [colonia],
    );
    return rows.map((r) => ({
      ...r,
      sequence_number: BigInt(r.sequence_number),
      ultima_tentativa: r.ultima_tentativa.toISOString(),
      criado_em: r.criado_em.toISOString(),
    }));
  }
}
