import { comPrazo, isThenable, withHandlerTimeout, type Tentativa } from './handler-timeout';
import { backoffDelay, sleep } from '../runtime/retry';
import { setNewest } from '../runtime/bounded-map';
import type { Span } from '@opentelemetry/api';
import type { Consumer, EachBatchPayload, EachMessagePayload, Kafka, Message } from 'kafkajs';
import type { EventoConsultado } from '../contract';
import { brokerSecurityFailure, HandlerTimeoutError, FeromoniosError, isRetriable, type ErrorCode } from '../errors';
import type { EventDecoder } from '../wire/event-decoder';
import type { Logger } from '../runtime/logger';
import type { SdkMetrics } from '../runtime/metrics';
import { scrubText } from '../wire/error-text';
import { eventosPorTransacao, withInbox, withInboxEmLote, type OpcoesInbox } from './inbox';
import { DLQ_HEADERS, DLQ_OUTCOME_HEADER, REPROCESS_HEADERS } from '../wire/headers';
import { ensureTopics, withAdmin, type TopicNames, type TopicSettings } from '../wire/topics';
import { RetentionGapDetector } from './retention-gaps';
import type { PoolClient } from 'pg';
import {
  endSpan,
  handlerTraceparent,
  startConsumerSpan,
  traceParentOf,
  withActiveSpan,
  type TraceParent,
} from '../runtime/tracing';
import { comContextoCausal } from '../runtime/causal-context';
import { decodeValue, headerString, HEADER } from '../wire/wire-format';
import { isUuid } from '../wire/storable';
import { SessionProducer } from '../runtime/producer';

/** What a handler gets besides the event (optional second argument; seed handlers ignore it). */
export interface ContextoEntrega {
  /** 1 on the first try, then 2, 3… on in-place retries. */
  tentativa: number;
  /**
   * Aborted when the handler timed out or the bus is closing: stop work that can be stopped.
   * A getter, made when first read: destructure it or read it from the context (a spread copy
   * of the context does not carry it).
   */
  readonly signal: AbortSignal;
  /**
   * With `inbox`: the transaction (a `pg.PoolClient` after BEGIN) that also records the event
   * in the colony's inbox. Do the handler's writes through it; it commits when the handler
   * resolves and rolls back when it throws.
   */
  transacao?: PoolClient;
  /**
   * Set when this delivery is a reprocessing (`reentregarParaColonia`, the audit API): the
   * audited request's id, and `redigido: true` when the payload is the redacted log copy
   * (the DLQ topic no longer held the original), so fields the policy dropped are missing.
   */
  reprocessamento?: { pedido?: string; redigido: boolean };
}

/**
 * The `ContextoEntrega` of one attempt, as both buses build it. A class: `signal` is a getter on
 * its prototype, so the attempt's `AbortController` is made only when a handler reads it; an
 * object literal with that getter cost ~0.6 µs and ~600 bytes of garbage per delivered event (V8
 * builds such a literal as a dictionary, with a new accessor each time). A spread copy of the
 * context (`{ ...contexto }`) therefore carries no `signal`: read it from the context itself.
 */
export class ContextoDaTentativa implements ContextoEntrega {
  readonly #tentativa: Tentativa;

  constructor(
    readonly tentativa: number,
    t: Tentativa,
    readonly transacao?: PoolClient,
    readonly reprocessamento?: ContextoEntrega['reprocessamento'],
  ) {
    this.#tentativa = t;
  }

  get signal(): AbortSignal {
    return this.#tentativa.signal;
  }
}

/** One event on its way to one handler: what every attempt of that handler on it reads. */
interface Entrega {
  h: Inscricao;
  evento: EventoConsultado;
  topic: string;
  partition: number;
  message: EachMessagePayload['message'];
  unico: boolean;
  traceparent: TraceParent | undefined;
  reprocessamento: ContextoEntrega['reprocessamento'];
}

/** A failed attempt: the handler's error (or the deadline's). */
interface Falha {
  erro: unknown;
}

/** A colony's handler (seed 4.2): receives the event with its full payload. */
export type ManipuladorEvento = (evento: EventoConsultado, contexto: ContextoEntrega) => unknown;

export interface OpcoesInscricao {
  /** Longest a handler may run before it is failed as timed out and dead-lettered, in milliseconds. */
  timeoutMs?: number;
  /** In-place retries after the first failure (timeouts are not retried). */
  tentativasExtras?: number;
  /** First backoff between retries, in milliseconds; doubles each time up to `backoffMaxMs`. */
  backoffInicialMs?: number;
  /** Largest backoff between retries, in milliseconds. */
  backoffMaxMs?: number;
  /** Process each event once per handler across restarts (docs/consuming.md, "Inbox"). */
  inbox?: OpcoesInbox;
}

export const defaultOpcoesInscricao = {
  timeoutMs: 30_000,
  tentativasExtras: 2,
  backoffInicialMs: 100,
  backoffMaxMs: 2_000,
} satisfies Omit<Required<OpcoesInscricao>, 'inbox'>;

type ResolvedOpcoes = typeof defaultOpcoesInscricao & { inbox?: OpcoesInbox };

interface Inscricao {
  tipo: string;
  nome: string;
  manipulador: ManipuladorEvento;
  opcoes: ResolvedOpcoes;
}

export interface SubscriberDeps {
  kafka: Kafka;
  colonia: string;
  topics: TopicNames;
  topicSettings: TopicSettings;
  decoder: EventDecoder;
  logger: Logger;
  metrics: SdkMetrics;
  /** Partitions handled in parallel; order within each partition is always kept. */
  partitionsConcurrently: number;
  /** Recent event_ids remembered to drop duplicate deliveries. */
  dedupWindow: number;
  fromBeginning: boolean;
  sessionTimeoutMs: number;
}

/** Most handlers of one colony for one type (seed: `maxListeners: 30`). */
export const MAX_MANIPULADORES_POR_TIPO = 30;

/**
 * One colony's consumer group (`<ns>.colonia.<colonia>`). The `inscrever` calls a colony makes
 * at boot are joined once (on the next tick); a later call re-subscribes with the new topic.
 */
