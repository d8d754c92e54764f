import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { InMemoryEventBus, SAMPLE_PAYLOADS } from '.';
import type { Barramento, ConsultarEventosDto, EventoConsultado } from '..';

const categorizada = () => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});
const recebida = () => ({
  tipo: 'demanda.recebida',
  origem: 'D-1a',
  payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
});

describe('InMemoryEventBus, the helpers a colony test awaits', () => {
  it('assigns sequence numbers at publish, in order, and lists what was published per type with full payloads', async () => {
    const bus = new InMemoryEventBus();
    const a = await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    const [b, c] = await bus.publicarLote([categorizada(), categorizada()]);
    expect([a.sequence_number, b?.sequence_number, c?.sequence_number]).toEqual([1n, 2n, 3n]);
    expect(bus.publicados('demanda.categorizada').map((e) => e.event_id)).toEqual([b?.event_id, c?.event_id]);
    expect(bus.publicados('demanda.recebida')[0]?.payload).toEqual(SAMPLE_PAYLOADS['demanda.recebida']); // not redacted
    expect((await bus.obterEventoPorId(a.event_id))?.payload).not.toHaveProperty('cidadao_id'); // the log is
    await bus.encerrar();
  });

  it('aguardarEntregas waits for chains: an event a handler publishes is delivered too', async () => {
    const bus = new InMemoryEventBus();
    const seen: string[] = [];
    bus.inscrever('demanda.recebida', 'D-1b', async (e) => {
      seen.push(`recebida ${e.event_id}`);
      await bus.publicar({ ...categorizada(), correlacao_id: e.correlacao_id ?? undefined, causation_id: e.event_id });
    });
    bus.inscrever('demanda.categorizada', 'D-4', (e) => void seen.push(`categorizada ${e.causation_id}`));
    const first = await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    await bus.aguardarEntregas();
    expect(seen).toEqual([`recebida ${first.event_id}`, `categorizada ${first.event_id}`]);
    expect(bus.entregasRegistradas().map((d) => `${d.colonia}:${d.resultado}`)).toEqual([
      'D-1b:sucesso',
      'D-4:sucesso',
    ]);
    await bus.encerrar();
  });

  it('is deterministic: deliveries follow publish order, whatever each handler awaits', async () => {
    const bus = new InMemoryEventBus();
    const order: number[] = [];
    bus.inscrever('demanda.categorizada', 'D-4', async (e) => {
      const n = Number(e.payload.score_horizontal);
      await new Promise((r) => setTimeout(r, 20 - n)); // later events would finish first if run at once
      order.push(n);
    });
    for (let n = 1; n <= 5; n++)
      await bus.publicar({ ...categorizada(), payload: { ...categorizada().payload, score_horizontal: n } });
    await bus.aguardarEntregas();
    expect(order).toEqual([1, 2, 3, 4, 5]);
    await bus.encerrar();
  });

  it('dead-letters after the retries without waiting the backoff, scrubbing the payload out of the error text', async () => {
    const bus = new InMemoryEventBus();
    const t0 = Date.now();
    bus.inscrever(
      'demanda.recebida',
      'D-5',
      function quebra(e: EventoConsultado) {
        throw new Error(`cannot handle ${String(e.payload.texto_bruto)}`);
      },
      { tentativasExtras: 4, backoffInicialMs: 10_000 },
    );
    await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    await bus.aguardarEntregas();
    expect(Date.now() - t0).toBeLessThan(5_000);
    const [entry] = bus.mortos('D-5');
    expect(entry).toMatchObject({ handler_nome: 'quebra', tentativas: 1, status: 'pendente' });
    expect(bus.entregasRegistradas().find((d) => d.colonia === 'D-5')).toMatchObject({
      resultado: 'dlq',
      tentativas: 5,
    });
    expect(entry?.mensagem_erro).not.toContain('Rua das Flores');
    expect(bus.mortos('D-9')).toEqual([]);
    await bus.encerrar();
  });

  it('leaves no timer behind: encerrar waits for the handler in flight, which its timeout aborts through the signal', async () => {
    // the timers the bus itself arms (other test files may have timers of their own in this process)
    const armed: NodeJS.Timeout[] = [];
    const real = global.setTimeout;
    const spy = jest.spyOn(global, 'setTimeout').mockImplementation((fn: () => void, ms?: number) => {
      const t = real(fn, ms);
      const stack = new Error().stack ?? '';
      if (stack.includes('in-memory-bus.ts') || stack.includes('handler-timeout.ts')) armed.push(t);
      return t;
    });
    const bus = new InMemoryEventBus();
    let aborted = false;
    bus.inscrever(
      'demanda.categorizada',
      'D-4',
      async (_e, ctx) => {
        await new Promise<void>((r) => ctx.signal.addEventListener('abort', () => r(), { once: true }));
        aborted = ctx.signal.aborted;
      },
      { timeoutMs: 100 },
    );
    bus.inscrever('demanda.recebida', 'D-2', () => Promise.resolve()); // quick: its 30 s timeout must be cleared, not left
    bus.inscrever('demanda.recebida', 'D-3', () => undefined); // returns at once: arms no timer at all
    await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    await bus.publicar(categorizada());
    await bus.encerrar();
    spy.mockRestore();
    expect(aborted).toBe(true);
    expect(armed.length).toBeGreaterThanOrEqual(2); // the handlers' timeouts
    // each fired, cleared, or no longer holding the process (the deadlines' shared timer, once no attempt runs)
    expect(armed.filter((t) => !(t as unknown as { _destroyed: boolean })._destroyed && t.hasRef()).length).toBe(0);
  });

  it('is a Barramento: colony code typed against the interface takes it', async () => {
    const colony = async (b: Barramento): Promise<bigint> => {
      await b.publicar(categorizada());
      return b.obterMaiorSequence();
    };
    const bus = new InMemoryEventBus();
    expect(await colony(bus)).toBe(1n);
    await bus.encerrar();
  });
});

