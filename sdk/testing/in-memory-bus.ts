import { randomUUID } from 'node:crypto';
import { SchemaCatalog } from '../catalog/catalog';
import { HandlerTimeoutError, FeromoniosError } from '../errors';
import { withHandlerTimeout } from '../consuming/handler-timeout';
import { comContextoCausal } from '../runtime/causal-context';
import type { Barramento } from '../contract';
import type { EventoConsultado, PublicarEventoDto } from '../contract';
import {
  ContextoDaTentativa,
  MAX_MANIPULADORES_POR_TIPO,
  defaultOpcoesInscricao,
  type ManipuladorEvento,
  type OpcoesInscricao,
} from '../consuming/subscriber';
import {
  cursorValidado,
  filtrosValidados,
  correspondeAosFiltros,
  pagina,
  type ConsultarEventosDto,
  type DLQEntrada,
  type DLQEstatisticas,
  type EventoDoLog,
  type ResultadoPaginado,
} from '../log/event-log-reader';
import { eventoValidado, validarEvento, type EventoValidado } from '../publishing/validation';
import { backoffDelay, sleep } from '../runtime/retry';
import { scrubText } from '../wire/error-text';
import { redactPayload, type OpcoesRedacao } from '../wire/redaction';
import { colonyCodeProblem } from '../wire/storable';

/** Options of an `InMemoryEventBus`; all optional. */
export interface OpcoesBarramentoEmMemoria {
  /** Folder of the schema catalog (default: the one the SDK ships). */
  schemasDir?: string;
  /** How reads redact payloads, as the bridge does (default: a fixed test key, coordinates to 2 decimals). */
  redacao?: OpcoesRedacao;
  /**
   * Wait the handlers' backoff between in-place retries, as the real bus does. Default `false`:
   * retries run at once, so a test of a failing handler takes no time.
   */
  esperarBackoff?: boolean;
}

interface Inscricao {
  tipo: string;
  colonia: string;
  nome: string;
  manipulador: ManipuladorEvento;
  opcoes: typeof defaultOpcoesInscricao;
}

/** A handler outcome the in-memory bus recorded (`aguardarEntregas` waits for all of them). */
export interface EntregaRegistrada {
  event_id: string;
  tipo: string;
  colonia: string;
  manipulador: string;
  resultado: 'sucesso' | 'duplicado' | 'dlq';
  tentativas: number;
}

const TEST_REDACTION: OpcoesRedacao = { key: 'feromonios-in-memory-bus-test-key', coordinateDecimals: 2 };

/**
 * The bus, in memory, for colonies' unit tests: the same `Barramento` interface as `EventBus`
 * with the MVP's semantics and none of its services. Same catalog, same validation order and
 * typed errors (`validarEvento`); `sequence_number` assigned at publish; handlers run in-process
 * under the same protection (in-place retries, timeout, then a DLQ entry kept in memory); each
 * event once per colony and handler (the inbox's guarantee); reads return the redacted payload,
 * as the log does, through the same filter checks as the SQL reader. Deterministic: deliveries
 * run in publish order, one colony after another; `aguardarEntregas()` resolves when every
 * delivery has settled; no timer outlives a delivery.
 *
 * ```ts
 * const bus = new InMemoryEventBus();
 * bus.inscrever('demanda.categorizada', 'D-4', onCategorizada);
 * await bus.publicar({ tipo: 'demanda.categorizada', origem: 'D-3', payload });
 * await bus.aguardarEntregas();
 * expect(bus.mortos('D-4')).toEqual([]);
 * ```
 *
 * The contract suite (test/contract/) runs the same behaviours against this bus and the real
 * one, so the two cannot drift.
 */
