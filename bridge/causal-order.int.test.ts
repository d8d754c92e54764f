import { randomUUID } from 'node:crypto';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import type { EventBus, EventoConsultado, PublicarEventoDto } from '../sdk';
import { SchemaCatalog } from '../sdk/wire';
import { createTestBus } from '../test/harness/bus';
import { logRows, startTestBridge } from '../test/harness/bridge';
import { createTestDatabase, randomNamespace, waitFor, type TestDatabase } from '../test/harness';

/**
 * Issue #14, with the real services: the canonical sequence follows causes and publish order
 * across topics, with a backlog (bridge stopped, then restarted) and two bridge instances.
 * docs/ordering.md states what is guaranteed; bridge/causal-order.unit.test.ts the pure rules.
 */
const TYPES = ['demanda.recebida', 'demanda.normalizada', 'demanda.categorizada', 'parametros.atualizados'] as const;
/** `origem` is the catalog's publisher of `tipo`: the colony codes of these tests say who handles, not who signs. */
const dto = (tipo: string, _colonia: string, over: Partial<PublicarEventoDto> = {}): PublicarEventoDto => ({
  tipo,
  origem: SchemaCatalog.load().tipo(tipo)!.publicadores[0]!,
  payload: { ...SAMPLE_PAYLOADS[tipo] },
  ...over,
});

