import fs from 'node:fs';
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import { createAjv } from './ajv';
import { backwardIncompatibilities } from './compatibility';
import { CatalogError } from '../errors';
import { policyProblems, uncoveredFields, type RedactionPolicy } from '../wire/redaction';
import { colonyCodeProblem } from '../wire/storable';

/**
 * Where the event schemas live: inside the installed package (`dist/schemas`, copied there by
 * `npm run build -w @feromonios/sdk`), or in the repository (`<root>/schemas`) when the SDK runs
 * from source.
 */
export const DEFAULT_SCHEMAS_DIR = [
  path.resolve(__dirname, '..', 'schemas'),
  path.resolve(__dirname, '..', '..', 'schemas'),
].find((dir) => fs.existsSync(path.join(dir, 'demanda.recebida', 'type.json'))) as string;

export type TipoStatus = 'active' | 'deprecated';

export interface VersaoCatalogada {
  tipo: string;
  versao: string;
  /** The JSON Schema as registered (its `$id` is `urn:feromonios:<tipo>:<versao>`). */
  schema: Record<string, unknown>;
  /** The schema text registered with the registry: stable, so lookups by content match. */
  schemaText: string;
  validate: ValidateFunction;
  file: string;
}

export interface TipoCatalogado {
  tipo: string;
  status: TipoStatus;
  descricao: string;
  /** Versions in ascending semver order. */
  versoes: VersaoCatalogada[];
  redacao: RedactionPolicy;
  /**
   * The colonies allowed to publish this type (`type.json` `"publicadores"`, at least one): the
   * SDK refuses, and the bridge quarantines, an event whose `origem` is not one of them, and the
   * generated Kafka ACLs let only their principals write the type's topic (docs/security.md).
   */
  publicadores: string[];
  /**
   * The colonies that subscribe to this type (`type.json` `"consumidores"`, may be empty): the
   * generated Kafka ACLs let only their principals read the type's topic. Not checked by the SDK
   * (the broker refuses a subscription the ACLs do not allow).
   */
  consumidores: string[];
}

const TIPO_RE = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
const SEMVER_RE = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$/;
const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';

export const schemaUrn = (tipo: string, versao: string): string => `urn:feromonios:${tipo}:${versao}`;

/** Parses `urn:feromonios:<tipo>:<versao>` back (the bridge reads it off registered schemas). */
export function parseSchemaUrn(id: unknown): { tipo: string; versao: string } | undefined {
  if (typeof id !== 'string') return undefined;
  const m = /^urn:feromonios:([a-z0-9_.]+):(\d+\.\d+\.\d+)$/.exec(id);
  return m?.[1] && m[2] ? { tipo: m[1], versao: m[2] } : undefined;
}

export function compareSemver(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}

function readJson(file: string): unknown {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    throw new CatalogError('missing', file);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CatalogError(`not valid JSON (${(err as Error).message})`, file);
  }
}

/**
 * The event types of `schemas/`: one folder per type holding `type.json` (status, publishers,
 * subscribers),
 * `redaction.json` (policy) and one `<semver>.schema.json` per version. Loading checks the
 * catalog itself — malformed schema, missing or incomplete policy, a version that breaks
 * backward compatibility with the previous one — and throws a `CatalogError` naming the file.
 * Validators are compiled once, here.
 */
export class SchemaCatalog {
  private static readonly cache = new Map<string, SchemaCatalog>();
  private readonly byTipo: Map<string, TipoCatalogado>;

  private constructor(
    readonly dir: string,
    tipos: TipoCatalogado[],
  ) {
    this.byTipo = new Map(tipos.map((t) => [t.tipo, t]));
  }

  /** Loads (once per directory per process) and checks the catalog. */
  static load(dir: string = DEFAULT_SCHEMAS_DIR): SchemaCatalog {
    const abs = path.resolve(dir);
    let cat = SchemaCatalog.cache.get(abs);
    if (!cat) {
      cat = SchemaCatalog.build(abs);
      SchemaCatalog.cache.set(abs, cat);
    }
    return cat;
  }

  /** Loads without the process cache (tests of the checks themselves). */
  static build(dir: string): SchemaCatalog {
    if (!fs.existsSync(dir)) throw new CatalogError('schema directory does not exist', dir);
    const ajv = createAjv();
    const tipos: TipoCatalogado[] = [];
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      if (!entry.isDirectory()) continue;
      tipos.push(loadTipo(path.join(dir, entry.name), entry.name, ajv));
    }
    if (tipos.length === 0) throw new CatalogError('no event types found', dir);
    return new SchemaCatalog(dir, tipos);
  }

  tipos(): TipoCatalogado[] {
    return [...this.byTipo.values()];
  }

  tipo(tipo: string): TipoCatalogado | undefined {
    return this.byTipo.get(tipo);
  }

  versao(tipo: string, versao: string): VersaoCatalogada | undefined {
    return this.byTipo.get(tipo)?.versoes.find((v) => v.versao === versao);
  }
}