/** Why a colony's subscription is not consuming (`estadoDasInscricoes()`). */
export interface FalhaInscricao {
  /** `BROKER_AUTHORIZATION` (an ACL refused the group or a topic), `BROKER_AUTHENTICATION`, `BROKER_UNAVAILABLE`… */
  code: ErrorCode;
  /** For a security refusal: `group`, `topic`, `sasl`, `tls-…` (docs/security.md). */
  causa?: string;
  /** The broker's or the client's message, scrubbed, never a secret. */
  mensagem: string;
  /** When the subscription stopped consuming (ISO-8601). */
  desde: string;
  causaMetrica?: 'autorizacao' | 'autenticacao';
}

export class ColonySubscriber {
  private consumer: Consumer | undefined;
  private dlqProducer: SessionProducer | undefined;
  private subscribedTopics = new Set<string>();
  private syncing: Promise<void> = Promise.resolve();
  private readyWaiters: Array<() => void> = [];
  private ready = false;
  private running = false;
  private closed = false;
  /** Topics a consumer of this instance has started on (their start is pinned already). */
  private readonly started = new Set<string>();
  /** Every consumer created and not yet disconnected (close() disconnects them all). */
  private readonly consumers = new Set<Consumer>();
  /** Crashes since the consumer last joined (drives the restart backoff). */
  private crashes = 0;
  /**
   * Seeks this instance asked for (the only ones its consumers get: the consumer is private).
   * A fetch's loop asks kafkajs whether its partition was sought — a `JSON.stringify` of the
   * partition's key each time, ~3 % of a consuming thread when asked per message — at its start,
   * then per message only once a seek was asked meanwhile.
   */
  private seeks = 0;
  /** Why the subscription is not consuming (the last failure), until the group joins again. */
  private falha: FalhaInscricao | undefined;
  private readonly recent = new Map<string, true>();
  private readonly abort = new AbortController();
  /** The colony's subscriptions: the handlers of each type, in subscription order (read once per event). */
  private readonly porTipo = new Map<string, Inscricao[]>();
  /** Per type, the fewest `eventosPorTransacao` among its handlers: < 2 = each event alone. */
  private readonly lotePorTipo = new Map<string, number>();
  /** The colony's reprocessing topic (compared with every record's topic). */
  private readonly topicoReprocessar: string;

  constructor(private readonly d: SubscriberDeps) {
    this.topicoReprocessar = d.topics.reprocessar(d.colonia);
  }

  private manipuladoresDe(tipo: string | undefined): readonly Inscricao[] {
    return (tipo !== undefined && this.porTipo.get(tipo)) || [];
  }

  get groupId(): string {
    return this.d.topics.grupo(this.d.colonia);
  }

  add(tipo: string, manipulador: ManipuladorEvento, opcoes: OpcoesInscricao): void {
    const doTipo = this.manipuladoresDe(tipo).length;
    if (doTipo >= MAX_MANIPULADORES_POR_TIPO) {
      throw new FeromoniosError(
        'INVALID_FIELD',
        `colony ${this.d.colonia} already has ${MAX_MANIPULADORES_POR_TIPO} handlers for ${tipo}`,
      );
    }
    eventosPorTransacao(opcoes.inbox); // INVALID_FIELD now, not at the first event
    const inscricao: Inscricao = {
      tipo,
      nome: manipulador.name || `anônimo#${doTipo + 1}`,
      manipulador,
      opcoes: { ...defaultOpcoesInscricao, ...opcoes },
    };
    const doMesmoTipo = [...this.manipuladoresDe(tipo), inscricao];
    this.porTipo.set(tipo, doMesmoTipo);
    this.lotePorTipo.set(tipo, Math.min(...doMesmoTipo.map((i) => eventosPorTransacao(i.opcoes.inbox))));
    this.ready = false;
    this.requestSync();
  }

  /**
   * Coalesces the calls of one boot (subscribe once, on the next tick). A failed attempt — the
   * broker unreachable at boot, say — is retried with backoff until it succeeds or the bus
   * closes, and a later call never waits on a failed one: `syncing` never rejects.
   */
  private requestSync(delayMs = 0): void {
    this.syncing = this.syncing
      .catch(() => undefined)
      .then(() => (delayMs > 0 ? sleep(delayMs, this.abort.signal) : new Promise<void>((r) => setImmediate(r))))
      .then(() => this.syncUntilDone());
  }

  private async syncUntilDone(): Promise<void> {
    for (let attempt = 1; !this.closed; attempt++) {
      try {
        await this.sync();
        return;
      } catch (err) {
        const delay = backoffDelay(attempt, { initialMs: 500, maxMs: 30_000 });
        const falha = this.noteFailure(err);
        this.d.metrics.subscriberRestarts.inc({ colonia: this.d.colonia, causa: falha.causaMetrica ?? 'inscricao' });
        this.d.logger.error('subscription failed, retrying', {
          colonia: this.d.colonia,
          tentativa: attempt,
          delay_ms: delay,
          code: falha.code,
          ...(falha.causa ? { causa: falha.causa } : {}),
          error: falha.mensagem,
        });
        await sleep(delay, this.abort.signal);
      }
    }
  }

  /** Whether the colony's consumer is consuming now (false while it is being (re)started). */
  get consumindo(): boolean {
    return this.running;
  }

  /** The last failure of the subscription, while it is not consuming. */
  get ultimaFalha(): Omit<FalhaInscricao, 'causaMetrica'> | undefined {
    if (this.running || !this.falha) return undefined;
    const { causaMetrica: _, ...f } = this.falha;
    return f;
  }

