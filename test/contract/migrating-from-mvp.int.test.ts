import type { Barramento } from '../../sdk';
import { InMemoryEventBus, SAMPLE_PAYLOADS } from '../../sdk/testing';
import { createTestDatabase, waitFor } from '../harness';
import { startTestBridge } from '../harness/bridge';
import { createTestBus } from '../harness/bus';
import { CapturaService, ConsumerOffsetRepository, PriorizacaoService } from './seed-colonies';

/**
 * The seed's colony examples, unchanged (test/contract/seed-colonies.ts), against both buses:
 * what docs/migrating-from-mvp.md says holds on each.
 */
describe.each([
  [
    'EventBus',
    async (): Promise<Barramento> => {
      const db = await createTestDatabase();
      const bus = await createTestBus({ pool: db.pool });
      await startTestBridge(bus, db);
      return bus;
    },
  ],
  ['InMemoryEventBus', (): Promise<Barramento> => Promise.resolve(new InMemoryEventBus())],
])('the seed colonies on %s', (_name, make) => {
  it('D-1a publishes; D-4 replays what it missed, then takes live events (whose sequence_number is null)', async () => {
    const bus = await make();
    try {
      const captura = new CapturaService(bus);
      const { demanda_id } = await captura.receberDemanda({
        texto: "Falta d'água na Rua das Flores",
        lat: -23.5505,
        lng: -46.6333,
        cidadaoId: 'u1',
      });
      const recebida = await waitFor(() => bus.obterEventoPorId(demanda_id), {
        message: 'demanda.recebida in the log',
      });
      expect(recebida).toMatchObject({ tipo: 'demanda.recebida', versao_schema: '1.1.0', correlacao_id: demanda_id });
      expect(recebida.payload).not.toHaveProperty('cidadao_id'); // replayed payloads are redacted

      // D-4 was down while D-3 categorised: it catches up through the replay on start
      const missed = await bus.publicar({
        tipo: 'demanda.categorizada',
        origem: 'D-3',
        correlacao_id: demanda_id,
        causation_id: demanda_id,
        payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'], demanda_id },
      });
      await waitFor(() => bus.obterEventoPorId(missed.event_id), { message: 'the missed event in the log' });
      const offsets = new ConsumerOffsetRepository();
      const d4 = new PriorizacaoService(bus, offsets);
      await d4.onModuleInit();
      expect(d4.processados.map((e) => e.event_id)).toEqual([missed.event_id]);
      const replayed = d4.processados[0]!;
      expect(typeof replayed.sequence_number).toBe('bigint'); // replayed events carry their sequence
      expect(await offsets.getLastSequence('demanda.categorizada')).toBe(replayed.sequence_number);

      // live: delivered through the colony's consumer group, with the full payload and no sequence
      await bus.inscricoesProntas();
      const live = await bus.publicar({
        tipo: 'parametros.atualizados',
        origem: 'D-6',
        payload: { ...SAMPLE_PAYLOADS['parametros.atualizados'] },
      });
      await waitFor(() => d4.processados.some((e) => e.event_id === live.event_id), {
        message: 'the live event at D-4',
      });
      const delivered = d4.processados.find((e) => e.event_id === live.event_id)!;
      expect(delivered.sequence_number).toBeNull();
      expect(offsets.writes.at(-1)).toEqual({ tipo: 'parametros.atualizados', sequence: null });
    } finally {
      await bus.encerrar();
    }
  }, 90_000);
});
