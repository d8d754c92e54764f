import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  ResourcePatternTypes,
  type Admin,
  type AclEntry,
} from 'kafkajs';
import type { TipoCatalogado } from '../catalog/catalog';
import { ConfigError } from '../errors';
import type { TopicNames } from '../wire/topics';

/**
 * Kafka ACLs generated from the catalog (docs/security.md, "Who may do what"): each colony's
 * principal writes only the topics of the types it publishes (`type.json` `publicadores`) and
 * its own DLQ topic, reads only the topics of the types it consumes (`consumidores`) and its own
 * reprocessing topic, under its own group only; the bridge's principal reads every event and
 * DLQ topic and writes only the quarantine topic; the platform's principal (the audit API's DLQ
 * reprocessing, the CLI's reads) reads and writes DLQ topics and writes reprocessing topics.
 * Every binding is an ALLOW for any host; nothing else is granted, so the broker's authorizer
 * denies the rest.
 */

export type AclResource = 'topic' | 'group';
export type AclPattern = 'literal' | 'prefixed';
export type AclOperation = 'read' | 'write' | 'create' | 'delete' | 'describe';

/** One ALLOW binding, as `kafka-acls --list` would show it. */
export interface Acl {
  principal: string;
  resource: AclResource;
  pattern: AclPattern;
  name: string;
  operation: AclOperation;
}

export interface AclPrincipals {
  /**
   * The principal of a colony: `{colonia}` is replaced by its code. Default `User:colonia-{colonia}`
   * (the SASL user or, with mutual TLS, the certificate's name mapped by
   * `ssl.principal.mapping.rules`).
   */
  colonia?: string;
  /** Default `User:feromonios-bridge`. */
  bridge?: string;
  /** The audit API's and the CLI's principal. Default `User:feromonios-plataforma`. */
  plataforma?: string;
  /** The bridge's consumer group (`BRIDGE_GROUP_ID`); its DLQ lane uses `<group>.dlq`. Default `<ns>-bridge`. */
  grupoBridge?: string;
}

const PRINCIPAL_RE = /^User:[^\s;,]{1,200}$/;

const DEFAULT_COLONIA = 'User:colonia-{colonia}';

/** The principals, checked once: names, the colony template, and which principals are managed. */
function principals(topics: TopicNames, p: AclPrincipals) {
  const colonia = p.colonia ?? DEFAULT_COLONIA;
  const bridge = p.bridge ?? 'User:feromonios-bridge';
  const plataforma = p.plataforma ?? 'User:feromonios-plataforma';
  const problems: Array<[field: string, problem: string]> = [];
  if (!colonia.includes('{colonia}')) problems.push(['colonia', 'the template must contain {colonia}']);
  for (const [k, v] of [
    ['colonia', colonia.replace('{colonia}', 'D-1')],
    ['bridge', bridge],
    ['plataforma', plataforma],
  ] as const)
    if (!PRINCIPAL_RE.test(v)) problems.push([k, 'expected "User:<name>" without spaces, commas or semicolons']);
  if (bridge === plataforma) problems.push(['plataforma', "must be a principal other than the bridge's"]);
  if (problems.length > 0)
    throw new ConfigError(
      `ACL principals: ${problems.map(([k, m]) => `${k}: ${m}`).join('; ')}`,
      problems.map(([k]) => `principals.${k}`),
    );
  const [antes, depois = ''] = colonia.split('{colonia}') as [string, string?];
  return {
    colonia: (c: string) => colonia.replaceAll('{colonia}', c),
    bridge,
    plataforma,
    grupoBridge: p.grupoBridge ?? `${topics.namespace}-bridge`,
    /** The bridge's, the platform's, or a colony's by the template. */
    gerido: (principal: string): boolean =>
      principal === bridge ||
      principal === plataforma ||
      (principal.length > antes.length + depois.length && principal.startsWith(antes) && principal.endsWith(depois)),
  };
}

/** What the ACLs are generated from: a `SchemaCatalog`, or anything listing types the same way. */
export interface CatalogoDeAcls {
  tipos(): Array<Pick<TipoCatalogado, 'tipo' | 'status' | 'publicadores' | 'consumidores'>>;
}

