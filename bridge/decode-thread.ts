/**
 * The bridge's decode thread (ADR 0029, "Decoding on a thread of its own"): records are decoded,
 * checked against their schema and redacted, and their log lines formatted, on a worker thread,
 * while the bridge's own thread fetches, stages and orders. Staging a backlog was one thread at
 * 100 %, more than half of it decoding and redaction.
 *
 * The thread runs the very code the bridge's thread runs inline (bridge/record-decoding.ts), on
 * the catalog loaded from the same directory. What crosses:
 * - to the thread, per chunk: the records' bytes in one transferred buffer (`packRecords`: the
 *   fetch response's region, copied once) with where each value and each header the decoding
 *   reads lie in it, offsets and timestamps; and each schema id a record decoded on the bridge's
 *   thread had (`teach`), as its catalog type and version;
 * - back, per chunk: each record's status; the ok rows as columns of strings and numbers (no
 *   object per row crosses); each poison reason, or an unexpected error's message; and the ok
 *   rows' log lines in one transferred buffer. A record whose schema id the thread was not taught
 *   comes back `unresolved`: the bridge decodes it itself (asking the registry, with the same
 *   checks in the same order) and then teaches the thread its id.
 *
 * The thread never talks to the registry, Kafka or PostgreSQL. If it dies, every chunk in flight
 * fails with a retriable error (the bridge retries the chunk, as on a registry outage), the next
 * chunk starts a new thread, and `feromonios_bridge_decode_thread_restarts_total` counts it.
 */

import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import path from 'node:path';
import type { KafkaMessage } from 'kafkajs';
import type { SchemaRegistry } from '../sdk';
import { EventDecoder, FeromoniosError, SchemaCatalog, schemaUrn, type OpcoesRedacao } from '../sdk/wire';
import { carried } from './copy-binary';
import { STAGING_COLUMNS, heldLinesOf, logTuples, type HeldLine, type StagedRow } from './log-lines';
import { DECODED_HEADERS, decodeRecord, type PoisonReason, type RecordIn } from './record-decoding';

/** What the thread is started with. */
export interface DecodeThreadOptions {
  /** The catalog's directory (`SchemaCatalog.dir`): the thread loads it itself. */
  catalogDir: string;
  redaction: OpcoesRedacao;
  maxPayloadBytes: number;
}

/**
 * How long the thread may answer nothing while chunks wait for it before it is taken for hung:
 * it is then ended as a dead one is (its chunks retried on a new thread, the death counted). A
 * chunk of 20,000 records decodes in well under a second.
 */
export const DEFAULT_ANSWER_WITHIN_MS = 30_000;

/** One record as the thread decoded it. */
export type ThreadDecoded =
  | { kind: 'ok'; row: StagedRow; publishedMs: number; held?: HeldLine }
  | ({ kind: 'poison' } & PoisonReason)
  /** Its schema id was not taught to the thread: the bridge decodes it itself. */
  | { kind: 'unresolved' }
  /** An error that is not the record's framing, headers or payload (the bridge classifies it). */
  | { kind: 'error'; message: string };

/**
 * A chunk's records as they cross to the thread: one buffer of their bytes and, per record, where
 * its value and each header of `DECODED_HEADERS` lie in it (`packRecords`).
 */
export interface PackedRecords {
  /** Of its own (transferred): the records' region of the fetch response, or their pieces one after the other. */
  bytes: Uint8Array;
  /**
   * Per record, `RECORD_STRIDE` numbers: its value's start and end (start -1: a null value),
   * then each decoded header's start and end (start -1: absent; -2: not bytes, its text is in
   * `texts` under `record * DECODED_HEADERS.length + header`).
   */
  index: Int32Array;
  texts: Record<number, string>;
  offsets: string[];
  timestamps: string[];
}

const HEADER_COUNT = DECODED_HEADERS.length;
const RECORD_STRIDE = 2 + 2 * HEADER_COUNT;

/** The first value of a header as `headerString` takes it: a Buffer, other text, or undefined. */
function firstHeaderValue(headers: KafkaMessage['headers'], name: string): unknown {
  const v = headers?.[name];
  const first = Array.isArray(v) ? v[0] : v;
  return first === null ? undefined : first;
}

/**
 * Packs records for the decode thread without decoding anything here: when their values and
 * headers all lie in one fetch response's buffer (always, for kafkajs's records), that region is
 * copied once and the records point into it; otherwise each piece is copied after the other.
 * `unpackRecord` gives back, for the decoding, the same value bytes and the same header text.
 */