export class InMemoryEventBus implements Barramento {
  readonly catalog: SchemaCatalog;
  private readonly redacao: OpcoesRedacao;
  private readonly esperarBackoff: boolean;
  private readonly log: EventoDoLog[] = [];
  private readonly byId = new Map<string, EventoDoLog>();
  private readonly inscricoes: Inscricao[] = [];
  private readonly processados = new Set<string>();
  private readonly entregas: EntregaRegistrada[] = [];
  private readonly dlq: DLQEntrada[] = [];
  private readonly abort = new AbortController();
  private sequence = 0n;
  private pendentes: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(opcoes: OpcoesBarramentoEmMemoria = {}) {
    this.catalog = SchemaCatalog.load(opcoes.schemasDir);
    this.redacao = opcoes.redacao ?? TEST_REDACTION;
    this.esperarBackoff = opcoes.esperarBackoff ?? false;
  }

  async publicar(dto: PublicarEventoDto): Promise<EventoConsultado> {
    const [evento] = await this.publish([dto], false);
    return evento as EventoConsultado;
  }

  /** Validates every event first (none is published if one fails, its `index` named), then publishes in order. */
  publicarLote(dtos: PublicarEventoDto[]): Promise<EventoConsultado[]> {
    return this.publish(dtos, true);
  }

  private async publish(dtos: PublicarEventoDto[], batch: boolean): Promise<EventoConsultado[]> {
    this.assertOpen();
    if (!Array.isArray(dtos)) throw new FeromoniosError('INVALID_FIELD', 'publicarLote expects an array of events');
    const validados = dtos.map((dto, i) => validarEvento(dto, this.catalog, batch ? i : undefined));
    await Promise.resolve(); // asynchronous like the real bus: a caller never relies on sync effects
    return validados.map((v) => this.append(v));
  }

  inscrever(tipo: string, colonia: string, manipulador: ManipuladorEvento, opcoes: OpcoesInscricao = {}): void {
    this.assertOpen();
    if (typeof manipulador !== 'function') throw new FeromoniosError('INVALID_FIELD', 'manipulador must be a function');
    if (!this.catalog.tipo(tipo))
      throw new FeromoniosError('UNKNOWN_TYPE', `Tipo de evento não registrado no Registry: '${tipo}'`);
    const problem = colonyCodeProblem(colonia);
    if (problem) throw new FeromoniosError('INVALID_FIELD', `colonia ${problem}`);
    const doTipo = this.inscricoes.filter((i) => i.colonia === colonia && i.tipo === tipo).length;
    if (doTipo >= MAX_MANIPULADORES_POR_TIPO)
      throw new FeromoniosError(
        'INVALID_FIELD',
        `colony ${colonia} already has ${MAX_MANIPULADORES_POR_TIPO} handlers for ${tipo}`,
      );
    const { inbox: _inbox, ...rest } = opcoes; // no database here: every handler gets the inbox's once-only guarantee
    this.inscricoes.push({
      tipo,
      colonia,
      nome: manipulador.name || `anônimo#${doTipo + 1}`,
      manipulador,
      opcoes: { ...defaultOpcoesInscricao, ...rest },
    });
  }

  /** Subscriptions take effect at once in memory. */
  inscricoesProntas(): Promise<void> {
    return Promise.resolve();
  }

  consultarEventos(filtros: ConsultarEventosDto = {}): Promise<ResultadoPaginado<EventoDoLog>> {
    return this.read(() => {
      const f = filtrosValidados(filtros);
      const rows = this.log.filter((e) => correspondeAosFiltros(f, e));
      const after = f.apos_sequence;
      const from = after === undefined ? rows : rows.filter((e) => e.sequence_number > after);
      const { linhas, proximo_cursor } = pagina(from.slice(f.deslocamento, f.deslocamento + f.limite + 1), f.limite);
      return {
        linhas: linhas.map(copy),
        // counted, never estimated: the in-memory log is small
        total: rows.length,
        total_exato: true,
        limite: f.limite,
        deslocamento: f.deslocamento,
        proximo_cursor,
      };
    });
  }