  /**
   * Types a failure to subscribe or a crash: a refused credential or ACL (the broker names a
   * group or a topic this colony's principal may not use) is kept apart from a broker that is
   * only unreachable, in `estadoDasInscricoes()` and in the restart metric's `causa`.
   */
  private noteFailure(err: unknown): FalhaInscricao {
    const security = brokerSecurityFailure(err);
    this.falha = {
      code: security?.code ?? (err instanceof FeromoniosError ? err.code : 'BROKER_UNAVAILABLE'),
      ...(security ? { causa: security.causa } : {}),
      mensagem: scrubText((security ?? (err as Error)).message ?? String(err), undefined, 500),
      desde: this.falha?.desde ?? new Date().toISOString(),
      ...(security ? { causaMetrica: security.code === 'BROKER_AUTHORIZATION' ? 'autorizacao' : 'autenticacao' } : {}),
    };
    return this.falha;
  }

  /**
   * Resolves when the group has joined with every topic subscribed so far and its starting
   * offsets are fixed: an event published after this resolves is delivered.
   */
  async pronto(): Promise<void> {
    await this.syncing;
    if (this.ready) return;
    await new Promise<void>((r) => this.readyWaiters.push(r));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.abort.abort();
    await this.syncing.catch(() => undefined);
    await this.consumer?.disconnect(); // waits for the message in hand
    // any consumer a restart lost track of (none should be): disconnected, and said so
    const strays = [...this.consumers];
    if (strays.length > 0)
      this.d.logger.warn('consumers left behind, disconnected at close', {
        colonia: this.d.colonia,
        count: strays.length,
      });
    await Promise.all(strays.map((c) => c.disconnect().catch(() => undefined)));
    await this.dlqProducer?.close();
    this.keepLagOf({}); // a closed bus reports no partition
  }