export function packRecords(messages: readonly RecordIn[]): PackedRecords {
  const n = messages.length;
  const index = new Int32Array(n * RECORD_STRIDE);
  const texts: Record<number, string> = {};
  const offsets = new Array<string>(n);
  const timestamps = new Array<string>(n);
  const pieces = new Array<Uint8Array | undefined>(n * (1 + HEADER_COUNT));
  let shared: ArrayBufferLike | undefined;
  let oneBuffer = true;
  let low = Infinity;
  let high = -Infinity;
  let total = 0;
  const see = (b: Uint8Array, slot: number) => {
    pieces[slot] = b;
    total += b.byteLength;
    if (shared === undefined) shared = b.buffer;
    else if (shared !== b.buffer) oneBuffer = false;
    if (b.byteOffset < low) low = b.byteOffset;
    if (b.byteOffset + b.byteLength > high) high = b.byteOffset + b.byteLength;
  };
  for (let i = 0; i < n; i++) {
    const m = messages[i] as RecordIn;
    offsets[i] = m.offset;
    timestamps[i] = m.timestamp;
    if (m.value) see(m.value, i * (1 + HEADER_COUNT));
    for (let h = 0; h < HEADER_COUNT; h++) {
      const v = firstHeaderValue(m.headers, DECODED_HEADERS[h] as string);
      if (v === undefined) continue;
      if (Buffer.isBuffer(v)) see(v, i * (1 + HEADER_COUNT) + 1 + h);
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- what headerString does with a value that is not bytes
      else texts[i * HEADER_COUNT + h] = String(v);
    }
  }
  // one copy of the region when it is the pieces' own bytes, give or take what lies between them
  const region = oneBuffer && shared !== undefined && high - low <= 2 * total + 65_536;
  let bytes: Uint8Array;
  let at = 0;
  if (region) bytes = new Uint8Array(shared as ArrayBufferLike, low, high - low).slice();
  else bytes = new Uint8Array(total);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k <= HEADER_COUNT; k++) {
      const slot = i * (1 + HEADER_COUNT) + k;
      const piece = pieces[slot];
      const where = i * RECORD_STRIDE + 2 * k;
      if (!piece) {
        index[where] = k > 0 && texts[i * HEADER_COUNT + k - 1] !== undefined ? -2 : -1;
        continue;
      }
      let start: number;
      if (region) start = piece.byteOffset - low;
      else {
        bytes.set(piece, at);
        start = at;
        at += piece.byteLength;
      }
      index[where] = start;
      index[where + 1] = start + piece.byteLength;
    }
  }
  return { bytes, index, texts, offsets, timestamps };
}

/** Record `i` of a `PackedRecords`, as the decoding reads it (`bytes` as a Buffer over the packed bytes). */
export function unpackRecord(p: Omit<PackedRecords, 'bytes'>, bytes: Buffer, i: number): RecordIn {
  const base = i * RECORD_STRIDE;
  const vs = p.index[base] as number;
  const headers: Record<string, Buffer | string> = {};
  for (let h = 0; h < HEADER_COUNT; h++) {
    const s = p.index[base + 2 + 2 * h] as number;
    if (s === -1) continue;
    const name = DECODED_HEADERS[h] as string;
    headers[name] = s === -2 ? (p.texts[i * HEADER_COUNT + h] as string) : bytes.subarray(s, p.index[base + 3 + 2 * h]);
  }
  return {
    value: vs < 0 ? null : bytes.subarray(vs, p.index[base + 1]),
    headers,
    offset: p.offsets[i] as string,
    timestamp: p.timestamps[i] as string,
  };
}

type Request =
  | { kind: 'learn'; schemaId: number; tipo: string; versao: string }
  | { kind: 'stall'; ms: number }
  | ({ kind: 'decode'; id: number; topic: string; partition: number; receivedAt: number } & PackedRecords);

/** The thread loaded its catalog and waits for chunks. */
type Ready = { kind: 'ready' };

/** Record statuses in a reply. */
const OK = 0;
const POISON = 1;
const UNRESOLVED_RECORD = 2;
const ERROR = 3;

/** The row's columns that cross back: staging's, but where the record is (the bridge knows it). */
type CrossingColumn = Exclude<(typeof STAGING_COLUMNS)[number], 'kafka_topic' | 'kafka_partition' | 'kafka_offset'>;

/**
 * A chunk decoded, in columns (no object per row crosses): per record its status; per poison
 * record its reason and detail, per error its message, in `texts`, in order; per ok record its
 * row's values that are not known already on the bridge's side (topic, partition, offset).
 */
