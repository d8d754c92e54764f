/**
 * The seed's colony examples (000_d900cdb6d2303392.txt, section 5: D-1a publishing, D-4
 * subscribing with a replay on start and a cursor in its own schema), as written there, minus
 * NestJS: the decorators are gone, `uuidv4` is `randomUUID`, and `EventBusService` is the
 * `Barramento` interface both buses implement. Nothing else changed, on purpose:
 * test/contract/migrating-from-mvp.int.test.ts runs this code against both buses, and
 * docs/migrating-from-mvp.md explains what behaves differently in Phase 2.
 */
import { randomUUID as uuidv4 } from 'node:crypto';
import type { Barramento as EventBusService, EventoConsultado } from '../../sdk';

export interface DemandaInput {
  texto: string;
  lat: number;
  lng: number;
  cidadaoId: string;
}

// Exemplo na D-1a (Captura)
export class CapturaService {
  constructor(private readonly eventBus: EventBusService) {}

  async receberDemanda(input: DemandaInput): Promise<{ demanda_id: string }> {
    const demandaId = uuidv4();

    await this.eventBus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      versao_schema: '1.1.0',
      event_id: demandaId,
      correlacao_id: demandaId,
      payload: {
        demanda_id: demandaId,
        texto_bruto: input.texto,
        localizacao_bruta: { lat: input.lat, lng: input.lng },
        cidadao_id: input.cidadaoId,
        canal: 'app',
      },
    });

    return { demanda_id: demandaId };
  }
}

/** The colony's `consumer_offset` table (seed 5.3), kept in memory; it records what it was asked to store. */
export class ConsumerOffsetRepository {
  readonly writes: Array<{ tipo: string; sequence: bigint | null }> = [];
  private readonly rows = new Map<string, bigint>();

  getLastSequence(tipo: string): Promise<bigint> {
    return Promise.resolve(this.rows.get(tipo) ?? 0n);
  }

  updateLastSequence(tipo: string, sequence: bigint | null): Promise<void> {
    this.writes.push({ tipo, sequence });
    // the seed's column is BIGINT NOT NULL: a null would be refused there; kept as the last value here
    if (sequence !== null) this.rows.set(tipo, sequence);
    return Promise.resolve();
  }
}

// Exemplo na D-4 (Priorização)
export class PriorizacaoService {
  private lastProcessedSequence: bigint = 0n;
  readonly processados: EventoConsultado[] = [];

  constructor(
    private readonly eventBus: EventBusService,
    private readonly offsetRepo: ConsumerOffsetRepository, // schema próprio da D-4
  ) {}

  async onModuleInit() {
    // 1. Seed do cursor com obterMaiorSequence() quando a linha não existe
    // 2. Recupera o cursor do banco próprio
    this.lastProcessedSequence = await this.offsetRepo.getLastSequence('demanda.categorizada');

    // 3. Replay dos eventos acima do cursor
    const missedEvents = await this.eventBus.replayDeSequence(this.lastProcessedSequence, [
      'demanda.categorizada',
      'parametros.atualizados',
    ]);
    for (const event of missedEvents) {
      await this.processarEvento(event);
    }

    // 4. Registra os consumidores ao vivo
    this.eventBus.inscrever('demanda.categorizada', 'D-4', this.onDemandaCategorizada.bind(this));
    this.eventBus.inscrever('parametros.atualizados', 'D-4', this.onParametrosAtualizados.bind(this));
  }

  private async processarEvento(event: EventoConsultado): Promise<void> {
    this.processados.push(event);
    await this.offsetRepo.updateLastSequence(event.tipo, event.sequence_number);
  }

  private async onDemandaCategorizada(event: EventoConsultado): Promise<void> {
    // ... lógica de ranqueamento ...
    this.processados.push(event);
    await this.offsetRepo.updateLastSequence('demanda.categorizada', event.sequence_number);
  }

  private async onParametrosAtualizados(event: EventoConsultado): Promise<void> {
    // ... recalcular ranking com novos parâmetros ...
    this.processados.push(event);
    await this.offsetRepo.updateLastSequence('parametros.atualizados', event.sequence_number);
  }
}
