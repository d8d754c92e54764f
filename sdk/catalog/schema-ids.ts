import type { VersaoCatalogada } from './catalog';
import { RegistryError } from '../errors';
import type { SchemaRegistry } from './registry';
import { TopicNames } from '../wire/topics';

/**
 * Maps a catalog version to its registry schema id, by content: the version's schema text is
 * looked up under its topic's subject (`POST /subjects/<topic>-value`). Ids are cached for the
 * life of the process, so publishing goes on while the registry is briefly unreachable; a cold
 * cache with an unreachable registry fails fast with a retriable `RegistryError`.
 */
export class SchemaIdResolver {
  private readonly ids = new Map<string, number>();
  private readonly inflight = new Map<string, Promise<number>>();

  constructor(
    private readonly registry: SchemaRegistry,
    private readonly topics: TopicNames,
  ) {}

  async idOf(versao: VersaoCatalogada): Promise<number> {
    const key = `${versao.tipo}@${versao.versao}`;
    const cached = this.ids.get(key);
    if (cached !== undefined) return cached;
    let p = this.inflight.get(key);
    if (!p) {
      p = this.resolve(versao).finally(() => this.inflight.delete(key));
      this.inflight.set(key, p);
    }
    return p;
  }

  private async resolve(versao: VersaoCatalogada): Promise<number> {
    const subject = TopicNames.subject(this.topics.evento(versao.tipo));
    const found = await this.registry.lookup(subject, versao.schemaText);
    if (!found) {
      throw new RegistryError(
        'REGISTRY_REJECTED',
        `${versao.tipo}@${versao.versao} is not registered under subject '${subject}': register the catalog first — \`await bus.sincronizarSchemas()\` in the colony, or \`npm run schemas:sync\` in the platform repository`,
      );
    }
    this.ids.set(`${versao.tipo}@${versao.versao}`, found.id);
    return found.id;
  }
}