type Reply = {
  kind: 'decoded';
  id: number;
  status: Uint8Array;
  texts: string[];
  rows: { [K in CrossingColumn]: Array<StagedRow[K]> } & { publishedMs: number[] };
  /** The ok rows' log lines (binary `COPY` tuples), in their order; `lineEnds[j]` ends the j-th. Both empty when a value could not be formatted (`CopyValueError`). */
  lines: Uint8Array;
  lineEnds: Int32Array;
};

const ROW_COLUMNS = STAGING_COLUMNS.filter(
  (c): c is CrossingColumn => c !== 'kafka_topic' && c !== 'kafka_partition' && c !== 'kafka_offset',
);

/**
 * What the thread runs: this module's `serveDecoding`. A worker thread starts plain Node, so when
 * the bridge runs as TypeScript (through tsx, as it is deployed) the thread registers tsx first.
 */
function threadSource(): string {
  const load = `require(${JSON.stringify(__filename)}).serveDecoding();`;
  return path.extname(__filename) === '.ts'
    ? `require(${JSON.stringify(require.resolve('tsx/cjs/api'))}).register(); ${load}`
    : load;
}

/** The bridge's side of the decode thread: started on the first chunk, restarted after a death. */
export class DecodeThread {
  private worker: Worker | undefined;
  /** Settles when the running thread has loaded its catalog (rejects if it died first). */
  private ready: Promise<void> | undefined;
  private readonly pending = new Map<number, { resolve(r: Reply): void; reject(e: Error): void }>();
  /** Schema ids the bridge resolved, as catalog versions: taught to every thread started. */
  private readonly taught = new Map<number, { tipo: string; versao: string }>();
  private nextId = 1;
  private closed = false;
  /** Ends the running thread as dead with this error (it is taken for hung). */
  private endHung: ((err: Error) => void) | undefined;
  /** Fires when the thread has answered nothing for `answerWithinMs` while chunks wait. */
  private watchdog: NodeJS.Timeout | undefined;

  constructor(
    private readonly o: DecodeThreadOptions & {
      /** Called when a thread died (its error): for the restarts counter and the log. */
      onDeath?(err: Error): void;
      /** See `DEFAULT_ANSWER_WITHIN_MS`. */
      answerWithinMs?: number;
    },
  ) {}

  /** Tells the thread (this one and any later) which catalog version a registry schema id stands for. */
  teach(schemaId: number, tipo: string, versao: string): void {
    if (this.taught.has(schemaId)) return;
    this.taught.set(schemaId, { tipo, versao });
    this.worker?.postMessage({ kind: 'learn', schemaId, tipo, versao } satisfies Request);
  }