/** The ACLs the catalog calls for, sorted and without repeats. */
export function aclsDoCatalogo(catalog: CatalogoDeAcls, topics: TopicNames, p: AclPrincipals = {}): Acl[] {
  const who = principals(topics, p);
  const out: Acl[] = [];
  const add = (principal: string, resource: AclResource, pattern: AclPattern, name: string, ops: AclOperation[]) =>
    ops.forEach((operation) => out.push({ principal, resource, pattern, name, operation }));
  const colonias = new Set<string>();
  for (const t of catalog.tipos()) {
    const topic = topics.evento(t.tipo);
    // a deprecated type is refused from every producer: nobody writes its topic any more
    if (t.status === 'active')
      for (const c of t.publicadores) {
        colonias.add(c);
        // CREATE: the SDK creates the topics it uses when they are missing (sdk/wire/topics.ts)
        add(who.colonia(c), 'topic', 'literal', topic, ['write', 'describe', 'create']);
      }
    for (const c of t.consumidores) {
      colonias.add(c);
      add(who.colonia(c), 'topic', 'literal', topic, ['read', 'describe', 'create']);
    }
  }
  for (const c of colonias) {
    const principal = who.colonia(c);
    add(principal, 'group', 'literal', topics.grupo(c), ['read']);
    add(principal, 'topic', 'literal', topics.dlq(c), ['write', 'describe', 'create']);
    add(principal, 'topic', 'literal', topics.reprocessar(c), ['read', 'describe', 'create']);
  }
  const ns = topics.namespace;
  // the bridge: reads everything it mirrors, writes only the quarantine topic
  add(who.bridge, 'topic', 'prefixed', topics.prefixoEventos, ['read', 'describe']);
  add(who.bridge, 'topic', 'prefixed', `${ns}.dlq.`, ['read', 'describe']);
  add(who.bridge, 'topic', 'literal', topics.quarentena(), ['write', 'describe', 'create']);
  add(who.bridge, 'group', 'prefixed', who.grupoBridge, ['read']);
  // the lag gauges read every colony group's committed offsets
  add(who.bridge, 'group', 'prefixed', `${ns}.colonia.`, ['describe']);
  // the platform: DLQ reprocessing (reads a DLQ with a throwaway group, records outcomes on it,
  // sends to a colony's reprocessing topic) and the CLI's topic listing
  add(who.plataforma, 'topic', 'prefixed', `${ns}.`, ['describe']);
  add(who.plataforma, 'topic', 'prefixed', `${ns}.dlq.`, ['read', 'write']);
  add(who.plataforma, 'topic', 'prefixed', `${ns}.reprocessar.`, ['write', 'create']);
  add(who.plataforma, 'group', 'prefixed', `${ns}.dlq.`, ['read', 'delete']);
  return dedupe(out);
}

const keyOf = (a: Acl): string => [a.principal, a.resource, a.pattern, a.name, a.operation].join('\u0000');

function dedupe(acls: Acl[]): Acl[] {
  const byKey = new Map(acls.map((a) => [keyOf(a), a]));
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, a]) => a);
}

export interface DiferencaAcls {
  /** Wanted by the catalog, missing on the cluster. */
  adicionar: Acl[];
  /** On the cluster for a managed principal, on this namespace, and not wanted any more. */
  remover: Acl[];
  /** Already as wanted. */
  iguais: number;
  /**
   * ACLs on this namespace's resources for principals this command does not manage (or DENY
   * bindings, or a host other than `*`): shown, never changed.
   */
  alheias: Acl[];
}

/**
 * What differs between the ACLs `desejadas` and those on the cluster (`atuais`, read by
 * `aclsNoCluster`). Only bindings of the managed principals are added or removed; an ACL of any
 * other principal is reported in `alheias` and left alone.
 */
export function diferencaAcls(desejadas: Acl[], atuais: Acl[], gerida: (a: Acl) => boolean): DiferencaAcls {
  const want = new Map(desejadas.map((a) => [keyOf(a), a]));
  const have = new Map(atuais.filter(gerida).map((a) => [keyOf(a), a]));
  return {
    adicionar: dedupe([...want].filter(([k]) => !have.has(k)).map(([, a]) => a)),
    remover: dedupe([...have].filter(([k]) => !want.has(k)).map(([, a]) => a)),
    iguais: [...want.keys()].filter((k) => have.has(k)).length,
    alheias: dedupe(atuais.filter((a) => !gerida(a))),
  };
}

const RESOURCE: Record<AclResource, AclResourceTypes> = {
  topic: AclResourceTypes.TOPIC,
  group: AclResourceTypes.GROUP,
};
const PATTERN: Record<AclPattern, ResourcePatternTypes> = {
  literal: ResourcePatternTypes.LITERAL,
  prefixed: ResourcePatternTypes.PREFIXED,
};
const OPERATION: Record<AclOperation, AclOperationTypes> = {
  read: AclOperationTypes.READ,
  write: AclOperationTypes.WRITE,
  create: AclOperationTypes.CREATE,
  delete: AclOperationTypes.DELETE,
  describe: AclOperationTypes.DESCRIBE,
};
const invert = <K extends string, V extends number>(m: Record<K, V>): Map<number, K> =>
  new Map(Object.entries(m).map(([k, v]) => [v as number, k as K]));
