import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { IHeaders, KafkaMessage } from 'kafkajs';
import { EventDecoder, encodeValue } from '../sdk/wire';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { FeromoniosError, type EventBus, type SchemaRegistry } from '../sdk';
import { registerCleanup } from '../test/harness';
import { createTestBus } from '../test/harness/bus';
import { TEST_REDACTION_KEY } from '../test/harness/bridge';
import { DecodeThread, type ThreadDecoded } from './decode-thread';
import { heldLines } from './log-lines';
import { decodeRecord, poisonOf, type RecordDecoded } from './record-decoding';

/**
 * The decode thread (bridge/decode-thread.ts) against the bridge's own thread: on random records
 * — valid ones of every type, and the hostile kinds a non-SDK producer sends (framing, JSON,
 * headers missing, repeated or garbage, schema ids unknown or of another type, payloads against
 * the schema, personal fields the redaction must drop or pseudonymise) — the thread gives, record
 * by record, the row, the poison reason and the log line that `decodeRecord` on this thread gives.
 * A schema id it was not taught comes back `unresolved` (the bridge decodes that record itself).
 */
describe('the decode thread decodes as the bridge’s own thread does', () => {
  let bus: EventBus;
  let ids: Record<string, number>;
  let thread: DecodeThread;
  const redaction = { key: TEST_REDACTION_KEY, coordinateDecimals: 2 };
  const maxPayloadBytes = 4096;

  beforeAll(async () => {
    bus = await createTestBus();
    const synced = await bus.sincronizarSchemas();
    ids = Object.fromEntries(synced.map((s) => [`${s.tipo}@${s.versao}`, s.id as number]));
    thread = new DecodeThread({ catalogDir: bus.catalog.dir, redaction, maxPayloadBytes });
    await thread.start();
  });
  afterAll(async () => {
    await thread.close();
    await bus.encerrar();
  });

  const tipos = Object.keys(SAMPLE_PAYLOADS).filter((t) => t !== 'demanda.legada');
  const garbage = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.constantFrom('', 'not-a-uuid', '\u0000', '2026-13-45T99:00:00Z'),
  );
  const headerOverride = fc.oneof(
    fc.constant<Record<string, unknown>>({}),
    fc.record(
      {
        ce_id: fc.oneof(fc.uuid(), garbage, fc.constant(undefined)),
        ce_source: fc.oneof(fc.constantFrom('D-1a', 'D-1b', 'D-3', 'X-9'), garbage),
        ce_time: fc.oneof(fc.constant('2026-06-15T10:30:10Z'), garbage),
        ce_specversion: fc.oneof(fc.constant('1.0'), garbage),
        ce_causationid: fc.oneof(fc.uuid(), garbage),
        feromonios_ordem: fc.oneof(
          fc.tuple(fc.uuid(), fc.integer({ min: 1, max: 1000 })).map(([s, c]) => `${s}:${c}:${c}`),
          garbage,
        ),
      },
      { requiredKeys: [] },
    ),
  );
  /** A payload: the type's sample, with fields set to other JSON or to personal text (kept, dropped or pseudonymised by the policy). */
  const payloadFor = (tipo: string) =>
    fc
      .dictionary(
        fc.oneof(fc.constantFrom(...Object.keys(SAMPLE_PAYLOADS[tipo] ?? {})), fc.string({ maxLength: 6 })),
        fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant('Maria da Silva, CPF 123.456.789-00')),
        { maxKeys: 3 },
      )
      .map((patch) => ({ ...SAMPLE_PAYLOADS[tipo], ...patch }));
  const record = fc.tuple(fc.constantFrom(...tipos), fc.nat({ max: 99 })).chain(([tipo, roll]) =>
    fc.record({
      tipo: fc.constant(tipo),
      roll: fc.constant(roll),
      payload: payloadFor(tipo),
      headers: headerOverride,
      framing: fc.constantFrom('ok', 'ok', 'ok', 'no-magic', 'bad-json', 'null', 'other-schema', 'unknown-id', 'huge'),
      timestamp: fc.oneof(fc.constant(String(Date.now())), fc.constantFrom('-1', '99999999999999999999')),
    }),
  );

  type RecordSpec = typeof record extends fc.Arbitrary<infer T> ? T : never;

  function message(r: RecordSpec, offset: number): KafkaMessage {
    const versao = bus.catalog.tipo(r.tipo)?.versoes.at(-1)?.versao ?? '1.0.0';
    const id = ids[`${r.tipo}@${versao}`] as number;
    const json = JSON.stringify(r.payload);
    const value =
      r.framing === 'null'
        ? null
        : r.framing === 'no-magic'
          ? Buffer.from(json)
          : r.framing === 'bad-json'
            ? encodeValue(id, json.slice(0, -1))
            : r.framing === 'other-schema'
              ? encodeValue(ids[`parametros.atualizados@1.0.0`] ?? id, json)
              : r.framing === 'unknown-id'
                ? encodeValue(987_654, json)
                : r.framing === 'huge'
                  ? encodeValue(id, JSON.stringify({ ...r.payload, x: 'y'.repeat(maxPayloadBytes) }))
                  : encodeValue(id, json);
    const headers: IHeaders = {
      ce_specversion: Buffer.from('1.0'),
      ce_id: Buffer.from(randomUUID()),
      ce_type: Buffer.from(r.tipo),
      ce_source: Buffer.from(bus.catalog.tipo(r.tipo)?.publicadores[0] ?? 'D-1a'),
      ce_time: Buffer.from('2026-06-15T10:30:10Z'),
      ce_versaoschema: Buffer.from(versao),
      'content-type': Buffer.from('application/vnd.feromonios.confluent-json'),
    };
    for (const [k, v] of Object.entries(r.headers)) {
      if (v === undefined) delete headers[k];
      // a header repeated (an array: the first counts) or sent as bytes
      else headers[k] = r.roll % 3 === 0 ? [Buffer.from(v as string), Buffer.from('second')] : Buffer.from(v as string);
    }
    return {
      key: null,
      value,
      headers,
      offset: String(offset),
      timestamp: r.timestamp,
      attributes: 0,
      size: 0,
    } as unknown as KafkaMessage;
  }

  /** What the bridge's own thread makes of the record (the bridge's inline path), or the error it classifies. */
  async function inline(decoder: EventDecoder, m: KafkaMessage, receivedAt: number) {
    try {
      const d = decodeRecord(decoder, m, {
        topic: 't',
        partition: 2,
        receivedAt,
        catalog: bus.catalog,
        redaction,
      });
      return d instanceof Promise ? await d : d;
    } catch (err) {
      return { kind: 'error' as const, poison: poisonOf(err), message: (err as Error).message };
    }
  }

  const comparable = (d: ThreadDecoded | RecordDecoded | { kind: 'error' }) =>
    d.kind === 'ok' ? { kind: d.kind, row: d.row } : d.kind === 'poison' ? { ...d } : { kind: d.kind };

  it('gives the same rows, poison reasons and log lines, record by record (property)', async () => {
    const decoder = new EventDecoder(bus.registry, bus.catalog, maxPayloadBytes);
    // a registry that is down: what decodes without it never asks it
    const down = {
      schemaById: () => Promise.reject(new FeromoniosError('REGISTRY_UNAVAILABLE', 'down', { retriable: true })),
    };
    const offlineDecoder = new EventDecoder(down as unknown as SchemaRegistry, bus.catalog, maxPayloadBytes);
    // every id the bridge would teach, but one type's: its records must come back unresolved
    const latest = bus.catalog.tipo('demanda.normalizada')?.versoes.at(-1)?.versao as string;
    const untaught = ids[`demanda.normalizada@${latest}`] as number;
    for (const [key, id] of Object.entries(ids)) {
      if (id === untaught) continue;
      const [tipo, versao] = key.split('@') as [string, string];
      thread.teach(id, tipo, versao);
    }
    let unresolved = 0;
    let poison = 0;
    let ok = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(record, { minLength: 1, maxLength: 30 }), async (specs) => {
        const messages = specs.map((s, i) => message(s, 1000 + i));
        const before = Date.now();
        const fromThread = await thread.decode('t', 2, messages);
        const after = Date.now();
        // each record as the thread gave it and as this thread gives it, compared whole at the end
        const got: unknown[] = [];
        const want: unknown[] = [];
        for (const [i, m] of messages.entries()) {
          const t = fromThread[i];
          const schemaId = m.value && m.value.length >= 6 && m.value[0] === 0 ? m.value.readUInt32BE(1) : undefined;
          if (t?.kind === 'unresolved') {
            // only a record whose schema id was not taught, and one that needs the registry: with
            // the registry down, this thread's decoding could not quarantine it either
            const offline = await inline(offlineDecoder, m, before);
            got.push({
              unresolved: schemaId === untaught || schemaId === 987_654,
              needsRegistry: offline.kind === 'error',
            });
            want.push({ unresolved: true, needsRegistry: true });
            unresolved++;
            continue;
          }
          const own = await inline(decoder, m, before);
          if (t?.kind === 'ok' && own.kind === 'ok') {
            // a record with no usable timestamp is published at the chunk's receipt: between before and after
            const receipt = t.publishedMs !== own.publishedMs;
            got.push({
              row: { ...t.row, publicado_em: receipt ? 'receipt' : t.row.publicado_em },
              line: t.held?.line.toString('hex'),
              id: t.held?.event_id,
              inWindow: !receipt || (t.publishedMs >= before && t.publishedMs <= after),
            });
            want.push({
              row: { ...own.row, publicado_em: receipt ? 'receipt' : own.row.publicado_em },
              line: heldLines([own.row])[0]?.line.toString('hex'),
              id: own.row.event_id,
              inWindow: true,
            });
            ok++;
            continue;
          }
          if (t?.kind === 'poison') poison++;
          got.push(t && comparable(t));
          want.push(comparable(own));
        }
        expect(got).toEqual(want);
      }),
      { numRuns: 60 },
    );
    // the run met every outcome
    expect(ok).toBeGreaterThan(0);
    expect(poison).toBeGreaterThan(0);
    expect(unresolved).toBeGreaterThan(0);
  });

  /** A thread not started yet (closed after the file), and the deaths it reports. */
  function newThread(o: { answerWithinMs?: number } = {}) {
    const deaths: Error[] = [];
    const t = new DecodeThread({
      catalogDir: bus.catalog.dir,
      redaction,
      maxPayloadBytes,
      onDeath: (e) => deaths.push(e),
      ...o,
    });
    registerCleanup(() => t.close());
    return { t, deaths };
  }

  /** A started thread taught `demanda.recebida`, the deaths it reports, its id, and a record of that type. */
  async function startedThread(o: { answerWithinMs?: number } = {}) {
    const { t, deaths } = newThread(o);
    const versao = bus.catalog.tipo('demanda.recebida')?.versoes.at(-1)?.versao as string;
    t.teach(ids[`demanda.recebida@${versao}`] as number, 'demanda.recebida', versao);
    await t.start();
    const m = message(
      {
        tipo: 'demanda.recebida',
        roll: 1,
        payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
        headers: {},
        framing: 'ok',
        timestamp: '1',
      },
      5,
    );
    return { t, deaths, first: t.threadId, m };
  }

  it('fails the chunks in flight when the thread dies, retriably, and decodes the next on a new thread', async () => {
    const { t, deaths, first, m } = await startedThread();
    const many = Array.from({ length: 20_000 }, () => m);
    const inFlight = t.decode('t', 0, many);
    await t.kill();
    await expect(inFlight).rejects.toMatchObject({ code: 'INTERRUPTED', retriable: true });
    expect(deaths).toHaveLength(1);
    // the next chunk starts a new thread, which still knows the ids taught to the old one
    const again = await t.decode('t', 0, [m]);
    expect(again[0]?.kind).toBe('ok');
    expect(t.threadId).not.toBe(first);
    await t.close();
    await expect(t.decode('t', 0, [m])).rejects.toMatchObject({ code: 'INTERRUPTED', retriable: true });
    expect(deaths).toHaveLength(1); // closing is not a death
  });

  it('ends a thread that answers nothing while chunks wait (hung) as a dead one: chunks retried, the death counted, a new thread goes on; a busy thread that answers is left alone', async () => {
    const { t, deaths, first, m } = await startedThread({ answerWithinMs: 2000 });
    // busy for less than the limit: the chunk waits and is answered by the same thread
    t.stall(300);
    expect((await t.decode('t', 0, [m]))[0]?.kind).toBe('ok');
    expect(t.threadId).toBe(first);
    expect(deaths).toHaveLength(0);
    // busy far longer than the limit: taken for hung, ended, its chunk failed retriably
    t.stall(60_000);
    await expect(t.decode('t', 0, [m])).rejects.toMatchObject({ code: 'INTERRUPTED', retriable: true });
    expect(deaths.map((e) => e.message)).toEqual([expect.stringMatching(/answered nothing for 2000 ms/)]);
    const again = await t.decode('t', 0, [m]);
    expect(again[0]?.kind).toBe('ok');
    expect(t.threadId).not.toBe(first);
    expect(deaths).toHaveLength(1); // the hung thread's exit is not counted again
  }, 30_000);

  it('takes a thread that has not loaded its catalog within the limit for hung: start() rejects retriably, the death counted', async () => {
    // no thread loads its modules and catalog within 1 ms
    const { t, deaths } = newThread({ answerWithinMs: 1 });
    await expect(t.start()).rejects.toMatchObject({ code: 'INTERRUPTED', retriable: true });
    expect(deaths.map((e) => e.message)).toEqual(['it did not load its catalog within 1 ms']);
  });
});
