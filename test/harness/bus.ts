import { EventBus, jsonLogger, silentLogger, type OpcoesEventBusEntrada } from '../../sdk';
import { randomNamespace, registerCleanup, serviceEnv } from './index';

/**
 * An `EventBus` on the real services, in a topic namespace of its own with the catalog
 * synced to the registry, closed when the file ends.
 */
export async function createTestBus(overrides: Partial<OpcoesEventBusEntrada> = {}): Promise<EventBus> {
  const env = serviceEnv();
  const bus = new EventBus({
    brokers: env.brokers,
    registryUrl: env.registryUrl,
    namespace: randomNamespace(),
    // FEROMONIOS_TEST_BUS_LOG=1: the SDK's warnings and errors on stderr (debugging a fault test)
    logger: process.env.FEROMONIOS_TEST_BUS_LOG
      ? jsonLogger('sdk', 'warn', (l) => process.stderr.write(l + '\n'))
      : silentLogger,
    topics: { partitions: 3, replicationFactor: -1, retentionMs: 3_600_000 },
    ...overrides,
  });
  registerCleanup(() => bus.encerrar());
  if (overrides.registry === undefined) await bus.sincronizarSchemas();
  return bus;
}

/** The seed's sample events (section 7.3), as publish DTOs. */
export const SEED_EVENTS = [
  {
    event_id: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890',
    tipo: 'demanda.recebida',
    versao_schema: '1.0.0',
    timestamp: '2026-06-15T10:30:00Z',
    origem: 'D-1a',
    correlacao_id: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890',
    payload: {
      demanda_id: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890',
      texto_bruto: "Falta d'água na Rua das Flores",
      localizacao_bruta: { lat: -23.5505, lng: -46.6333 },
      cidadao_id: 'u1',
      canal: 'app',
    },
  },
  {
    event_id: 'b2c3d4e5-f6a7-8901-bcde-f12345678901',
    tipo: 'demanda.normalizada',
    versao_schema: '1.0.0',
    timestamp: '2026-06-15T10:30:05Z',
    origem: 'D-1b',
    correlacao_id: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890',
    payload: {
      demanda_id: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890',
      titulo: 'Falta de água na Rua das Flores',
      descricao_limpa: 'Falta dágua na Rua das Flores',
      confianca_normalizacao: 0.95,
    },
  },
  {
    event_id: 'c3d4e5f6-a7b8-9012-cdef-123456789012',
    tipo: 'demanda.categorizada',
    versao_schema: '1.0.0',
    timestamp: '2026-06-15T10:30:10Z',
    origem: 'D-3',
    correlacao_id: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890',
    payload: {
      demanda_id: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890',
      categoria_id: '1.1',
      nivel_precedencia: 1,
      score_horizontal: 95,
      confianca_categorizacao: 0.88,
      metodo: 'automatico',
    },
  },
] as const;