const RESOURCE_NAME = invert(RESOURCE);
const PATTERN_NAME = invert(PATTERN);
const OPERATION_NAME = invert(OPERATION);

const toEntry = (a: Acl): AclEntry => ({
  principal: a.principal,
  host: '*',
  operation: OPERATION[a.operation],
  permissionType: AclPermissionTypes.ALLOW,
  resourceType: RESOURCE[a.resource],
  resourceName: a.name,
  resourcePatternType: PATTERN[a.pattern],
});

/**
 * The cluster's ACLs on this namespace's resources (topics and groups named `<ns>.…` or
 * `<ns>-…`, literal or prefixed), for any principal. `exprimivel` is false for a binding this
 * module never writes (a DENY, a host other than `*`, another resource type or operation): such
 * a binding is reported, never changed. Needs a principal allowed to describe ACLs (`DESCRIBE`
 * on the cluster: an operator's or a super user's).
 */
export async function aclsNoCluster(
  admin: Admin,
  topics: TopicNames,
): Promise<Array<{ acl: Acl; exprimivel: boolean }>> {
  const res = await admin.describeAcls({
    resourceType: AclResourceTypes.ANY,
    resourcePatternType: ResourcePatternTypes.ANY,
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  });
  const ns = topics.namespace;
  const out: Array<{ acl: Acl; exprimivel: boolean }> = [];
  for (const r of res.resources) {
    if (!(r.resourceName.startsWith(`${ns}.`) || r.resourceName.startsWith(`${ns}-`))) continue;
    const resource = RESOURCE_NAME.get(r.resourceType);
    const pattern = PATTERN_NAME.get(r.resourcePatternType);
    for (const a of r.acls) {
      const operation = OPERATION_NAME.get(a.operation);
      out.push({
        acl: {
          principal: a.principal,
          resource: resource ?? 'topic',
          pattern: pattern ?? 'literal',
          name: r.resourceName,
          operation: operation ?? 'describe',
        },
        exprimivel:
          resource !== undefined &&
          pattern !== undefined &&
          operation !== undefined &&
          a.host === '*' &&
          a.permissionType === AclPermissionTypes.ALLOW,
      });
    }
  }
  return out;
}

export interface PlanoAcls extends DiferencaAcls {
  desejadas: Acl[];
}

/** Whether `principal` is one this module manages: the bridge's, the platform's, or a colony's by the template. */
export function principalGerido(principal: string, topics: TopicNames, p: AclPrincipals = {}): boolean {
  return principals(topics, p).gerido(principal);
}

/**
 * Reads the cluster's ACLs and compares them with what the catalog calls for. Only bindings of
 * managed principals (`principalGerido`) that this module can express are added or removed;
 * everything else on the namespace is `alheias`.
 */
export async function planejarAcls(
  admin: Admin,
  catalog: CatalogoDeAcls,
  topics: TopicNames,
  p: AclPrincipals = {},
): Promise<PlanoAcls> {
  const { gerido } = principals(topics, p); // refuses bad names before reading the cluster
  const desejadas = aclsDoCatalogo(catalog, topics, p);
  const lidas = await aclsNoCluster(admin, topics);
  const d = diferencaAcls(
    desejadas,
    lidas.filter((x) => x.exprimivel).map((x) => x.acl),
    (a) => gerido(a.principal),
  );
  return {
    desejadas,
    ...d,
    alheias: dedupe([...d.alheias, ...lidas.filter((x) => !x.exprimivel).map((x) => x.acl)]),
  };
}

/**
 * Makes the cluster's ACLs on this namespace what the catalog calls for: creates the missing
 * bindings, deletes the managed ones no longer wanted (a colony removed from a type's
 * `publicadores` loses its write), leaves `alheias` alone. Idempotent: a second run changes
 * nothing. Returns what it changed.
 */
export async function aplicarAcls(
  admin: Admin,
  catalog: CatalogoDeAcls,
  topics: TopicNames,
  p: AclPrincipals = {},
): Promise<PlanoAcls> {
  const plano = await planejarAcls(admin, catalog, topics, p);
  if (plano.adicionar.length > 0) await admin.createAcls({ acl: plano.adicionar.map(toEntry) });
  // one exact filter per binding: each deletes that binding and nothing else
  if (plano.remover.length > 0) await admin.deleteAcls({ filters: plano.remover.map(toEntry) });
  return plano;
}

/** `kafka-acls`-like one line: `+ User:colonia-D-3 WRITE topic feromonios.evento.demanda.categorizada`. */
export function descreverAcl(a: Acl): string {
  return `${a.principal} ${a.operation.toUpperCase()} ${a.resource}${a.pattern === 'prefixed' ? ' (prefix)' : ''} ${a.name}`;
}
