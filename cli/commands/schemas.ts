import path from 'node:path';
import { Command } from 'commander';
import { checkSchemas, diffSchemas, SchemaCatalog, syncSchemas, type SchemaChange } from '../../sdk/wire';
import type { Context } from '../context';
import { CliError, EXIT } from '../exit-codes';
import { note, printJson, printTable } from '../output';

export const dirOption = (c: Command): Command =>
  c.option('--schemas <dir>', 'the local catalog (schemas/<tipo>/<versao>.schema.json)', 'schemas');

export function loadCatalog(dir: string): SchemaCatalog {
  try {
    return SchemaCatalog.load(path.resolve(dir));
  } catch (err) {
    throw new CliError(`cannot load the catalog in ${dir}: ${(err as Error).message}`, EXIT.USAGE);
  }
}

interface DiffEntry {
  tipo: string;
  versao: string;
  subject: string;
  /** unchanged: this text is registered; compatible / incompatible: new, per the subject's rule. */
  status: 'unchanged' | 'compatible' | 'incompatible';
  /** What changes against the subject's latest registered version. */
  changes: SchemaChange[];
  messages: string[];
}

/**
 * `schemas sync|check|diff` — straight to the registry. `diff` is the CI gate colony
 * repositories run: what each new local version changes against the subject's latest, and
 * whether the registry's compatibility rule accepts it (exit 7 when one does not).
 */
export function schemasCommand(ctx: () => Context): Command {
  const schemas = new Command('schemas').description('the local schema catalog against the registry');

  dirOption(
    schemas.command('sync').description('register every local version (idempotent; sets BACKWARD per subject)'),
  ).action(async (f: { schemas: string }) => {
    const c = ctx();
    const entries = await syncSchemas(c.registry(), loadCatalog(f.schemas), c.topics());
    if (c.out.json) return printJson(c.out, entries);
    printTable(
      c.out,
      ['STATUS', 'TIPO', 'VERSAO', 'SUBJECT', 'ID'],
      entries.map((e) => [e.status, e.tipo, e.versao, e.subject, e.id]),
    );
  });

  dirOption(schemas.command('check').description('compare without writing; exit 7 on an incompatible version')).action(
    async (f: { schemas: string }) => {
      const c = ctx();
      const entries = await checkSchemas(c.registry(), loadCatalog(f.schemas), c.topics());
      const broken = entries.filter((e) => e.status === 'incompatible');
      if (c.out.json) printJson(c.out, entries);
      else
        printTable(
          c.out,
          ['STATUS', 'TIPO', 'VERSAO', 'SUBJECT', 'WHY'],
          entries.map((e) => [e.status, e.tipo, e.versao, e.subject, e.messages.join('; ')]),
          120,
        );
      if (broken.length > 0) throw new CliError(`${broken.length} incompatible version(s)`, EXIT.CHECK_FAILED);
    },
  );

  dirOption(
    schemas
      .command('diff')
      .description('what each new local version changes, and whether it breaks compatibility (exit 7)'),
  ).action(async (f: { schemas: string }) => {
    const c = ctx();
    const registry = c.registry();
    const catalog = loadCatalog(f.schemas);
    const checked = await checkSchemas(registry, catalog, c.topics());
    const latest = new Map<string, string | undefined>();
    const out: DiffEntry[] = [];
    for (const e of checked) {
      if (e.status === 'already-registered') {
        out.push({
          tipo: e.tipo,
          versao: e.versao,
          subject: e.subject,
          status: 'unchanged',
          changes: [],
          messages: [],
        });
        continue;
      }
      if (!latest.has(e.subject)) latest.set(e.subject, (await registry.latest(e.subject))?.schema);
      const before = latest.get(e.subject);
      const local = catalog.versao(e.tipo, e.versao);
      const changes = diffSchemas(
        before === undefined ? {} : JSON.parse(before),
        local ? JSON.parse(local.schemaText) : {},
      );
      out.push({
        tipo: e.tipo,
        versao: e.versao,
        subject: e.subject,
        status: e.status === 'incompatible' ? 'incompatible' : 'compatible',
        changes,
        messages: e.messages,
      });
    }
    const broken = out.filter((e) => e.status === 'incompatible');
    if (c.out.json) printJson(c.out, { compatible: broken.length === 0, versions: out });
    else {
      for (const e of out.filter((x) => x.status !== 'unchanged')) {
        c.out.out.write(`${e.status.toUpperCase()}  ${e.tipo}@${e.versao}  (${e.subject})\n`);
        for (const ch of e.changes) c.out.out.write(`    ${ch.kind.padEnd(30)} ${ch.path || '/'}  ${ch.detail}\n`);
        for (const m of e.messages) c.out.out.write(`    registry: ${m}\n`);
      }
      note(
        c.out,
        `${out.length} version(s): ${out.filter((e) => e.status === 'unchanged').length} unchanged, ${out.filter((e) => e.status === 'compatible').length} new and compatible, ${broken.length} incompatible`,
      );
    }
    if (broken.length > 0) throw new CliError(`${broken.length} version(s) break compatibility`, EXIT.CHECK_FAILED);
  });

  return schemas;
}