  /**
   * Decodes a chunk of one partition on the thread, in order. Rejects with a retriable
   * `FeromoniosError` when the thread dies meanwhile or the bridge closes it.
   */
  async decode(topic: string, partition: number, messages: readonly KafkaMessage[]): Promise<ThreadDecoded[]> {
    if (this.closed) throw new FeromoniosError('INTERRUPTED', 'the decode thread is closed', { retriable: true });
    const packed = packRecords(messages);
    const id = this.nextId++;
    const worker = this.started();
    await this.ready;
    if (this.worker !== worker)
      throw new FeromoniosError('INTERRUPTED', 'the decode thread died while it started', { retriable: true });
    const reply = await new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) this.armWatchdog();
      const request: Request = { kind: 'decode', id, topic, partition, receivedAt: Date.now(), ...packed };
      worker.postMessage(request, [packed.bytes.buffer as ArrayBuffer, packed.index.buffer as ArrayBuffer]);
    });
    return unpackReply(reply, topic, partition, messages);
  }

  /**
   * Starts the thread and waits until it has loaded its catalog (~0.2 s), so chunks sent later do
   * not wait for it (the bridge calls it first in its own start). Rejects if it cannot start, or
   * has not loaded within the answer limit (`DEFAULT_ANSWER_WITHIN_MS`).
   */
  async start(): Promise<void> {
    this.started();
    await this.ready;
  }

  /** Stops the thread; chunks in flight fail (retriable). */
  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
    this.failPending(new FeromoniosError('INTERRUPTED', 'the decode thread was closed', { retriable: true }));
  }

  /** Test hook: the running thread's id, or undefined (none started, or dead). */
  get threadId(): number | undefined {
    return this.worker?.threadId;
  }

  /** Test hook: kills the running thread as a crash would. */
  async kill(): Promise<void> {
    await this.worker?.terminate();
  }

  /** Test hook: makes the running thread busy for `ms` (it answers nothing meanwhile), as a hung one. */
  stall(ms: number): void {
    this.worker?.postMessage({ kind: 'stall', ms } satisfies Request);
  }

  /** How long the thread may answer nothing (or take to load) before it is taken for hung. */
  private get answerWithinMs(): number {
    return this.o.answerWithinMs ?? DEFAULT_ANSWER_WITHIN_MS;
  }

  /** (Re)starts the watchdog while chunks wait for the thread; stops it when none does. */
  private armWatchdog(): void {
    clearTimeout(this.watchdog);
    this.watchdog = undefined;
    if (this.pending.size === 0) return;
    const ms = this.answerWithinMs;
    this.watchdog = setTimeout(
      () => this.endHung?.(new Error(`it answered nothing for ${ms} ms with ${this.pending.size} chunk(s) waiting`)),
      ms,
    );
    this.watchdog.unref();
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const opts: DecodeThreadOptions = {
      catalogDir: this.o.catalogDir,
      redaction: this.o.redaction,
      maxPayloadBytes: this.o.maxPayloadBytes,
    };
    const worker = new Worker(threadSource(), {
      eval: true,
      workerData: { ...opts, taught: [...this.taught].map(([schemaId, v]) => ({ schemaId, ...v })) },
    });
    let isReady: () => void = () => undefined;
    let notReady: (err: Error) => void = () => undefined;
    this.ready = new Promise<void>((resolve, reject) => {
      isReady = resolve;
      notReady = reject;
    });
    this.ready.catch(() => undefined); // awaited by start() and each decode
    // a thread that has not loaded its catalog within the limit is taken for hung too
    const limit = this.answerWithinMs;
    const loading = setTimeout(() => {
      if (this.worker === worker) this.endHung?.(new Error(`it did not load its catalog within ${limit} ms`));
    }, limit);
    loading.unref();
    worker.on('message', (reply: Reply | Ready) => {
      if (reply.kind === 'ready') {
        clearTimeout(loading);
        // once started, the bridge's process does not wait for an idle thread to end (until then,
        // the thread keeps the process up for whoever awaits `start`)
        worker.unref();
        return isReady();
      }
      const p = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      this.armWatchdog();
      p?.resolve(reply);
    });
    const died = (err: Error) => {
      clearTimeout(loading);
      const e = new FeromoniosError('INTERRUPTED', `the decode thread died: ${err.message}`, {
        retriable: true,
        cause: err,
      });
      notReady(e); // (closed before it was ready, too)
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failPending(e);
      if (!this.closed) this.o.onDeath?.(err);
    };
    worker.on('error', died);
    worker.on('exit', (code) => died(new Error(`exited with code ${code}`)));
    this.endHung = (err) => {
      died(err); // first: the exit that follows is then not this thread's death again
      void worker.terminate();
    };
    this.worker = worker;
    return worker;
  }

  private failPending(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    this.armWatchdog();
    for (const p of all) p.reject(err);
  }
}

/** What the thread's registry throws for a schema id it was not taught (the bridge decodes those records). */
class Unresolved extends Error {}

