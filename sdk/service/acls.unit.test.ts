import fc from 'fast-check';
import { SchemaCatalog } from '../catalog/catalog';
import { ConfigError } from '../errors';
import { TopicNames } from '../wire/topics';
import { aclsDoCatalogo, descreverAcl, diferencaAcls, principalGerido, type Acl, type CatalogoDeAcls } from './acls';

const topics = new TopicNames('feromonios');
const real = aclsDoCatalogo(SchemaCatalog.load(), topics);
const of = (acls: Acl[], principal: string, operation: Acl['operation'], resource: Acl['resource'] = 'topic') =>
  acls
    .filter((a) => a.principal === principal && a.operation === operation && a.resource === resource)
    .map((a) => (a.pattern === 'prefixed' ? `${a.name}*` : a.name))
    .sort();

describe('ACLs generated from the catalog', () => {
  it("lets each colony write only its types' topics and its DLQ, read only what it consumes, under its own group", () => {
    expect(of(real, 'User:colonia-D-3', 'write')).toEqual([
      'feromonios.dlq.D-3',
      'feromonios.evento.demanda.categorizada',
    ]);
    expect(of(real, 'User:colonia-D-3', 'read')).toEqual([
      'feromonios.evento.demanda.normalizada',
      'feromonios.reprocessar.D-3',
    ]);
    expect(of(real, 'User:colonia-D-3', 'read', 'group')).toEqual(['feromonios.colonia.D-3']);
    expect(of(real, 'User:colonia-D-4', 'write')).toEqual(['feromonios.dlq.D-4']);
    expect(of(real, 'User:colonia-D-4', 'read')).toEqual([
      'feromonios.evento.demanda.categorizada',
      'feromonios.evento.parametros.atualizados',
      'feromonios.reprocessar.D-4',
    ]);
    // the deprecated type: nobody may write it any more
    expect(real.filter((a) => a.name === 'feromonios.evento.demanda.legada' && a.operation === 'write')).toEqual([]);
    // nothing but ALLOW bindings this module can express, and no cluster-wide grant
    expect(new Set(real.map((a) => a.resource))).toEqual(new Set(['topic', 'group']));
  });

  it('gives the bridge reads of every event and DLQ topic and one write: the quarantine topic', () => {
    expect(of(real, 'User:feromonios-bridge', 'write')).toEqual(['feromonios.quarentena']);
    expect(of(real, 'User:feromonios-bridge', 'read')).toEqual(['feromonios.dlq.*', 'feromonios.evento.*']);
    expect(of(real, 'User:feromonios-bridge', 'read', 'group')).toEqual(['feromonios-bridge*']);
    expect(of(real, 'User:feromonios-plataforma', 'write')).toEqual(['feromonios.dlq.*', 'feromonios.reprocessar.*']);
    expect(descreverAcl(real.find((a) => a.principal === 'User:feromonios-bridge' && a.operation === 'write')!)).toBe(
      'User:feromonios-bridge WRITE topic feromonios.quarentena',
    );
  });

  it('follows the principal template and the bridge group, and refuses principals the broker could not parse', () => {
    const acls = aclsDoCatalogo(SchemaCatalog.load(), topics, {
      colonia: 'User:{colonia}.prefeitura',
      bridge: 'User:ponte',
      grupoBridge: 'ponte-grupo',
    });
    expect(of(acls, 'User:D-3.prefeitura', 'write')).toContain('feromonios.evento.demanda.categorizada');
    expect(of(acls, 'User:ponte', 'read', 'group')).toEqual(['ponte-grupo*']);
    expect(principalGerido('User:D-9.prefeitura', topics, { colonia: 'User:{colonia}.prefeitura' })).toBe(true);
    expect(principalGerido('User:alguem', topics, { colonia: 'User:{colonia}.prefeitura' })).toBe(false);
    for (const bad of [
      { colonia: 'User:colonia' }, // no {colonia}
      { colonia: 'colonia-{colonia}' }, // no User:
      { bridge: 'User:a b' },
      { bridge: 'User:a,b' },
      { bridge: 'User:x', plataforma: 'User:x' },
    ])
      expect(() => aclsDoCatalogo(SchemaCatalog.load(), topics, bad)).toThrow(ConfigError);
  });

  const colony = fc.constantFrom('A-1', 'B-2', 'C-3', 'D-4', 'E-5');
  const catalogs = fc
    .uniqueArray(
      fc.record({
        tipo: fc.constantFrom('a.x', 'b.y', 'c.z', 'd.w'),
        status: fc.constantFrom('active' as const, 'deprecated' as const),
        publicadores: fc.uniqueArray(colony, { minLength: 1, maxLength: 3 }),
        consumidores: fc.uniqueArray(colony, { maxLength: 3 }),
      }),
      { selector: (t) => t.tipo, minLength: 1 },
    )
    .map((tipos): CatalogoDeAcls => ({ tipos: () => tipos }));

  it('property: a colony writes an event topic exactly when the catalog lists it as an active type’s publisher', () => {
    fc.assert(
      fc.property(catalogs, (cat) => {
        const acls = aclsDoCatalogo(cat, topics);
        for (const t of cat.tipos())
          for (const c of ['A-1', 'B-2', 'C-3', 'D-4', 'E-5']) {
            const writes = acls.some(
              (a) => a.principal === `User:colonia-${c}` && a.operation === 'write' && a.name === topics.evento(t.tipo),
            );
            const reads = acls.some(
              (a) => a.principal === `User:colonia-${c}` && a.operation === 'read' && a.name === topics.evento(t.tipo),
            );
            expect(writes).toBe(t.status === 'active' && t.publicadores.includes(c));
            expect(reads).toBe(t.consumidores.includes(c));
          }
        // no colony may use another colony's group, DLQ or reprocessing topic
        for (const a of acls.filter((x) => x.principal.startsWith('User:colonia-'))) {
          const c = a.principal.slice('User:colonia-'.length);
          const own =
            a.resource === 'group'
              ? a.name === topics.grupo(c)
              : a.name.startsWith('feromonios.dlq.')
                ? a.name === topics.dlq(c)
                : a.name.startsWith('feromonios.reprocessar.')
                  ? a.name === topics.reprocessar(c)
                  : topics.tipoDe(a.name) !== undefined;
          expect([a.name, own, a.pattern]).toEqual([a.name, true, 'literal']);
        }
      }),
    );
  });

  it('property: applying the difference reaches the wanted set, a second difference is empty, foreign ACLs are never touched', () => {
    const acl: fc.Arbitrary<Acl> = fc.record({
      principal: fc.constantFrom('User:colonia-A-1', 'User:colonia-B-2', 'User:feromonios-bridge', 'User:monitor'),
      resource: fc.constantFrom('topic' as const, 'group' as const),
      pattern: fc.constantFrom('literal' as const, 'prefixed' as const),
      name: fc.constantFrom('feromonios.evento.a.x', 'feromonios.dlq.A-1', 'feromonios.colonia.A-1'),
      operation: fc.constantFrom('read' as const, 'write' as const, 'describe' as const),
    });
    const managed = (a: Acl) => principalGerido(a.principal, topics);
    const key = (a: Acl) => JSON.stringify(a);
    fc.assert(
      fc.property(fc.array(acl), fc.array(acl), (anyWanted, cluster) => {
        const wanted = anyWanted.filter(managed); // the catalog only ever wants managed principals
        const d = diferencaAcls(wanted, cluster, managed);
        const after = new Map(cluster.map((a) => [key(a), a]));
        d.remover.forEach((a) => after.delete(key(a)));
        d.adicionar.forEach((a) => after.set(key(a), a));
        const afterList = [...after.values()];
        // managed bindings now are exactly the wanted ones; foreign ones are as they were
        expect(new Set(afterList.filter(managed).map(key))).toEqual(new Set(wanted.map(key)));
        expect(new Set(afterList.filter((a) => !managed(a)).map(key))).toEqual(
          new Set(cluster.filter((a) => !managed(a)).map(key)),
        );
        expect(d.remover.some((a) => !managed(a))).toBe(false);
        const again = diferencaAcls(wanted, afterList, managed);
        expect([again.adicionar, again.remover]).toEqual([[], []]);
      }),
    );
  });
});