describe('causal order in core.event_log (issue #14)', () => {
  let db: TestDatabase;
  let namespace: string;
  let publisher: EventBus;

  beforeAll(async () => {
    db = await createTestDatabase();
    namespace = randomNamespace();
    publisher = await createTestBus({ namespace, pool: db.pool });
  });

  /** Sequence number per event_id, once every id is in the log. */
  const sequences = async (ids: string[], timeoutMs = 120_000): Promise<Map<string, bigint>> => {
    const seq = await waitFor(
      async () => {
        const rows = await logRows(db);
        const m = new Map(rows.map((r) => [r.event_id, BigInt(r.sequence_number)]));
        return ids.every((id) => m.has(id)) && m;
      },
      { timeoutMs, message: `${ids.length} events in the log` },
    );
    return seq;
  };

  it('200 flows of 3–5 steps, each step a different colony reacting to the previous, across a bridge stop and two instances: 0 effects before their cause; sequential publishes and publicarLote in publish order', async () => {
    // four colonies, each its own bus (its own producer), each reacting to one type with the next
    const colonies = await Promise.all(TYPES.map(() => createTestBus({ namespace, pool: db.pool })));
    // correlacao_id → the flow: its planned length, the next step to publish, and per step the
    // published event with the event its handler was handling
    const flows = new Map<
      string,
      { planned: number; next: number; steps: Array<{ e: EventoConsultado; cause?: string }> }
    >();
    colonies.forEach((bus, k) => {
      const next = TYPES[(k + 1) % TYPES.length] as string;
      bus.inscrever(TYPES[k] as string, `C-${k + 1}`, async (e) => {
        const flow = flows.get(e.correlacao_id as string);
        if (!flow || flow.next >= flow.planned) return; // not a flow's event, or its last step
        const step = flow.next++;
        // no correlacao_id, no causation_id: the SDK takes both from the event being handled
        flow.steps[step] = { e: await bus.publicar(dto(next, `C-${k + 1}`)), cause: e.event_id };
      });
    });
    await Promise.all(colonies.map((b) => b.inscricoesProntas()));

    const sequential: EventoConsultado[][] = [];
    const batches: EventoConsultado[][] = [];
    const wave = async (count: number) => {
      const starts: Array<Promise<unknown>> = [];
      for (let i = 0; i < count; i++) {
        const correlacao_id = randomUUID();
        const flow = { planned: 3 + (i % 3), next: 1, steps: [] as Array<{ e: EventoConsultado; cause?: string }> };
        flows.set(correlacao_id, flow);
        starts.push(
          publisher
            .publicar(dto('demanda.recebida', 'D-1a', { correlacao_id, event_id: correlacao_id }))
            .then((e) => (flow.steps[0] = { e })),
        );
        // one producer, four types, each publish acknowledged before the next is sent
        if (i % 10 === 0) {
          const flow: EventoConsultado[] = [];
          for (const tipo of TYPES) flow.push(await publisher.publicar(dto(tipo, 'D-9')));
          sequential.push(flow);
          batches.push(await publisher.publicarLote([...TYPES].reverse().map((t) => dto(t, 'D-9'))));
        }
      }
      await Promise.all(starts);
    };

    const first = [await startTestBridge(publisher, db), await startTestBridge(publisher, db)];
    await wave(100);
    await Promise.all(first.map((b) => b.stop())); // a backlog builds up while no bridge runs
    await wave(100);
    const complete = (f: { planned: number; steps: unknown[] }) => f.steps.filter(Boolean).length === f.planned;
    await waitFor(() => [...flows.values()].every(complete), {
      timeoutMs: 120_000,
      message: 'every flow published all its steps',
    });
    await startTestBridge(publisher, db);
    await startTestBridge(publisher, db);

    const flowEvents = [...flows.values()].flatMap((f) => f.steps);
    const all = [...flowEvents.map((x) => x.e), ...sequential.flat(), ...batches.flat()].map((e) => e.event_id);
    const seq = await sequences(all);

    // the SDK filled causation and correlation from the handled event; every effect after its cause
    const rows = new Map((await logRows(db)).map((r) => [r.event_id, r]));
    const violations: string[] = [];
    for (const [correlacao_id, flow] of flows) {
      for (const { e, cause } of flow.steps.slice(1)) {
        expect(rows.get(e.event_id)).toMatchObject({ causation_id: cause, correlacao_id });
        if ((seq.get(cause as string) as bigint) > (seq.get(e.event_id) as bigint))
          violations.push(`${cause as string} → ${e.event_id}`);
      }
    }
    expect(violations).toEqual([]);
    expect(flowEvents).toHaveLength([...flows.values()].reduce((n, f) => n + f.planned, 0));
    expect(flowEvents.length).toBe(798); // two waves of 100 flows: 34 of 3 steps, 33 of 4, 33 of 5

    // one producer's sequential publishes, and a publicarLote, in publish order across four topics
    const outOfOrder = [...sequential, ...batches].filter((flow) => {
      const s = flow.map((e) => seq.get(e.event_id) as bigint);
      return s.some((v, i) => i > 0 && v <= (s[i - 1] as bigint));
    });
    expect(outOfOrder).toEqual([]);
    expect(sequential.length).toBe(20);
  }, 240_000);

  it('a cause that never arrives: the effect is written after the hold, counted and logged, and unrelated events are not held behind it', async () => {
    const bus = await createTestBus({ pool: db.pool });
    const { metrics } = await startTestBridge(bus, db, { causalHoldMs: 3_000 });
    const missing = randomUUID();
    const held = await bus.publicar(dto('demanda.categorizada', 'D-3', { causation_id: missing }));
    const heldAt = Date.now();
    const unrelated = await bus.publicar(dto('demanda.normalizada', 'D-1b'));
    // the event caused by the held one waits for it, then follows it
    const effect = await bus.publicar(dto('parametros.atualizados', 'D-9', { causation_id: held.event_id }));
    const unrelatedSeq = (await sequences([unrelated.event_id], 30_000)).get(unrelated.event_id) as bigint;
    expect((await logRows(db)).map((r) => r.event_id)).not.toContain(held.event_id); // still held
    const seq = await sequences([held.event_id, effect.event_id], 30_000);
    expect(Date.now() - heldAt).toBeGreaterThanOrEqual(3_000 - 500); // staged a little after publish
    expect(seq.get(held.event_id)).toBeGreaterThan(unrelatedSeq);
    expect(seq.get(effect.event_id)).toBeGreaterThan(seq.get(held.event_id) as bigint);
    expect((await metrics.causalHoldExpired.get()).values[0]?.value).toBe(1);
  });
});