/** The thread's side: decodes the chunks the bridge sends until it is terminated. */
export function serveDecoding(): void {
  if (isMainThread || !parentPort) throw new Error('serveDecoding runs on the decode thread');
  const port = parentPort;
  const data = workerData as DecodeThreadOptions & {
    taught: Array<{ schemaId: number; tipo: string; versao: string }>;
  };
  const catalog = SchemaCatalog.load(data.catalogDir);
  const known = new Map<number, string>();
  const learn = (schemaId: number, tipo: string, versao: string) =>
    known.set(schemaId, JSON.stringify({ $id: schemaUrn(tipo, versao) }));
  for (const t of data.taught) learn(t.schemaId, t.tipo, t.versao);
  const registry = {
    schemaById: (id: number): Promise<string> => {
      const text = known.get(id);
      return text === undefined ? Promise.reject(new Unresolved(`schema id ${id} not taught`)) : Promise.resolve(text);
    },
  } as unknown as SchemaRegistry;
  const decoder = new EventDecoder(registry, catalog, data.maxPayloadBytes);

  port.postMessage({ kind: 'ready' } satisfies Ready);
  port.on('message', (req: Request) => {
    if (req.kind === 'learn') {
      learn(req.schemaId, req.tipo, req.versao);
      return;
    }
    if (req.kind === 'stall') {
      for (const until = Date.now() + req.ms; Date.now() < until;);
      return;
    }
    void decodeRequest(req).then(
      (reply) => port.postMessage(reply, [reply.lines.buffer as ArrayBuffer, reply.lineEnds.buffer as ArrayBuffer]),
      // nothing above throws but a bug: the thread dies, and the bridge retries on a new one
      (err: unknown) =>
        setImmediate(() => {
          throw err;
        }),
    );
  });

  async function decodeRequest(req: Extract<Request, { kind: 'decode' }>): Promise<Reply> {
    const bytes = Buffer.from(req.bytes.buffer, req.bytes.byteOffset, req.bytes.byteLength);
    const n = req.offsets.length;
    const status = new Uint8Array(n);
    const texts: string[] = [];
    const rows: StagedRow[] = [];
    const publishedMs: number[] = [];
    const ctx = {
      topic: req.topic,
      partition: req.partition,
      receivedAt: req.receivedAt,
      catalog,
      redaction: data.redaction,
    };
    for (let i = 0; i < n; i++) {
      const message = unpackRecord(req, bytes, i);
      try {
        const d = decodeRecord(decoder, message, ctx);
        const r = d instanceof Promise ? await d : d;
        if (r.kind === 'ok') {
          rows.push(r.row);
          publishedMs.push(r.publishedMs);
          status[i] = OK;
        } else {
          status[i] = POISON;
          texts.push(r.reason, r.detail);
        }
      } catch (err) {
        if (err instanceof Unresolved) status[i] = UNRESOLVED_RECORD;
        else {
          status[i] = ERROR;
          texts.push((err as Error | undefined)?.message ?? String(err));
        }
      }
    }
    const formatted: number[] = [];
    // a value the binary format cannot carry (none the wire checks let through): no lines, so the
    // bridge formats them itself and, failing too, stages the chunk in the table as text
    const tuples = carried(() => logTuples(rows, formatted));
    const ends = tuples ? formatted : [];
    const columns = { publishedMs } as Record<CrossingColumn | 'publishedMs', unknown[]>;
    for (const c of ROW_COLUMNS) columns[c] = rows.map((r) => r[c]);
    return {
      kind: 'decoded',
      id: req.id,
      status,
      texts,
      rows: columns as Reply['rows'],
      lines: tuples ? new Uint8Array(tuples.buffer, tuples.byteOffset, tuples.byteLength) : new Uint8Array(0),
      lineEnds: Int32Array.from(ends),
    };
  }
}

/** A reply as records decoded: the rows rebuilt (topic, partition and offset from the chunk's own records), their held lines views of the reply's text. */
function unpackReply(
  reply: Reply,
  topic: string,
  partition: number,
  messages: readonly KafkaMessage[],
): ThreadDecoded[] {
  const c = reply.rows;
  const okRows: StagedRow[] = [];
  for (let j = 0; j < c.event_id.length; j++) {
    okRows.push({
      event_id: c.event_id[j] as string,
      tipo: c.tipo[j] as string,
      versao_schema: c.versao_schema[j] as string,
      timestamp: c.timestamp[j] as string,
      origem: c.origem[j] as string,
      correlacao_id: c.correlacao_id[j] as string,
      causation_id: c.causation_id[j] as string | null,
      tenant_id: c.tenant_id[j] as string | null,
      payload: c.payload[j] as string,
      kafka_topic: topic,
      kafka_partition: partition,
      kafka_offset: '', // set below, from the record it is
      publicado_em: c.publicado_em[j] as string,
      ordem_sessao: c.ordem_sessao[j] as string | null,
      ordem_contador: c.ordem_contador[j] as number | null,
      ordem_firme: c.ordem_firme[j] as number | null,
    });
  }
  // no lines when the thread could not format them (`CopyValueError`): the bridge then does
  const held =
    reply.lineEnds.length !== okRows.length
      ? []
      : heldLinesOf(
          okRows,
          Buffer.from(reply.lines.buffer, reply.lines.byteOffset, reply.lines.byteLength),
          reply.lineEnds,
        );
  const out = new Array<ThreadDecoded>(reply.status.length);
  let t = 0;
  let j = 0;
  for (let i = 0; i < reply.status.length; i++) {
    const s = reply.status[i];
    if (s === OK) {
      const row = okRows[j] as StagedRow;
      row.kafka_offset = (messages[i] as KafkaMessage).offset;
      out[i] = { kind: 'ok', row, publishedMs: c.publishedMs[j] as number, held: held[j] };
      j++;
    } else if (s === POISON)
      out[i] = { kind: 'poison', reason: reply.texts[t++] as string, detail: reply.texts[t++] as string };
    else if (s === UNRESOLVED_RECORD) out[i] = { kind: 'unresolved' };
    else out[i] = { kind: 'error', message: reply.texts[t++] as string };
  }
  return out;
}
