import type { EventoConsultado } from '../contract';
import { SAMPLE_PAYLOADS } from '../testing';
import { createTestDatabase, waitFor, type TestDatabase } from '../../test/harness';
import { createTestBus } from '../../test/harness/bus';
import { dlqRow, startTestBridge } from '../../test/harness/bridge';
import type { EventBus } from '..';

const dlq = (db: TestDatabase, eventId: string) => dlqRow(db, eventId);

describe('reprocessing a colony’s dead letters', () => {
  let bus: EventBus;
  let db: TestDatabase;
  let failing = true;
  const runs: Array<{ manipulador: string; evento: EventoConsultado }> = [];

  beforeAll(async () => {
    bus = await createTestBus();
    db = await createTestDatabase();
    await startTestBridge(bus, db);
    bus.inscrever(
      'demanda.recebida',
      'D-14',
      function priorizar(e) {
        runs.push({ manipulador: 'priorizar', evento: e });
        if (failing) throw new Error('serviço de priorização fora do ar');
      },
      { tentativasExtras: 0 },
    );
    bus.inscrever('demanda.recebida', 'D-14', function notificar(e) {
      runs.push({ manipulador: 'notificar', evento: e });
    });
    await bus.inscricoesProntas();
  });

  it('T18: handler fails → DLQ row pendente → reprocess → resolved, rerunning only the handler that failed', async () => {
    const sent = await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    await waitFor(async () => (await dlq(db, sent.event_id))?.status === 'pendente');
    expect(
      runs
        .filter((r) => r.evento.event_id === sent.event_id)
        .map((r) => r.manipulador)
        .sort(),
    ).toEqual(['notificar', 'priorizar']);

    failing = false;
    await bus.reentregarParaColonia('demanda.recebida', 'D-14', sent, { manipulador: 'priorizar' });
    await waitFor(async () => (await dlq(db, sent.event_id))?.status === 'resolved');
    const row = await dlq(db, sent.event_id);
    expect(row?.resolvido_em).toBeInstanceOf(Date);
    expect(row?.tentativas).toBe(1);
    const mine = runs.filter((r) => r.evento.event_id === sent.event_id).map((r) => r.manipulador);
    expect(mine.sort()).toEqual(['notificar', 'priorizar', 'priorizar']); // notificar not rerun
  });

  it('counts a reprocessing that fails again as a new attempt', async () => {
    failing = true;
    const sent = await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    await waitFor(async () => (await dlq(db, sent.event_id))?.tentativas === 1);
    await bus.reentregarParaColonia('demanda.recebida', 'D-14', sent, { manipulador: 'priorizar' });
    await waitFor(async () => (await dlq(db, sent.event_id))?.tentativas === 2);
    expect((await dlq(db, sent.event_id))?.status).toBe('pendente');
  });

  it('reprocesses the redacted copy from the log when flagged, handing the handler what the log holds', async () => {
    failing = true;
    const sent = await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    await waitFor(async () => (await dlq(db, sent.event_id))?.status === 'pendente');
    const { rows } = await db.pool.query<{ payload: Record<string, unknown> }>(
      'SELECT payload FROM core.event_log WHERE event_id = $1',
      [sent.event_id],
    );
    failing = false;
    await bus.reentregarParaColonia(
      'demanda.recebida',
      'D-14',
      { ...sent, payload: rows[0]!.payload },
      { manipulador: 'priorizar', redigido: true },
    );
    await waitFor(async () => (await dlq(db, sent.event_id))?.status === 'resolved');
    const last = runs.filter((r) => r.evento.event_id === sent.event_id).at(-1);
    expect(last?.evento.payload).not.toHaveProperty('cidadao_id');
    expect(last?.evento.payload.texto_bruto).toMatch(/^hmac-sha256:/);
  });
});
