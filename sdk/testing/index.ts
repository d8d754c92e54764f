/**
 * @module @feromonios/sdk/testing — helpers for colonies' own tests (kept out of the main
 * entry): `InMemoryEventBus`, the bus without services, and valid sample payloads of every
 * catalog type.
 */
export { InMemoryEventBus, type EntregaRegistrada, type OpcoesBarramentoEmMemoria } from './in-memory-bus';
export const SAMPLE_PAYLOADS: Readonly<Record<string, Record<string, unknown>>> = {
  'demanda.recebida': {
    demanda_id: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890',
    texto_bruto: "Falta d'água na Rua das Flores",
    localizacao_bruta: { lat: -23.5505, lng: -46.6333 },
    cidadao_id: 'u1',
    canal: 'app',
  },
  'demanda.normalizada': {
    demanda_id: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890',
    titulo: 'Falta de água na Rua das Flores',
    descricao_limpa: 'Falta dágua na Rua das Flores',
    confianca_normalizacao: 0.95,
  },
  'demanda.categorizada': {
    demanda_id: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890',
    categoria_id: '1.1',
    nivel_precedencia: 1,
    score_horizontal: 95,
    confianca_categorizacao: 0.88,
    metodo: 'automatico',
  },
  'parametros.atualizados': {
    parametro_id: 'peso.urgencia',
    valor_anterior: 1,
    valor_novo: 1.5,
    responsavel_id: 'op-7',
  },
};