function loadTipo(dir: string, tipo: string, ajv: ReturnType<typeof createAjv>): TipoCatalogado {
  if (!TIPO_RE.test(tipo))
    throw new CatalogError(`type name must look like 'dominio.evento' (lowercase, dot-separated)`, dir);
  const typeFile = path.join(dir, 'type.json');
  const meta = readJson(typeFile) as {
    status?: unknown;
    descricao?: unknown;
    publicadores?: unknown;
    consumidores?: unknown;
  };
  if (meta.status !== 'active' && meta.status !== 'deprecated') {
    throw new CatalogError(`"status" must be "active" or "deprecated"`, typeFile);
  }
  const publicadores = colonyList(meta.publicadores, 'publicadores', typeFile, { required: true });
  const consumidores = colonyList(meta.consumidores, 'consumidores', typeFile, { required: false });
  const policyFile = path.join(dir, 'redaction.json');
  const policy = readJson(policyFile);
  const problems = policyProblems(policy);
  if (problems.length > 0) throw new CatalogError(`invalid redaction policy: ${problems.join('; ')}`, policyFile);

  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.schema.json'));
  const versoes: VersaoCatalogada[] = [];
  for (const f of files) {
    const file = path.join(dir, f);
    const versao = f.slice(0, -'.schema.json'.length);
    if (!SEMVER_RE.test(versao)) throw new CatalogError(`file name must be <major>.<minor>.<patch>.schema.json`, file);
    const schema = readJson(file) as Record<string, unknown>;
    if (schema.$schema !== DRAFT_2020) throw new CatalogError(`"$schema" must be "${DRAFT_2020}"`, file);
    if (schema.$id !== schemaUrn(tipo, versao))
      throw new CatalogError(`"$id" must be "${schemaUrn(tipo, versao)}"`, file);
    if (schema.type !== 'object') throw new CatalogError(`the payload schema must have "type": "object"`, file);
    if (JSON.stringify(schema).includes('"$ref":"http') || /"\$ref":"(?!#)/.test(JSON.stringify(schema))) {
      throw new CatalogError(
        'external $ref is not allowed (Redpanda does not resolve them): keep schemas self-contained',
        file,
      );
    }
    let validate: ValidateFunction;
    try {
      validate = ajv.compile(schema);
    } catch (err) {
      throw new CatalogError(`not a valid draft 2020-12 schema: ${(err as Error).message}`, file);
    }
    const uncovered = uncoveredFields(schema, policy as RedactionPolicy);
    if (uncovered.length > 0) {
      throw new CatalogError(
        `fields without a redaction rule in ${path.basename(policyFile)}: ${uncovered.join(', ')}`,
        file,
      );
    }
    versoes.push({ tipo, versao, schema, schemaText: JSON.stringify(schema), validate, file });
  }
  if (versoes.length === 0) throw new CatalogError('no <semver>.schema.json version', dir);
  versoes.sort((a, b) => compareSemver(a.versao, b.versao));
  for (let i = 1; i < versoes.length; i++) {
    const prev = versoes[i - 1];
    const cur = versoes[i];
    if (!prev || !cur) continue;
    const breaks = backwardIncompatibilities(prev.schema, cur.schema);
    if (breaks.length > 0) {
      throw new CatalogError(`breaks backward compatibility with ${prev.versao}: ${breaks.join('; ')}`, cur.file);
    }
  }
  return {
    tipo,
    status: meta.status,
    descricao: typeof meta.descricao === 'string' ? meta.descricao : '',
    versoes,
    redacao: policy as RedactionPolicy,
    publicadores,
    consumidores,
  };
}

/** A `type.json` list of colony codes: each a valid, distinct code; `required` lists need one. */
function colonyList(value: unknown, field: string, file: string, { required }: { required: boolean }): string[] {
  if (value === undefined && !required) return [];
  if (!Array.isArray(value) || (required && value.length === 0))
    throw new CatalogError(
      `"${field}" must be ${required ? 'a non-empty' : 'an'} array of colony codes (e.g. ["D-3"])${required ? ': the colonies allowed to publish this type' : ''}`,
      file,
    );
  const seen = new Set<string>();
  for (const c of value) {
    const problem = colonyCodeProblem(c);
    if (problem) throw new CatalogError(`"${field}": ${JSON.stringify(c)} is not a colony code (${problem})`, file);
    if (seen.has(c as string)) throw new CatalogError(`"${field}": ${JSON.stringify(c)} is listed twice`, file);
    seen.add(c as string);
  }
  return [...seen];
}