  private async sync(): Promise<void> {
    if (this.closed) return;
    const topics = [
      ...[...this.porTipo.keys()].map((tipo) => this.d.topics.evento(tipo)),
      this.d.topics.reprocessar(this.d.colonia),
    ];
    if (this.consumer && topics.every((t) => this.subscribedTopics.has(t))) return;
    // one admin session: the topics exist, then — once the consumer replaced has committed on its
    // way out — the group's committed offsets: where this consumer resumes (below) and what the
    // retention-gap detector expects at its first join
    const pins = new Map<string, Map<number, string>>();
    const committed = await withAdmin(this.d.kafka, async (admin) => {
      // the DLQ topic is created at the first dead letter (dlqTopic()): a colony that never fails has none
      await ensureTopics(admin, topics, this.d.topicSettings);
      if (!this.dlqProducer) {
        const producer = new SessionProducer(this.d.kafka, this.d.logger);
        await producer.connect();
        this.dlqProducer = producer;
      }
      await this.consumer?.disconnect();
      const offsets = await admin.fetchOffsets({ groupId: this.groupId });
      // A topic this group never committed on starts at its end — once: that end is read now and
      // the consumer seeks there when it joins, which commits it (below). kafkajs alone keeps the
      // position it resolves in memory until the first commit, so a colony restarted before then
      // (a crash, a redeploy; a type that is rarely published) started at the end again — of
      // the moment it came back — and never saw what was published in between.
      // Only a topic this instance has not started on yet: a restart after a crash trusts
      // kafkajs's own reading of the committed offsets, never this one (a coordinator moving
      // under a network fault can answer "none" for a while, and a seek would then skip ahead).
      const fresh = this.d.fromBeginning
        ? []
        : topics.filter(
            (t) => !this.started.has(t) && !offsets.some((o) => o.topic === t && o.partitions.some(committedOffset)),
          );
      for (const topic of fresh)
        pins.set(topic, new Map((await admin.fetchTopicOffsets(topic)).map((e) => [e.partition, e.high])));
      return offsets;
    });
    const consumer: Consumer = this.d.kafka.consumer({
      groupId: this.groupId,
      allowAutoTopicCreation: false,
      // every restart is the SDK's (below, awaited by close()): kafkajs's own restarts a crashed
      // consumer on a timer nobody awaits, and a disconnect while that restart is joining does not
      // stop the join — the consumer would come back unowned after close() and fetch for ever
      retry: { restartOnFailure: () => Promise.resolve(false) },
      sessionTimeout: this.d.sessionTimeoutMs,
      heartbeatInterval: Math.min(3_000, Math.floor(this.d.sessionTimeoutMs / 3)),
      maxWaitTimeInMs: 100,
      // kafkajs fetches again only when a fetch's batches are all handled (no prefetch): a fetch of
      // 1 MB per partition (its default) left the colony's thread ~17 % idle reading a backlog;
      // 4 MB, as the bridge reads, measured 1.14–1.17× (the whole response stays capped at maxBytes, 10 MB)
      maxBytesPerPartition: 4 * 1024 * 1024,
    });
    // Ready = joined AND starting offsets resolved. A new group without `desdeOInicio` starts at
    // the end of each partition, resolved at the first fetch after the join (kafkajs emits FETCH
    // after resolving): declaring ready at GROUP_JOIN would let an event published right after
    // `inscricoesProntas()` fall before that starting point and never be delivered.
    let joined = false;
    this.consumers.add(consumer);
    consumer.on(consumer.events.DISCONNECT, () => this.consumers.delete(consumer));
    this.consumer = consumer; // before connecting: the events below belong to this consumer
    this.running = false;
    this.ready = false;
    // records retention deleted before this colony read them: counted and logged, then moved past
    const gaps = new RetentionGapDetector({
      committedAtStart: committed,
      groupId: this.groupId,
      admin: (fn) => withAdmin(this.d.kafka, fn),
      semCommit: 'nada', // a new group starts at the end by design: nothing was expected before
      onGap: (g) => this.d.metrics.retentionGap.inc({ colonia: this.d.colonia, topic: g.topico }, g.registros),
      logger: this.d.logger,
    });
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      joined = true;
      if (this.consumer !== consumer) return;
      this.running = true;
      this.crashes = 0;
      this.falha = undefined;
      // seeks are applied (and, auto-committing, committed) before the first fetch of each partition
      for (const [topic, partitions] of Object.entries(payload.memberAssignment))
        for (const partition of partitions) {
          const offset = pins.get(topic)?.get(partition);
          if (offset === undefined) continue;
          pins.get(topic)?.delete(partition);
          this.seeks++;
          consumer.seek({ topic, partition, offset });
        }
      pins.clear(); // a partition another instance took first has that instance's commits: never seek it back
      this.keepLagOf(payload.memberAssignment);
      gaps.joined(payload.memberAssignment);
    });
    // The colony's lag per assigned partition, from each fetch (no extra request to the broker),
    // counted as the committed-offset lag is: records not handled yet. kafkajs's offsetLagLow
    // (high watermark - 1 - first offset) leaves out the first record, not handled either.
    const lag = (topic: string, partition: number, value: number): void => {
      if (this.consumer === consumer) this.setLag(topic, partition, value);
    };
    consumer.on(consumer.events.START_BATCH_PROCESS, ({ payload: b }) => {
      lag(b.topic, b.partition, b.batchSize > 0 ? Number(b.offsetLagLow) + 1 : Number(b.offsetLag));
      if (this.consumer === consumer && b.batchSize > 0) gaps.batchStarted(b.topic, b.partition, b.firstOffset);
    });
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload: b }) => {
      lag(b.topic, b.partition, Number(b.offsetLag));
      if (this.consumer === consumer && b.batchSize > 0) gaps.batchEnded(b.topic, b.partition, b.lastOffset);
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (this.consumer !== consumer) return;
      this.running = false;
      const delay = backoffDelay(++this.crashes, { initialMs: 300, maxMs: 30_000 });
      const falha = this.noteFailure(payload.error);
      this.d.metrics.subscriberRestarts.inc({ colonia: this.d.colonia, causa: falha.causaMetrica ?? 'falha' });
      this.d.logger.error('consumer crashed', {
        colonia: this.d.colonia,
        code: falha.code,
        ...(falha.causa ? { causa: falha.causa } : {}),
        error: falha.mensagem,
        restart_ms: delay,
      });
      if (this.closed) return;
      // subscribe again from scratch after a backoff (crashes in a row double it)
      this.consumer = undefined;
      this.subscribedTopics = new Set();
      this.requestSync(delay);
    });
    consumer.on(consumer.events.FETCH, () => {
      // only this consumer's first fetch: the one it replaces may still fetch until it is
      // disconnected, and its fetches say nothing about the topics added since
      if (this.consumer !== consumer || !joined || this.ready) return;
      this.ready = true;
      this.readyWaiters.splice(0).forEach((r) => r());
    });
    try {
      await consumer.connect();
      // kafkajs's fromBeginning decides both where a new group starts and where a position that
      // retention overtook resumes. A topic the group already committed on resumes at the log
      // start (only what retention deleted is lost, reported as a retention gap); a topic it never
      // read starts at the end, unless desdeOInicio.
      const resumed = new Set(
        this.d.fromBeginning ? topics : committed.filter((t) => t.partitions.some(committedOffset)).map((t) => t.topic),
      );
      const resume = topics.filter((t) => resumed.has(t));
      const fresh = topics.filter((t) => !resumed.has(t));
      if (resume.length > 0) await consumer.subscribe({ topics: resume, fromBeginning: true });
      if (fresh.length > 0) await consumer.subscribe({ topics: fresh, fromBeginning: this.d.fromBeginning });
      await consumer.run({
        partitionsConsumedConcurrently: this.d.partitionsConcurrently,
        // offsets are resolved as messages are handled (handleBatch), never a whole fetch at once
        eachBatchAutoResolve: false,
        eachBatch: (payload) => this.handleBatch(payload),
      });
      // run() resolves after the first join (or its crash); close() waited for this sync, so a
      // consumer it did not see is stopped here
      if (this.closed) await consumer.disconnect();
    } catch (err) {
      this.consumer = undefined; // the retry starts from scratch
      await consumer.disconnect().catch(() => undefined);
      throw err;
    }
    this.subscribedTopics = new Set(topics);
    for (const t of topics) this.started.add(t);
  }

  /** Partitions whose lag this instance exports (its assignment): `topic\u0000partition`. */
  private readonly lagSeries = new Set<string>();

  private setLag(topic: string, partition: number, value: number): void {
    if (!Number.isFinite(value)) return;
    this.lagSeries.add(`${topic}\u0000${partition}`);
    this.d.metrics.consumerLag.set(
      { colonia: this.d.colonia, topic, partition: String(partition) },
      Math.max(0, value),
    );
  }

  /** After a rebalance: partitions another instance took are no longer this instance's to report. */
  private keepLagOf(assignment: Record<string, number[]>): void {
    const kept = new Set(Object.entries(assignment).flatMap(([t, ps]) => ps.map((p) => `${t}\u0000${p}`)));
    for (const key of [...this.lagSeries]) {
      if (kept.has(key)) continue;
      const [topic, partition] = key.split('\u0000') as [string, string];
      this.d.metrics.consumerLag.remove({ colonia: this.d.colonia, topic, partition });
      this.lagSeries.delete(key);
    }
  }

  private dlqReady: Promise<string> | undefined;

  /** The colony's DLQ topic, created the first time something is dead-lettered (a failure is retried next time). */
  private dlqTopic(): Promise<string> {
    const topic = this.d.topics.dlq(this.d.colonia);
    this.dlqReady ??= withAdmin(this.d.kafka, (admin) => ensureTopics(admin, [topic], this.d.topicSettings)).then(
      () => topic,
      (err: unknown) => {
        this.dlqReady = undefined;
        throw err;
      },
    );
    return this.dlqReady;
  }

  /**
   * One fetch of one partition, in offset order — kafkajs's own eachMessage loop (stop when the
   * consumer stops or the partition was sought; after each message resolve its offset, heartbeat,
   * commit when due) — except that consecutive events whose every handler batches its inbox
   * (`eventosPorTransacao` > 1) are handled together (`handleRun`), their offsets resolved after.
   *
   * Heartbeats go out only between messages (kafkajs #447), so a timer keeps the membership
   * alive while a long handler runs — one per fetch, not one per event — and the member is
   * neither evicted nor triggers a rebalance.
   */
  private async handleBatch(p: EachBatchPayload): Promise<void> {
    const { topic, partition, messages } = p.batch;
    const beat = setInterval(
      () => void p.heartbeat().catch(() => undefined),
      Math.min(2_000, this.d.sessionTimeoutMs / 4),
    );
    // kafkajs's heartbeat and commit check are async calls that act at most every few seconds:
    // asked between messages every BETWEEN_CHECKS_MS, and after the fetch's last one. The offset
    // of the last message handled is resolved before each of them and before the loop leaves
    // (done, stopped, sought, or an error on its way out): what kafkajs commits is the same.
    let checked = performance.now();
    let handled = -1;
    let resolved = -1;
    const resolve = (): void => {
      if (handled <= resolved) return;
      p.resolveOffset((messages[handled] as EachMessagePayload['message']).offset);
      resolved = handled;
    };
    const seeks = this.seeks;
    // whether any handler of this colony batches its inbox: if none (the usual case), no event's type is read for it
    const agrupa = topic !== this.topicoReprocessar && [...this.lotePorTipo.values()].some((n) => n > 1);
    try {
      for (let i = 0; i < messages.length;) {
        if (!p.isRunning() || ((i === 0 || this.seeks !== seeks) && p.isStale())) return;
        const message = messages[i] as EachMessagePayload['message'];
        // decided without decoding for a type no handler batches (the usual case): no run to build
        const run =
          agrupa && (this.lotePorTipo.get(headerString(message.headers, HEADER.type) ?? '') ?? 1) > 1
            ? await this.runAgrupavel(topic, partition, messages, i)
            : undefined;
        if (run && run.length > 1) await this.handleRun(topic, partition, run);
        else {
          // settled without a promise in the usual case (see handle): awaited only when it waits
          const waiting = this.handle(topic, partition, message);
          if (waiting) await waiting;
        }
        i += Math.max(1, run?.length ?? 0);
        handled = i - 1;
        if (i >= messages.length || performance.now() - checked >= BETWEEN_CHECKS_MS) {
          resolve();
          await p.heartbeat();
          await p.commitOffsetsIfNecessary();
          checked = performance.now();
        }
      }
    } finally {
      resolve();
      clearInterval(beat);
    }
  }

  /**
   * The events from `messages[from]` on that can share inbox transactions: live (not a
   * reprocessing), decoded, not seen just now, of types whose every handler has
   * `eventosPorTransacao` > 1 — at most the smallest of those. Stops at the first that cannot
   * (it is handled alone, by `handle`, which also dead-letters what does not decode).
   */
  private async runAgrupavel(
    topic: string,
    partition: number,
    messages: EachBatchPayload['batch']['messages'],
    from: number,
  ): Promise<Array<{ message: EachMessagePayload['message']; evento: EventoConsultado }>> {
    const run: Array<{ message: EachMessagePayload['message']; evento: EventoConsultado }> = [];
    if (topic === this.topicoReprocessar) return run;
    let max = Infinity;
    const ids = new Set<string>();
    for (let i = from; i < messages.length && run.length < max; i++) {
      const message = messages[i] as EachMessagePayload['message'];
      const tipo = headerString(message.headers, HEADER.type);
      const handlers = this.manipuladoresDe(tipo);
      const n = this.lotePorTipo.get(tipo ?? '') ?? 1;
      if (handlers.length === 0 || n < 2) break;
      let evento: EventoConsultado;
      try {
        const posicao = { topico: topic, particao: partition, offset: message.offset };
        evento = this.d.decoder.decodeKnown(message, posicao) ?? (await this.d.decoder.decode(message, posicao));
      } catch {
        break; // handled alone: dead-lettered, or retried by kafkajs when the registry is down
      }
      if (evento.tipo !== handlers[0]?.tipo || this.recent.has(evento.event_id) || ids.has(evento.event_id)) break;
      ids.add(evento.event_id);
      max = Math.min(max, n);
      run.push({ message, evento });
    }
    return run;
  }

  /**
   * Consecutive events of one partition, each of whose handlers batches its inbox: each handler
   * takes its events in one transaction (`loteDoManipulador`), handlers independently, as for
   * one event.
   */
  private async handleRun(
    topic: string,
    partition: number,
    run: Array<{ message: EachMessagePayload['message']; evento: EventoConsultado }>,
  ): Promise<void> {
    const porManipulador = new Map<Inscricao, typeof run>();
    for (const r of run)
      for (const h of this.manipuladoresDe(r.evento.tipo)) porManipulador.set(h, [...(porManipulador.get(h) ?? []), r]);
    await Promise.all([...porManipulador].map(([h, itens]) => this.loteDoManipulador(h, itens, topic, partition)));
    for (const r of run) this.remember(r.evento.event_id);
  }

  /**
   * One handler's events of a run in one inbox transaction (`withInboxEmLote`): one claim with
   * BEGIN, the handler once per new event (its own span and deadline), one COMMIT. When any of
   * them fails, everything rolls back and each event is handled again alone with the usual
   * protection (retries, timeout, DLQ) — so a failing event costs its handler one extra attempt,
   * and the others' writes are kept once.
   */
  private async loteDoManipulador(
    h: Inscricao,
    itens: Array<{ message: EachMessagePayload['message']; evento: EventoConsultado }>,
    topic: string,
    partition: number,
  ): Promise<void> {
    const feitos: Array<{ evento: EventoConsultado; segundos: number }> = [];
    let atual: EventoConsultado | undefined;
    try {
      const { jaProcessados } = await withInboxEmLote(
        h.opcoes.inbox as OpcoesInbox,
        itens.map(({ evento }) => ({ event_id: evento.event_id, manipulador: h.nome, tipo: evento.tipo })),
        async (transacao, i) => {
          const { evento, message } = itens[i] as (typeof itens)[number];
          atual = evento;
          const traceparent = traceParentOf(headerString(message.headers, HEADER.traceparent));
          const span = this.spanDoManipulador(h, evento, topic, partition, message, 1, traceparent);
          const t0 = process.hrtime.bigint();
          try {
            await comContextoCausal(this.causa(evento, span, traceparent), () =>
              withActiveSpan(span, () =>
                withHandlerTimeout(h.nome, h.opcoes.timeoutMs, this.abort.signal, (t) =>
                  h.manipulador(
                    { ...evento, payload: structuredClone(evento.payload) },
                    new ContextoDaTentativa(1, t, transacao),
                  ),
                ),
              ),
            );
          } catch (err) {
            endSpan(span, err);
            throw err;
          }
          endSpan(span);
          feitos.push({ evento, segundos: Number(process.hrtime.bigint() - t0) / 1e9 });
        },
      );
      // counted once committed: a rolled-back run is counted by the runs that replace it
      for (const f of feitos) this.observe(h, f.evento, 'success', f.segundos);
      for (const i of jaProcessados) this.observe(h, (itens[i] as (typeof itens)[number]).evento, 'duplicate', 0);
      this.d.metrics.inboxBatches.inc({ colonia: this.d.colonia, manipulador: h.nome, resultado: 'committed' });
    } catch (err) {
      this.d.metrics.inboxBatches.inc({ colonia: this.d.colonia, manipulador: h.nome, resultado: 'rolled_back' });
      this.d.logger.warn('inbox batch rolled back: its events are handled one transaction each', {
        event_id: atual?.event_id,
        correlacao_id: atual?.correlacao_id,
        colonia: this.d.colonia,
        manipulador: h.nome,
        eventos: itens.length,
        error: scrubText(err instanceof Error ? err.message : String(err), atual?.payload, 1000),
      });
      for (const { evento, message } of itens) await this.executarProtegido(h, evento, topic, partition, message);
    }
  }

  /**
   * One event alone: decoded (or dead-lettered), then every handler of its type, protected.
   *
   * Synchronous as far as the event allows: when its schema id is known (every record after its
   * schema's first) and its handlers return at once, it is settled before this returns
   * `undefined` — no promise, no timer (reading a backlog, each one was paid for every event under
   * AsyncLocalStorage's promise hooks). Otherwise a promise of the rest.
   */
  private handle(topic: string, partition: number, message: EachMessagePayload['message']): Promise<void> | undefined {
    const reprocess = topic === this.topicoReprocessar;
    // the redacted log copy (fields the policy dropped) skips the schema check — only when
    // the platform sent it back on the reprocessing topic, never for a header on a live topic
    const posicao = { topico: topic, particao: partition, offset: message.offset };
    const options =
      reprocess && headerString(message.headers, REPROCESS_HEADERS.redacted) === 'true' ? SEM_SCHEMA : COM_SCHEMA;
    let evento: EventoConsultado | undefined;
    try {
      evento = this.d.decoder.decodeKnown(message, posicao, options);
    } catch (err) {
      return this.naoDecodificado(topic, partition, message, err);
    }
    if (evento) return this.entregar(evento, topic, partition, message);
    return this.d.decoder.decode(message, posicao, options).then(
      (e) => this.entregar(e, topic, partition, message),
      (err: unknown) => this.naoDecodificado(topic, partition, message, err),
    );
  }

  /** A record the decoder refused: dead-lettered — unless the registry is down (kafkajs retries it). */
  private async naoDecodificado(
    topic: string,
    partition: number,
    message: EachMessagePayload['message'],
    err: unknown,
  ): Promise<void> {
    if (isRetriable(err)) throw err;
    await this.deadLetter(topic, partition, message, 'decodificador', err, 1);
  }

  /** A decoded event to its handlers (or its reprocessing); `undefined` when nothing was left to wait for. */
  private entregar(
    evento: EventoConsultado,
    topic: string,
    partition: number,
    message: EachMessagePayload['message'],
  ): Promise<void> | undefined {
    if (topic === this.topicoReprocessar) return this.reprocess(evento, topic, partition, message);
    if (this.recent.has(evento.event_id)) {
      this.d.metrics.consumed.inc({ tipo: evento.tipo, colonia: this.d.colonia, result: 'duplicate' });
      return undefined;
    }
    const handlers = this.manipuladoresDe(evento.tipo);
    // Each handler independently: one failing never affects another (seed 3.5).
    const feito =
      handlers.length === 1
        ? this.executarProtegido(handlers[0] as Inscricao, evento, topic, partition, message, { unico: true })
        : Promise.all(
            handlers.map((h) => Promise.resolve(this.executarProtegido(h, evento, topic, partition, message))),
          );
    if (!isThenable(feito)) {
      this.remember(evento.event_id);
      return undefined;
    }
    return Promise.resolve(feito).then(() => this.remember(evento.event_id));
  }

  /**
   * An event sent back for reprocessing: the named handler (or every handler of the type) runs
   * under the same protection; success is reported to the DLQ topic as `resolved`, failure as
   * a new failure record (the bridge increments `tentativas`).
   */
  private async reprocess(
    evento: EventoConsultado,
    topic: string,
    partition: number,
    message: EachMessagePayload['message'],
  ): Promise<void> {
    const only = headerString(message.headers, REPROCESS_HEADERS.handler);
    const handlers = this.manipuladoresDe(evento.tipo).filter((i) => !only || i.nome === only);
    if (handlers.length === 0) {
      const err = new FeromoniosError(
        'HANDLER_FAILED',
        `no handler '${only ?? '*'}' for ${evento.tipo} in ${this.d.colonia}`,
      );
      await this.deadLetter(topic, partition, message, only ?? 'nenhum', err, 1);
      return;
    }
    const results = await Promise.all(
      handlers.map((h) => Promise.resolve(this.executarProtegido(h, evento, topic, partition, message))),
    );
    if (!results.every(Boolean)) return; // the failures were dead-lettered
    const pedido = headerString(message.headers, REPROCESS_HEADERS.request);
    await this.dlqProducer?.send({
      topic: await this.dlqTopic(),
      acks: -1,
      messages: [
        {
          key: evento.event_id,
          value: null,
          headers: {
            [HEADER.id]: evento.event_id,
            [HEADER.type]: evento.tipo,
            [DLQ_OUTCOME_HEADER]: 'resolved',
            [DLQ_HEADERS.colonia]: this.d.colonia,
            [DLQ_HEADERS.handler]: handlers.map((h) => h.nome).join(','),
            [DLQ_HEADERS.failedAt]: new Date().toISOString(),
            ...(pedido ? { [REPROCESS_HEADERS.request]: pedido } : {}),
          },
        },
      ],
    });
    this.d.logger.info('reprocessing resolved', {
      event_id: evento.event_id,
      correlacao_id: evento.correlacao_id,
      colonia: this.d.colonia,
    });
  }

  /**
   * The seed's `executarProtegido`, over Kafka: span, metrics, retries, timeout, DLQ. `false` =
   * dead-lettered. `true` without a promise when the first attempt returned at once (`tentar`).
   *
   * Each attempt gets a payload of its own, so a handler that changes it changes nothing another
   * attempt or handler sees, nor the values error texts are scrubbed of. `unico` (the event's only
   * handler, nobody else holds `evento`): the first attempt takes the decoded payload itself, and
   * what comes after it — a retry, the scrubbing — reads a copy parsed again from the record's bytes.
   */
  private executarProtegido(
    h: Inscricao,
    evento: EventoConsultado,
    topic: string,
    partition: number,
    message: EachMessagePayload['message'],
    { unico = false }: { unico?: boolean } = {},
  ): boolean | Promise<boolean> {
    const e: Entrega = {
      h,
      evento,
      topic,
      partition,
      message,
      unico,
      traceparent: traceParentOf(headerString(message.headers, HEADER.traceparent)),
      reprocessamento:
        topic === this.topicoReprocessar
          ? {
              pedido: headerString(message.headers, REPROCESS_HEADERS.request),
              redigido: headerString(message.headers, REPROCESS_HEADERS.redacted) === 'true',
            }
          : undefined,
    };
    const primeira = this.tentar(e, 1);
    return primeira === true ? true : this.depoisDaPrimeira(e, primeira);
  }

  /** After a first attempt that failed or is still running: the retries with backoff, then the DLQ. */
  private async depoisDaPrimeira(e: Entrega, primeira: Falha | Promise<true | Falha>): Promise<boolean> {
    const { h } = e;
    let resultado = await primeira;
    let attempt = 1;
    while (resultado !== true) {
      if (resultado.erro instanceof HandlerTimeoutError || this.closed || attempt > h.opcoes.tentativasExtras) {
        await this.deadLetter(
          e.topic,
          e.partition,
          e.message,
          h.nome,
          resultado.erro,
          attempt,
          payloadIntacto(e.evento, e.message, e.unico),
        );
        return false;
      }
      this.d.metrics.consumeRetries.inc({ tipo: e.evento.tipo, colonia: this.d.colonia });
      await sleep(backoffDelay(attempt, { initialMs: h.opcoes.backoffInicialMs, maxMs: h.opcoes.backoffMaxMs }));
      resultado = await this.tentar(e, ++attempt);
    }
    return true;
  }

  /**
   * One attempt of a handler on the event, in its span and causal context, under its deadline:
   * `true` when it succeeded (or its inbox had it already), else why it failed — counted, traced
   * and logged here. Returned at once, without a promise, when the handler returned at once.
   */
  private tentar(e: Entrega, attempt: number): true | Falha | Promise<true | Falha> {
    const { h, evento, unico } = e;
    const span = this.spanDoManipulador(h, evento, e.topic, e.partition, e.message, attempt, e.traceparent);
    const t0 = performance.now();
    let ran: boolean | Promise<boolean>;
    try {
      ran = comContextoCausal(this.causa(evento, span, e.traceparent), () =>
        withActiveSpan(span, () =>
          this.runWithTimeout(
            h,
            {
              ...evento,
              // a copy of its own: the decoded object for an only handler's first attempt, then
              // a fresh parse of the record (unico), or a clone of the pristine decoded payload
              payload: !unico
                ? structuredClone(evento.payload)
                : attempt === 1
                  ? evento.payload
                  : payloadIntacto(evento, e.message, unico),
            },
            attempt,
            e.reprocessamento,
          ),
        ),
      );
    } catch (err) {
      return this.falhou(e, attempt, span, t0, err);
    }
    if (!isThenable(ran)) return this.conseguiu(e, span, t0, ran);
    return ran.then(
      (r) => this.conseguiu(e, span, t0, r),
      (err: unknown) => this.falhou(e, attempt, span, t0, err),
    );
  }

  private conseguiu(e: Entrega, span: Span, t0: number, ran: boolean): true {
    endSpan(span);
    this.observe(e.h, e.evento, ran ? 'success' : 'duplicate', (performance.now() - t0) / 1000);
    return true;
  }

  private falhou(e: Entrega, attempt: number, span: Span, t0: number, err: unknown): Falha {
    const { h, evento } = e;
    endSpan(span, err);
    this.observe(
      h,
      evento,
      err instanceof HandlerTimeoutError ? 'timeout' : 'failure',
      (performance.now() - t0) / 1000,
    );
    this.d.logger.error('handler failed', {
      event_id: evento.event_id,
      correlacao_id: evento.correlacao_id,
      colonia: this.d.colonia,
      tipo: evento.tipo,
      manipulador: h.nome,
      tentativa: attempt,
      error: scrubText(
        err instanceof Error ? err.message : String(err),
        payloadIntacto(evento, e.message, e.unico),
        1000,
      ),
    });
    return { erro: err };
  }

  /** The consumer span of one handler attempt, continuing the publisher's trace. */
  private spanDoManipulador(
    h: Inscricao,
    evento: EventoConsultado,
    topic: string,
    partition: number,
    message: EachMessagePayload['message'],
    attempt: number,
    traceparent: TraceParent | undefined,
  ): Span {
    return startConsumerSpan(
      topic,
      () => ({
        'messaging.consumer.group.name': this.groupId,
        'messaging.destination.partition.id': String(partition),
        'messaging.kafka.offset': Number(message.offset),
        'messaging.message.id': evento.event_id,
        ...(message.key ? { 'messaging.kafka.message.key': message.key.toString() } : {}),
        'feromonios.colonia': this.d.colonia,
        'feromonios.manipulador': h.nome,
        'feromonios.tentativa': attempt,
      }),
      traceparent,
    );
  }

  /** What the handler publishes is caused by this event and continues its trace. */
  private causa(evento: EventoConsultado, span: Span, traceparent: TraceParent | undefined) {
    return {
      event_id: evento.event_id,
      correlacao_id: evento.correlacao_id,
      tenant_id: evento.tenant_id,
      traceparent: handlerTraceparent(span, traceparent),
    };
  }

  /** Runs the handler on `evento` — its own copy — inside its inbox transaction, if any; `false` = already processed. */
  private runWithTimeout(
    h: Inscricao,
    evento: EventoConsultado,
    tentativa: number,
    reprocessamento: ContextoEntrega['reprocessamento'],
  ): boolean | Promise<boolean> {
    // called at once: a handler that throws synchronously throws here (tentar counts it a failure)
    return comPrazo(h.nome, h.opcoes.timeoutMs, this.abort.signal, (t) => {
      const inbox = h.opcoes.inbox;
      if (inbox)
        return withInbox(inbox, { event_id: evento.event_id, manipulador: h.nome, tipo: evento.tipo }, (transacao) =>
          Promise.resolve()
            .then(() => h.manipulador(evento, new ContextoDaTentativa(tentativa, t, transacao, reprocessamento)))
            .then(() => undefined),
        );
      // no closure of its own per event (reading a backlog, one was built and named for each)
      const result = h.manipulador(evento, new ContextoDaTentativa(tentativa, t, undefined, reprocessamento));
      // a handler that returns at once (not a promise) costs no promise of its own
      return isThenable(result) ? Promise.resolve(result).then(() => true) : true;
    });
  }

  /**
   * Sends the original message to `<ns>.dlq.<colonia>` with the error context. Must succeed
   * before the partition moves on; if it cannot, the error escapes and kafkajs redelivers the
   * message (at-least-once). Error text is scrubbed of payload values (it may quote them).
   */
  private async deadLetter(
    topic: string,
    partition: number,
    message: EachMessagePayload['message'],
    handler: string,
    err: unknown,
    attempts: number,
    payload?: unknown,
  ): Promise<void> {
    const e = err instanceof Error ? err : new Error(String(err));
    const code = err instanceof FeromoniosError ? err.code : 'HANDLER_FAILED';
    const producer = this.dlqProducer;
    if (!producer) throw new FeromoniosError('BUS_CLOSED', 'the colony subscriber is closed');
    const eventId = headerString(message.headers, HEADER.id);
    const context = {
      [DLQ_HEADERS.topic]: topic,
      [DLQ_HEADERS.partition]: String(partition),
      [DLQ_HEADERS.offset]: message.offset,
      [DLQ_HEADERS.timestamp]: message.timestamp,
      [DLQ_HEADERS.group]: this.groupId,
      [DLQ_HEADERS.colonia]: this.d.colonia,
      [DLQ_HEADERS.handler]: handler,
      [DLQ_HEADERS.errorMessage]: scrubText(e.message, payload, 4000),
      [DLQ_HEADERS.errorStack]: scrubText(e.stack ?? '', payload, 8000),
      [DLQ_HEADERS.errorCode]: code,
      [DLQ_HEADERS.attempts]: String(attempts),
      [DLQ_HEADERS.failedAt]: new Date().toISOString(),
    };
    const dlq = await this.dlqTopic();
    const send = (m: Message) => producer.send({ topic: dlq, acks: -1, messages: [m] });
    try {
      await send({
        key: eventId ?? message.key,
        value: message.value,
        headers: { ...message.headers, ...context },
      });
    } catch (refused) {
      if (isRetriable(refused)) throw refused; // kafkajs redelivers the message: at-least-once
      // The copy does not fit (the error context pushed it over the topic's limit) or the broker
      // refuses it: dead-letter by reference — where the original is, why, no value — so the
      // partition still moves on. Reprocessing then uses the redacted log copy.
      await send({
        key: eventId && isUuid(eventId) ? eventId : null,
        value: null,
        headers: {
          ...(eventId && isUuid(eventId) ? { [HEADER.id]: eventId } : {}),
          ...context,
          [DLQ_HEADERS.errorStack]: '',
          [DLQ_HEADERS.reference]: 'true',
          [DLQ_HEADERS.size]: String(message.value?.length ?? 0),
        },
      });
    }
    this.d.metrics.deadLettered.inc({ colonia: this.d.colonia, manipulador: handler });
    this.d.logger.error('event dead-lettered', {
      event_id: headerString(message.headers, HEADER.id),
      correlacao_id: headerString(message.headers, HEADER.correlacaoId),
      colonia: this.d.colonia,
      manipulador: handler,
      code,
    });
  }

  private remember(eventId: string): void {
    setNewest(this.recent, eventId, true, this.d.dedupWindow);
  }

  private observe(h: Inscricao, evento: EventoConsultado, result: string, segundos: number): void {
    const labels = { tipo: evento.tipo, colonia: this.d.colonia, result };
    this.d.metrics.consumed.inc(labels);
    this.d.metrics.handlerDuration.observe(labels, segundos);
  }
}

/**
 * The event's payload as it came, never handed to a handler: `evento.payload` itself, or — when
 * the event's only handler was given that object (`unico`) — parsed again from the record's bytes.
 */
const payloadIntacto = (
  evento: EventoConsultado,
  message: EachMessagePayload['message'],
  unico: boolean,
): Record<string, unknown> =>
  unico ? (decodeValue(message.value).payload as Record<string, unknown>) : evento.payload;

/** The decoder's options for a live event (every event but a redacted copy sent back for reprocessing), and for that copy. */
const COM_SCHEMA = Object.freeze({ validateSchema: true });
const SEM_SCHEMA = Object.freeze({ validateSchema: false });

/** How often, at most, a fetch's loop asks kafkajs to heartbeat and to commit when due. */
const BETWEEN_CHECKS_MS = 100;

const committedOffset = (p: { offset: string }): boolean => /^\d+$/.test(p.offset);