  obterEventoPorId(eventId: string): Promise<EventoDoLog | null> {
    return this.read(() => {
      const e = typeof eventId === 'string' ? this.byId.get(eventId.toLowerCase()) : undefined;
      return e ? copy(e) : null;
    });
  }

  replayDeSequence(deSequence: number | bigint, tipos?: string[]): Promise<EventoDoLog[]> {
    return this.read(() => this.range(cursorValidado(deSequence), tipos));
  }

  async *replayStream(deSequence: number | bigint, tipos?: string[]): AsyncGenerator<EventoDoLog> {
    this.assertOpen();
    const from = cursorValidado(deSequence);
    await Promise.resolve();
    yield* this.range(from, tipos);
  }

  obterMaiorSequence(): Promise<bigint> {
    return this.read(() => this.log.at(-1)?.sequence_number ?? 0n);
  }

  obterUltimoEventId(): Promise<string | null> {
    return this.read(() => this.log.at(-1)?.event_id ?? null);
  }

  obterEstatisticasDLQ(): Promise<DLQEstatisticas> {
    return this.read(() => {
      const pendentes_por_colonia: Record<string, number> = {};
      for (const d of this.dlq) pendentes_por_colonia[d.colonia] = (pendentes_por_colonia[d.colonia] ?? 0) + 1;
      return { pendentes_por_colonia, total_pendentes: this.dlq.length };
    });
  }

  obterPendentesDLQ(colonia: string): Promise<DLQEntrada[]> {
    return this.read(() => this.mortos(colonia));
  }

  /** Waits for handlers in flight to settle (at their timeout at worst), then refuses every call with `BUS_CLOSED`. */
  async encerrar(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pendentes;
    this.abort.abort();
  }

  // ---- helpers for tests ------------------------------------------------------------------

  /** Resolves when every delivery published so far has settled (success, duplicate or DLQ). */
  async aguardarEntregas(): Promise<void> {
    let seen: Promise<void>;
    do {
      seen = this.pendentes;
      await seen;
    } while (seen !== this.pendentes); // a handler that published: wait for those deliveries too
  }

  /** Every event published, in order (full payloads, as publishers sent them), optionally of one type. */
  publicados(tipo?: string): EventoConsultado[] {
    return this.log
      .filter((e) => tipo === undefined || e.tipo === tipo)
      .map((e) => ({ ...(this.originais.get(e.event_id) as EventoConsultado) }));
  }

  /** The DLQ entries of a colony (or of every colony), oldest first. */
  mortos(colonia?: string): DLQEntrada[] {
    return this.dlq.filter((d) => colonia === undefined || d.colonia === colonia).map((d) => ({ ...d }));
  }

  /** What each handler did with each event, in the order it happened. */
  entregasRegistradas(): EntregaRegistrada[] {
    return this.entregas.map((e) => ({ ...e }));
  }

  // ---- internals ------------------------------------------------------------------------

  private readonly originais = new Map<string, EventoConsultado>();

  private append(v: EventoValidado): EventoConsultado {
    const id = v.event_id.toLowerCase();
    const existing = this.byId.get(id);
    if (existing) {
      // published twice (a retry after a timeout): the log keeps one row, like the bridge
      return { ...eventoValidado(v), sequence_number: existing.sequence_number, criado_em: existing.criado_em };
    }
    const criado_em = new Date().toISOString();
    const full: EventoConsultado = {
      ...eventoValidado(v),
      event_id: id,
      timestamp: new Date(v.timestamp).toISOString(),
      sequence_number: ++this.sequence,
      criado_em,
    };
    const policy = this.catalog.tipo(v.tipo)?.redacao ?? { campos: {} };
    const row: EventoDoLog = {
      ...full,
      sequence_number: full.sequence_number as bigint,
      criado_em,
      payload: redactPayload(v.payload, policy, this.redacao),
      redigido: true,
    };
    this.log.push(row);
    this.byId.set(id, row);
    this.originais.set(id, structuredClone(full));
    this.deliver(full);
    return { ...full, payload: structuredClone(full.payload) };
  }