describe('InMemoryEventBus reads, given hostile filters', () => {
  const hostile = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary', maxLength: 300 }), // NUL, control characters, lone surrogates
    fc.constantFrom('2026-02-30T00:00:00Z', '0000-01-01T00:00:00Z', '2026-01-01T00:00:00+23:00', 'x'.repeat(100_000)),
    fc.integer(),
    fc.constant(null),
  );

  it('answers or refuses with BAD_REQUEST, like the SQL reader — never another error', async () => {
    const bus = new InMemoryEventBus();
    await bus.publicar(categorizada());
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            tipo: hostile,
            origem: hostile,
            correlacao_id: hostile,
            timestamp_inicio: hostile,
            timestamp_fim: hostile,
            sequence_inicio: hostile,
            apos_sequence: hostile,
            limite: hostile,
            deslocamento: hostile,
          },
          { requiredKeys: [] },
        ),
        async (filtros) => {
          const outcome = await bus.consultarEventos(filtros as ConsultarEventosDto).then(
            (r) => (Array.isArray(r.linhas) ? 'answered' : 'malformed'),
            (e: unknown) => (e as { code?: string }).code,
          );
          expect(['answered', 'BAD_REQUEST']).toContain(outcome);
        },
      ),
      { numRuns: 300 },
    );
    await bus.encerrar();
  });
});

describe('InMemoryEventBus keyset paging', () => {
  it('proximo_cursor walks every event of a filter once, in order, whatever the page size', async () => {
    const bus = new InMemoryEventBus();
    for (let i = 0; i < 37; i++) await bus.publicar(i % 3 === 0 ? categorizada() : recebida());
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 40 }), fc.boolean(), async (limite, soCategorizadas) => {
        const f = soCategorizadas ? { tipo: 'demanda.categorizada' } : {};
        const seen: bigint[] = [];
        let cursor: string | null = null;
        do {
          const p = await bus.consultarEventos({ ...f, limite, ...(cursor === null ? {} : { apos_sequence: cursor }) });
          expect(p.total_exato).toBe(true);
          seen.push(...p.linhas.map((e) => e.sequence_number));
          cursor = p.proximo_cursor;
        } while (cursor !== null);
        const all = await bus.replayDeSequence(0);
        expect(seen).toEqual(
          all.filter((e) => !soCategorizadas || e.tipo === 'demanda.categorizada').map((e) => e.sequence_number),
        );
      }),
      { numRuns: 50 },
    );
    await expect(bus.consultarEventos({ apos_sequence: 1, deslocamento: 1 })).rejects.toMatchObject({
      code: 'BAD_REQUEST',
    });
    await bus.encerrar();
  });
});

describe('causation filled inside handlers (docs/ordering.md, issue #14)', () => {
  it('an event published by a handler takes correlacao_id and causation_id from the handled event, at any depth, from timers too, unless given', async () => {
    const bus = new InMemoryEventBus();
    const effects: EventoConsultado[] = [];
    const given = randomUUID();
    bus.inscrever('demanda.recebida', 'D-1b', async () => {
      effects.push(await bus.publicar(categorizada())); // nothing given: both filled
      // started from a timer the handler set: still its context
      await new Promise<void>((resolve) =>
        setTimeout(
          () =>
            void bus
              .publicar(categorizada())
              .then((e) => void effects.push(e))
              .then(resolve),
          1,
        ),
      );
      effects.push(await bus.publicar({ ...categorizada(), correlacao_id: given, causation_id: given }));
    });
    const chained: EventoConsultado[] = [];
    bus.inscrever('demanda.categorizada', 'D-6', async (e) => {
      if (e.causation_id === given) return;
      chained.push(
        await bus.publicar({
          tipo: 'parametros.atualizados',
          origem: 'D-6',
          payload: { ...SAMPLE_PAYLOADS['parametros.atualizados'] },
        }),
      );
    });
    const cause = await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    await bus.aguardarEntregas();
    expect(effects.map((e) => [e.correlacao_id, e.causation_id])).toEqual([
      [cause.correlacao_id, cause.event_id],
      [cause.correlacao_id, cause.event_id],
      [given, given],
    ]);
    // one level down: caused by the effect the second handler handled, same flow
    expect(chained.map((e) => [e.correlacao_id, e.causation_id]).sort()).toEqual(
      effects
        .slice(0, 2)
        .map((e) => [cause.correlacao_id, e.event_id])
        .sort(),
    );
    // outside any handler nothing is inherited
    const outside = await bus.publicar(categorizada());
    expect([outside.correlacao_id, outside.causation_id]).toEqual([outside.event_id, null]);
    await bus.encerrar();
  });
});
