import type { SchemaCatalog } from './catalog';
import type { SchemaRegistry } from './registry';
import { TopicNames } from '../wire/topics';

export interface SchemaSyncEntry {
  tipo: string;
  versao: string;
  subject: string;
  /** Registry schema id (a content id: equal texts share it). */
  id: number | undefined;
  /** What happened / what would happen. */
  status: 'registered' | 'already-registered' | 'would-register' | 'incompatible';
  messages: string[];
}

/**
 * Registers every catalog version with the registry under `<ns>.evento.<tipo>-value`, schema
 * type JSON, in ascending semver order, after setting the subject's compatibility to BACKWARD
 * (explicitly: Apicurio answers a subject without its own rule with the global one).
 * Idempotent: a version already there keeps its id.
 */
export async function syncSchemas(
  registry: SchemaRegistry,
  catalog: SchemaCatalog,
  topics: TopicNames,
): Promise<SchemaSyncEntry[]> {
  const out: SchemaSyncEntry[] = [];
  for (const tipo of catalog.tipos()) {
    const subject = TopicNames.subject(topics.evento(tipo.tipo));
    await registry.setCompatibility(subject, 'BACKWARD');
    for (const v of tipo.versoes) {
      const before = await registry.lookup(subject, v.schemaText);
      const id = before?.id ?? (await registry.register(subject, v.schemaText));
      out.push({
        tipo: tipo.tipo,
        versao: v.versao,
        subject,
        id,
        status: before ? 'already-registered' : 'registered',
        messages: [],
      });
    }
  }
  return out;
}

/**
 * Compares the catalog with what the registry holds, writing nothing: each version is
 * `already-registered`, `would-register` (compatible with the subject's latest), or
 * `incompatible` (with the registry's reasons).
 */
export async function checkSchemas(
  registry: SchemaRegistry,
  catalog: SchemaCatalog,
  topics: TopicNames,
): Promise<SchemaSyncEntry[]> {
  const out: SchemaSyncEntry[] = [];
  for (const tipo of catalog.tipos()) {
    const subject = TopicNames.subject(topics.evento(tipo.tipo));
    for (const v of tipo.versoes) {
      const found = await registry.lookup(subject, v.schemaText);
      if (found) {
        out.push({
          tipo: tipo.tipo,
          versao: v.versao,
          subject,
          id: found.id,
          status: 'already-registered',
          messages: [],
        });
        continue;
      }
      const c = await registry.compatible(subject, v.schemaText);
      out.push({
        tipo: tipo.tipo,
        versao: v.versao,
        subject,
        id: undefined,
        status: c.compatible ? 'would-register' : 'incompatible',
        messages: c.messages,
      });
    }
  }
  return out;
}
