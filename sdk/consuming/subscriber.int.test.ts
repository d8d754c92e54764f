import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import type { EventoConsultado } from '../contract';
import { DLQ_HEADERS } from '../wire';
import { SAMPLE_PAYLOADS } from '../testing';
import type { EventBus } from '..';
import { createTestBus } from '../../test/harness/bus';
import { groupLag, readTopic, testKafka, waitFor } from '../../test/harness';

const categorizada = (patch: Record<string, unknown> = {}) => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'], ...patch },
});
const fast = { tentativasExtras: 2, backoffInicialMs: 10, backoffMaxMs: 20 };
const header = (m: { headers?: Record<string, unknown> }, name: string): string | undefined =>
  (m.headers?.[name] as Buffer | undefined)?.toString();

describe('inscrever over the real broker', () => {
  it('T2: a registered handler receives every field, the full payload and the Kafka position', async () => {
    const bus = await createTestBus();
    const received: EventoConsultado[] = [];
    bus.inscrever('demanda.recebida', 'D-4', (e) => void received.push(e));
    await bus.inscricoesProntas();
    const sent = await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      causation_id: randomUUID(),
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    await waitFor(() => received.length === 1);
    expect(received[0]).toEqual(sent); // same fields, same position
    expect(received[0]?.payload).toEqual(SAMPLE_PAYLOADS['demanda.recebida']); // full, not redacted
  });

  it('what a handler publishes is caused by the handled event, in its flow, and continues its trace (issue #14)', async () => {
    const bus = await createTestBus();
    const effects: EventoConsultado[] = [];
    bus.inscrever('demanda.recebida', 'D-1b', async () => {
      effects.push(
        await bus.publicar({
          tipo: 'demanda.normalizada',
          origem: 'D-1b',
          payload: { ...SAMPLE_PAYLOADS['demanda.normalizada'] },
        }),
      );
    });
    await bus.inscricoesProntas();
    const cause = await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    await waitFor(() => effects.length === 1);
    expect(effects[0]).toMatchObject({ correlacao_id: cause.correlacao_id, causation_id: cause.event_id });
    const traceOf = async (topic: string, id: string) => {
      const m = (await readTopic(topic, 1)).find((x) => x.headers?.ce_id?.toString() === id);
      return /^00-([0-9a-f]{32})-([0-9a-f]{16})-/.exec(m?.headers?.traceparent?.toString() ?? '')?.slice(1);
    };
    const [causeTrace, causeSpan] = (await traceOf(bus.topics.evento('demanda.recebida'), cause.event_id)) ?? [];
    const [effectTrace, effectSpan] =
      (await traceOf(bus.topics.evento('demanda.normalizada'), effects[0]!.event_id)) ?? [];
    expect(causeTrace).toMatch(/^[0-9a-f]{32}$/);
    expect(effectTrace).toBe(causeTrace); // one trace for the flow, without any OpenTelemetry setup
    expect(effectSpan).not.toBe(causeSpan); // a span of its own
  });

  it('a handler that returns at once (settled without a promise) still gives what it starts its event as cause — directly and from a timer', async () => {
    const bus = await createTestBus();
    const effects: EventoConsultado[] = [];
    const publish = () =>
      void bus
        .publicar({
          tipo: 'demanda.normalizada',
          origem: 'D-1b',
          payload: { ...SAMPLE_PAYLOADS['demanda.normalizada'] },
        })
        .then((e) => effects.push(e));
    const signals: boolean[] = [];
    bus.inscrever('demanda.recebida', 'D-1b', (_e, ctx) => {
      signals.push(ctx.signal.aborted);
      publish(); // started, not awaited: the handler returns undefined at once
      setTimeout(publish, 5);
    });
    await bus.inscricoesProntas();
    const causes = [];
    for (let i = 0; i < 3; i++)
      causes.push(
        await bus.publicar({
          tipo: 'demanda.recebida',
          origem: 'D-1a',
          payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
        }),
      );
    await waitFor(() => effects.length === 6);
    expect(signals).toEqual([false, false, false]);
    const byCause = new Map(causes.map((c) => [c.event_id, c.correlacao_id]));
    for (const effect of effects) {
      expect(byCause.has(effect.causation_id as string)).toBe(true);
      expect(effect.correlacao_id).toBe(byCause.get(effect.causation_id as string));
    }
    expect(new Set(effects.map((e) => e.causation_id)).size).toBe(3); // two effects for each of the three causes
  });

  it('T10/T11: a failing handler is retried, then dead-lettered with its context; the other handlers run normally', async () => {
    const bus = await createTestBus();
    const attempts: number[] = [];
    const ok: string[] = [];
    bus.inscrever(
      'demanda.categorizada',
      'D-4',
      function calcularRanking(_e, ctx) {
        attempts.push(ctx.tentativa);
        throw new Error('ranking indisponível');
      },
      fast,
    );
    bus.inscrever('demanda.categorizada', 'D-4', (e) => void ok.push(e.event_id), fast);
    await bus.inscricoesProntas();
    const sent = await bus.publicar(categorizada());
    await waitFor(() => ok.length === 1);
    const [dlq] = await readTopic(bus.topics.dlq('D-4'), 1);
    expect(attempts).toEqual([1, 2, 3]);
    expect(ok).toEqual([sent.event_id]);
    expect(header(dlq!, 'ce_id')).toBe(sent.event_id);
    expect(dlq!.key?.toString()).toBe(sent.event_id);
    expect(header(dlq!, DLQ_HEADERS.handler)).toBe('calcularRanking');
    expect(header(dlq!, DLQ_HEADERS.colonia)).toBe('D-4');
    expect(header(dlq!, DLQ_HEADERS.group)).toBe(`${bus.topics.namespace}.colonia.D-4`);
    expect(header(dlq!, DLQ_HEADERS.errorMessage)).toBe('ranking indisponível');
    expect(header(dlq!, DLQ_HEADERS.errorStack)).toContain('calcularRanking');
    expect(header(dlq!, DLQ_HEADERS.attempts)).toBe('3');
    expect(header(dlq!, DLQ_HEADERS.topic)).toBe(sent.posicao?.topico);
    expect(header(dlq!, DLQ_HEADERS.partition)).toBe(String(sent.posicao?.particao));
    expect(header(dlq!, DLQ_HEADERS.offset)).toBe(sent.posicao?.offset);
    expect(dlq!.value).toBeInstanceOf(Buffer); // the original record, re-deliverable
  });

  it('gives every attempt and every handler a payload of its own: what a handler changes, no retry, other handler or scrubbed error text sees', async () => {
    const bus = await createTestBus();
    const original = SAMPLE_PAYLOADS['demanda.recebida']!;
    const seen: { only: unknown[]; first: unknown[]; second: unknown[] } = { only: [], first: [], second: [] };
    // the event's only handler in its colony: it damages its payload, then fails quoting a personal value
    bus.inscrever(
      'demanda.recebida',
      'D-4',
      function estraga(e) {
        seen.only.push(structuredClone(e.payload));
        const texto = e.payload.texto_bruto as string;
        e.payload.texto_bruto = 'trocado';
        delete e.payload.cidadao_id;
        throw new Error(`não consegui tratar "${texto}"`);
      },
      fast,
    );
    // two handlers of one colony: the first changes its payload, the second must not see it
    bus.inscrever('demanda.recebida', 'D-5', function primeiro(e) {
      seen.first.push(structuredClone(e.payload));
      e.payload.texto_bruto = 'trocado';
    });
    bus.inscrever('demanda.recebida', 'D-5', function segundo(e) {
      seen.second.push(structuredClone(e.payload));
    });
    await bus.inscricoesProntas();
    await bus.publicar({ tipo: 'demanda.recebida', origem: 'D-1a', payload: { ...original } });
    await waitFor(() => seen.second.length === 1);
    const [dlq] = await readTopic(bus.topics.dlq('D-4'), 1);
    expect(seen.only).toEqual([original, original, original]); // each retry gets the payload as published
    expect(seen.first).toEqual([original]);
    expect(seen.second).toEqual([original]);
    const error = header(dlq!, DLQ_HEADERS.errorMessage);
    expect(error).toContain('não consegui tratar');
    expect(error).not.toContain(original.texto_bruto); // scrubbed of the value as published, not as the handler left it
  });

  it('recovers in place when a retry succeeds: no DLQ', async () => {
    const bus = await createTestBus();
    let calls = 0;
    bus.inscrever(
      'demanda.categorizada',
      'D-5',
      () => {
        calls++;
        if (calls < 3) throw new Error('transitório');
      },
      fast,
    );
    await bus.inscricoesProntas();
    await bus.publicar(categorizada());
    await waitFor(() => calls === 3);
    const text = await bus.metrics.registry.metrics();
    expect(text).not.toMatch(/feromonios_dlq_sent_total\{colonia="D-5"/);
    expect(text).toMatch(/feromonios_consume_total\{tipo="demanda.categorizada",colonia="D-5",result="success"\} 1/);
  });

  it('T20: type A failing does not hold type B', async () => {
    const bus = await createTestBus();
    const b: string[] = [];
    bus.inscrever('demanda.categorizada', 'D-6', () => Promise.reject(new Error('A sempre falha')), {
      tentativasExtras: 0,
    });
    bus.inscrever('demanda.normalizada', 'D-6', (e) => void b.push(e.event_id));
    await bus.inscricoesProntas();
    for (let i = 0; i < 5; i++) {
      await bus.publicar(categorizada());
      await bus.publicar({
        tipo: 'demanda.normalizada',
        origem: 'D-1b',
        payload: { ...SAMPLE_PAYLOADS['demanda.normalizada'] },
      });
    }
    await waitFor(() => b.length === 5);
    expect((await readTopic(bus.topics.dlq('D-6'), 5)).length).toBeGreaterThanOrEqual(5);
  });

  it('fails a handler that never settles as timed out, dead-letters it, and moves on', async () => {
    const bus = await createTestBus();
    const handled: number[] = [];
    bus.inscrever(
      'demanda.categorizada',
      'D-7',
      function travado(e) {
        if (e.payload.nivel_precedencia === 1) return new Promise(() => undefined);
        handled.push(e.payload.nivel_precedencia as number);
        return undefined;
      },
      { timeoutMs: 500 },
    );
    await bus.inscricoesProntas();
    const key = randomUUID();
    await bus.publicarLote([1, 2, 3].map((n) => ({ ...categorizada({ nivel_precedencia: n }), chave_particao: key })));
    await waitFor(() => handled.length === 2);
    expect(handled).toEqual([2, 3]);
    const [dlq] = await readTopic(bus.topics.dlq('D-7'), 1);
    expect(header(dlq!, DLQ_HEADERS.errorCode)).toBe('HANDLER_TIMEOUT');
    expect(header(dlq!, DLQ_HEADERS.attempts)).toBe('1');
  });

  describe('poison messages', () => {
    const { producer } = testKafka();
    it('dead-letters an undecodable message and handles the good ones after it on the same partition', async () => {
      const bus = await createTestBus();
      const handled: string[] = [];
      bus.inscrever('demanda.categorizada', 'D-8', (e) => void handled.push(e.event_id));
      await bus.inscricoesProntas();
      const p = await producer();
      await p.send({
        topic: bus.topics.evento('demanda.categorizada'),
        acks: -1,
        messages: [{ key: 'k', partition: 0, value: Buffer.from('lixo'), headers: { ce_id: randomUUID() } }],
      });
      const goods = [];
      for (let i = 0; i < 3; i++) goods.push((await bus.publicar({ ...categorizada(), chave_particao: 'k' })).event_id);
      await waitFor(() => handled.length === 3);
      expect(handled).toEqual(goods);
      const [dlq] = await readTopic(bus.topics.dlq('D-8'), 1);
      expect(header(dlq!, DLQ_HEADERS.handler)).toBe('decodificador');
      expect(dlq!.value?.toString()).toBe('lixo');
    });

    it('checks the schema of a live record that claims to be a redacted reprocessing copy: dead-lettered, never handled', async () => {
      const bus = await createTestBus();
      const handled: string[] = [];
      bus.inscrever('demanda.categorizada', 'D-8', (e) => void handled.push(e.event_id));
      await bus.inscricoesProntas();
      const good = await bus.publicar({ ...categorizada(), chave_particao: 'k' });
      await waitFor(() => handled.length === 1);
      // the same framing and headers as a real record, a payload its schema refuses, and the
      // header only the platform's reprocessing copy carries
      const [real] = await readTopic(bus.topics.evento('demanda.categorizada'), 1);
      const value = Buffer.concat([real!.value!.subarray(0, 5), Buffer.from(JSON.stringify({ demanda_id: 42 }))]);
      const forged = randomUUID();
      const p = await producer();
      await p.send({
        topic: bus.topics.evento('demanda.categorizada'),
        acks: -1,
        messages: [
          {
            key: 'k',
            value,
            headers: { ...real!.headers, ce_id: forged, feromonios_reprocesso_redigido: 'true' },
          },
        ],
      });
      const after = (await bus.publicar({ ...categorizada(), chave_particao: 'k' })).event_id;
      await waitFor(() => handled.length === 2);
      expect(handled).toEqual([good.event_id, after]);
      const [dlq] = await readTopic(bus.topics.dlq('D-8'), 1);
      expect(header(dlq!, DLQ_HEADERS.handler)).toBe('decodificador');
      expect(header(dlq!, 'ce_id')).toBe(forged);
    });
  });

  it('shares partitions between two instances of one colony: each event handled once', async () => {
    const a = await createTestBus();
    const b = await createTestBus({ namespace: a.topics.namespace });
    const seen = new Map<string, string[]>();
    const handler = (who: string) => (e: EventoConsultado) =>
      void seen.set(e.event_id, [...(seen.get(e.event_id) ?? []), who]);
    a.inscrever('demanda.categorizada', 'D-9', handler('a'));
    b.inscrever('demanda.categorizada', 'D-9', handler('b'));
    await Promise.all([a.inscricoesProntas(), b.inscricoesProntas()]);
    await waitFor(async () => {
      // both members must own partitions before we publish (rebalance after the second join)
      const groups = await describeGroup(a, `${a.topics.namespace}.colonia.D-9`);
      return groups === 2;
    });
    const sent = await a.publicarLote(
      Array.from({ length: 60 }, () => ({ ...categorizada(), correlacao_id: randomUUID() })),
    );
    await waitFor(() => seen.size === 60);
    // all handled and committed: a duplicate delivery could only come from uncommitted work
    await waitFor(
      async () => (await groupLag(`${a.topics.namespace}.colonia.D-9`, a.topics.evento('demanda.categorizada'))) === 0,
    );
    expect([...seen.values()].every((who) => who.length === 1)).toBe(true);
    expect(new Set([...seen.values()].flat())).toEqual(new Set(['a', 'b']));
    expect(sent.every((e) => seen.has(e.event_id))).toBe(true);
  });

  it('keeps a member through a handler longer than the session timeout (no eviction, no rebalance)', async () => {
    const bus = await createTestBus({
      consumo: { particoesEmParalelo: 1, janelaDeduplicacao: 100, desdeOInicio: false, sessionTimeoutMs: 6_000 },
    });
    const runs: string[] = [];
    bus.inscrever(
      'demanda.categorizada',
      'D-10',
      async (e) => {
        runs.push(e.event_id);
        await new Promise((r) => setTimeout(r, 9_000));
      },
      { timeoutMs: 20_000 },
    );
    await bus.inscricoesProntas();
    const e = await bus.publicar(categorizada());
    const after = await bus.publicar(categorizada());
    await waitFor(() => runs.length === 2, { timeoutMs: 40_000 });
    // both committed by the member that ran them: had it been evicted mid-handler, the commit of
    // the first would have been refused and the event handed out again (a third run)
    await waitFor(
      async () =>
        (await groupLag(`${bus.topics.namespace}.colonia.D-10`, bus.topics.evento('demanda.categorizada'))) === 0,
      { timeoutMs: 30_000, message: 'the group committed both events' },
    );
    expect(await describeGroup(bus, `${bus.topics.namespace}.colonia.D-10`)).toBe(1);
    expect(runs.sort()).toEqual([e.event_id, after.event_id].sort()); // each once: no redelivery
  }, 70_000);

  it('encerrar lets the handler in flight finish, commits, and the group does not see the event again', async () => {
    const bus = await createTestBus();
    const log: string[] = [];
    bus.inscrever('demanda.categorizada', 'D-15', async (e) => {
      log.push(`start ${e.event_id}`);
      await new Promise((r) => setTimeout(r, 1_500));
      log.push(`end ${e.event_id}`);
    });
    await bus.inscricoesProntas();
    const e = await bus.publicar(categorizada());
    await waitFor(() => log.length === 1);
    await bus.encerrar();
    expect(log).toEqual([`start ${e.event_id}`, `end ${e.event_id}`]);
    await expect(bus.publicar(categorizada())).rejects.toMatchObject({ code: 'BUS_CLOSED' });

    const again = await createTestBus({ namespace: bus.topics.namespace });
    const seen: string[] = [];
    again.inscrever('demanda.categorizada', 'D-15', (x) => void seen.push(x.event_id));
    await again.inscricoesProntas();
    const next = await again.publicar(categorizada());
    await waitFor(() => seen.includes(next.event_id));
    expect(seen).toEqual([next.event_id]); // the first event's offset was committed
  });

  it('encerrar in the middle of a fetch commits exactly the events handled: the next instance gets the rest, none twice', async () => {
    const bus = await createTestBus();
    const first: string[] = [];
    bus.inscrever('demanda.categorizada', 'D-15', async (e) => {
      first.push(e.event_id);
      await new Promise((r) => setTimeout(r, 10));
    });
    await bus.inscricoesProntas();
    // one partition (one key), so the whole backlog comes in the same fetch(es) of one partition
    const sent = await bus.publicarLote(
      Array.from({ length: 150 }, () => ({ ...categorizada(), chave_particao: 'uma-so-particao' })),
    );
    await waitFor(() => first.length >= 40);
    await bus.encerrar(); // stops between two events of the fetch
    const handled = first.length;
    expect(handled).toBeLessThan(150);
    const group = `${bus.topics.namespace}.colonia.D-15`;
    expect(await groupLag(group, bus.topics.evento('demanda.categorizada'))).toBe(150 - handled);

    const again = await createTestBus({ namespace: bus.topics.namespace });
    const second: string[] = [];
    again.inscrever('demanda.categorizada', 'D-15', (e) => void second.push(e.event_id));
    await again.inscricoesProntas();
    await waitFor(() => first.length + second.length >= 150);
    expect([...first, ...second]).toEqual(sent.map((e) => e.event_id)); // in order, each once
  });

  it('a new colony starts at the end once: restarted before its first commit, it resumes there and misses nothing published while it was down', async () => {
    // A new group starts at the end of each partition. kafkajs keeps that position in memory
    // until the first commit, so a colony stopped (or crashed) before handling anything used to
    // start at the end again — of the moment it came back — and never saw what came in between.
    const bus = await createTestBus();
    const before = await bus.publicar(categorizada()); // before the colony existed: not for it
    bus.inscrever('demanda.categorizada', 'D-16', () => undefined);
    await bus.inscricoesProntas();
    await bus.encerrar(); // nothing handled, nothing committed by the consumer

    const writer = await createTestBus({ namespace: bus.topics.namespace });
    const whileDown = await Promise.all([1, 2, 3, 4, 5, 6].map(() => writer.publicar(categorizada())));
    const again = await createTestBus({ namespace: bus.topics.namespace });
    const seen: string[] = [];
    again.inscrever('demanda.categorizada', 'D-16', (x) => void seen.push(x.event_id));
    await again.inscricoesProntas();
    const after = await writer.publicar(categorizada());
    await waitFor(() => seen.includes(after.event_id), { message: 'the event published after the restart' });
    expect(seen.sort()).toEqual([...whileDown.map((e) => e.event_id), after.event_id].sort());
    expect(seen).not.toContain(before.event_id);
  });

  it('accepts a later inscrever after boot: once inscricoesProntas resolves, an event published at once is delivered', async () => {
    // The consumer is replaced to add each topic; the one it replaces keeps fetching until it is
    // disconnected, and its fetches once made inscricoesProntas resolve before the new consumer
    // had joined and fixed its starting offsets: the event published next was never delivered.
    const bus = await createTestBus();
    bus.inscrever('demanda.categorizada', 'D-11', () => undefined);
    await bus.inscricoesProntas();
    await bus.publicar(categorizada()); // the first consumer busy fetching
    const later: Record<string, string[]> = {};
    const sent: Record<string, string> = {};
    for (const [tipo, origem] of [
      ['parametros.atualizados', 'D-6'],
      ['demanda.normalizada', 'D-1b'],
      ['demanda.recebida', 'D-1a'],
    ] as const) {
      later[tipo] = [];
      bus.inscrever(tipo, 'D-11', (e) => void later[tipo]!.push(e.event_id));
      await bus.inscricoesProntas('D-11');
      sent[tipo] = (await bus.publicar({ tipo, origem, payload: { ...SAMPLE_PAYLOADS[tipo] } })).event_id;
    }
    await waitFor(() => Object.keys(sent).every((t) => later[t]!.includes(sent[t]!)), {
      message: 'every event published right after its inscricoesProntas delivered',
    });
    for (const t of Object.keys(sent)) expect(later[t]).toEqual([sent[t]]);
  });

  it('refuses an unknown type, a bad colony code and a 31st handler, synchronously', async () => {
    const bus = await createTestBus();
    expect(() => bus.inscrever('nao.existe', 'D-4', () => undefined)).toThrow(/não registrado/);
    expect(() => bus.inscrever('demanda.categorizada', 'D 4!', () => undefined)).toThrow(/colonia/);
    for (let i = 0; i < 30; i++) bus.inscrever('demanda.categorizada', 'D-12', () => undefined);
    expect(() => bus.inscrever('demanda.categorizada', 'D-12', () => undefined)).toThrow(/30 handlers/);
    await bus.inscricoesProntas();
  });
});

async function describeGroup(bus: EventBus, groupId: string): Promise<number> {
  const admin = new Kafka({ clientId: 'describe', brokers: bus.options.brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const { groups } = await admin.describeGroups([groupId]);
    return groups[0]?.state === 'Stable' ? (groups[0]?.members.length ?? 0) : 0;
  } finally {
    await admin.disconnect();
  }
}
