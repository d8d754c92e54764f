import { randomUUID } from 'node:crypto';
import type { EventBus, EventoConsultado } from '../../sdk';
import { SAMPLE_PAYLOADS } from '../../sdk/testing';
import { waitFor, type TestDatabase } from './index';

export interface ColoniesWithDlq {
  /** The colonies whose handler throws now; delete one to "fix" it. */
  failing: Set<string>;
  /** Every run of a handler, in order (reprocessing runs flagged). */
  handled: Array<{ colonia: string; event_id: string; at: number; reprocessado: boolean }>;
  /** Publishes `n` events for `colonia` only and waits until each is a `pendente` entry of its DLQ. */
  publish(colonia: string, n: number): Promise<EventoConsultado[]>;
  /** Each event's DLQ state in `colonia` (undefined when it has no entry). */
  states(colonia: string, events: EventoConsultado[]): Promise<Array<string | undefined>>;
}

/**
 * Colonies for DLQ tests: each subscribes a handler `priorizar` to `demanda.recebida` that takes
 * only the events published for it (by event_id) and throws while the colony is in `failing`,
 * with no in-place retry — so each `publish` lands straight in that colony's DLQ.
 */
export async function coloniesWithDlq(
  bus: EventBus,
  db: TestDatabase,
  colonias: string[],
  failing: string[] = colonias,
): Promise<ColoniesWithDlq> {
  const colonyOf = new Map<string, string>();
  const out: ColoniesWithDlq = {
    failing: new Set(failing),
    handled: [],
    publish: async (colonia, n) => {
      const sent: EventoConsultado[] = [];
      for (let i = 0; i < n; i++) {
        const event_id = randomUUID();
        colonyOf.set(event_id, colonia);
        sent.push(
          await bus.publicar({
            event_id,
            tipo: 'demanda.recebida',
            origem: 'D-1a',
            payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
          }),
        );
      }
      await waitFor(async () => (await out.states(colonia, sent)).every((s) => s === 'pendente'), {
        message: `${n} pending entries of ${colonia}`,
      });
      return sent;
    },
    states: async (colonia, events) => {
      const { rows } = await db.pool.query<{ event_id: string; status: string }>(
        `SELECT event_id::text, status FROM core.dead_letter_queue WHERE colonia = $1 AND event_id = ANY($2::uuid[])`,
        [colonia, events.map((e) => e.event_id)],
      );
      const by = new Map(rows.map((r) => [r.event_id, r.status]));
      return events.map((e) => by.get(e.event_id));
    },
  };
  for (const colonia of colonias)
    bus.inscrever(
      'demanda.recebida',
      colonia,
      function priorizar(evento, ctx) {
        if (colonyOf.get(evento.event_id) !== colonia) return;
        out.handled.push({ colonia, event_id: evento.event_id, at: Date.now(), reprocessado: !!ctx.reprocessamento });
        if (out.failing.has(colonia)) throw new Error('serviço de priorização fora do ar');
      },
      { tentativasExtras: 0 },
    );
  await bus.inscricoesProntas();
  return out;
}