  /** Queues `evento` for every colony subscribed to its type, after what is already queued. */
  private deliver(evento: EventoConsultado): void {
    const colonias = [...new Set(this.inscricoes.filter((i) => i.tipo === evento.tipo).map((i) => i.colonia))];
    for (const colonia of colonias) {
      this.pendentes = this.pendentes.then(async () => {
        // live delivery carries the full payload, without a sequence (seed: null on live events)
        const live: EventoConsultado = { ...evento, sequence_number: null, criado_em: null };
        const handlers = this.inscricoes.filter((i) => i.colonia === colonia && i.tipo === evento.tipo);
        await Promise.all(handlers.map((h) => this.executarProtegido(h, live)));
      });
    }
  }

  private async executarProtegido(h: Inscricao, evento: EventoConsultado): Promise<void> {
    const key = `${h.colonia}|${h.nome}|${evento.event_id}`;
    const record = (resultado: EntregaRegistrada['resultado'], tentativas: number): void =>
      void this.entregas.push({
        event_id: evento.event_id,
        tipo: evento.tipo,
        colonia: h.colonia,
        manipulador: h.nome,
        resultado,
        tentativas,
      });
    if (this.processados.has(key)) return record('duplicado', 0);
    let lastErr: unknown;
    let attempt = 1;
    for (; attempt <= 1 + h.opcoes.tentativasExtras; attempt++) {
      try {
        await this.runWithTimeout(h, evento, attempt);
        this.processados.add(key);
        return record('sucesso', attempt);
      } catch (err) {
        lastErr = err;
        if (err instanceof HandlerTimeoutError) break;
        if (this.esperarBackoff && attempt <= h.opcoes.tentativasExtras)
          await sleep(
            backoffDelay(attempt, { initialMs: h.opcoes.backoffInicialMs, maxMs: h.opcoes.backoffMaxMs }),
            this.abort.signal,
          );
      }
    }
    const tentativas = Math.min(attempt, 1 + h.opcoes.tentativasExtras);
    const row = this.byId.get(evento.event_id) as EventoDoLog;
    const now = new Date().toISOString();
    this.dlq.push({
      id: randomUUID(),
      event_id: evento.event_id,
      sequence_number: row.sequence_number,
      colonia: h.colonia,
      handler_nome: h.nome,
      mensagem_erro: scrubText(lastErr instanceof Error ? lastErr.message : String(lastErr), evento.payload, 4000),
      tentativas: 1, // the seed's column: reprocessing attempts, 1 at entry (in-place retries are in entregasRegistradas)
      ultima_tentativa: now,
      status: 'pendente',
      criado_em: now,
    });
    record('dlq', tentativas);
  }

  private async runWithTimeout(h: Inscricao, evento: EventoConsultado, tentativa: number): Promise<void> {
    // as on the real bus: what the handler publishes is caused by this event
    const causa = { event_id: evento.event_id, correlacao_id: evento.correlacao_id, tenant_id: evento.tenant_id };
    await comContextoCausal(causa, () =>
      withHandlerTimeout(h.nome, h.opcoes.timeoutMs, this.abort.signal, (t) =>
        h.manipulador({ ...evento, payload: structuredClone(evento.payload) }, new ContextoDaTentativa(tentativa, t)),
      ),
    );
  }

  private range(from: bigint, tipos?: string[]): EventoDoLog[] {
    return this.log
      .filter((e) => e.sequence_number > from && (!tipos || tipos.length === 0 || tipos.includes(e.tipo)))
      .map(copy);
  }

  private read<T>(fn: () => T): Promise<T> {
    try {
      this.assertOpen();
      return Promise.resolve(fn());
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new FeromoniosError('BUS_CLOSED', 'this bus was closed with encerrar()');
  }
}

const copy = (e: EventoDoLog): EventoDoLog => ({ ...e, payload: structuredClone(e.payload) });
