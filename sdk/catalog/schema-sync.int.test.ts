import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { SchemaCatalog } from './catalog';
import { ConfluentSchemaRegistry } from './registry';
import { checkSchemas, syncSchemas } from './schema-sync';
import { TopicNames } from '../wire/topics';
import { randomNamespace, serviceEnv } from '../../test/harness';

const catalog = SchemaCatalog.load();
const registry = (): ConfluentSchemaRegistry => new ConfluentSchemaRegistry({ url: serviceEnv().registryUrl });

function runScript(mode: 'sync' | 'check', namespace: string): { status: number | null; out: string } {
  const res = spawnSync(
    process.execPath,
    // `npm run schemas:sync|check` = the CLI's `feromonios schemas sync|check`
    [path.join(__dirname, '..', '..', 'cli', 'bin', 'feromonios.cjs'), 'schemas', mode],
    {
      encoding: 'utf8',
      env: { ...process.env, FEROMONIOS_TOPIC_NAMESPACE: namespace },
    },
  );
  return { status: res.status, out: res.stdout + res.stderr };
}

describe('schema registry sync and check', () => {
  it('registers every version under <ns>.evento.<tipo>-value, idempotently, with stable ids', async () => {
    const topics = new TopicNames(randomNamespace());
    const first = await syncSchemas(registry(), catalog, topics);
    const total = catalog.tipos().reduce((n, t) => n + t.versoes.length, 0);
    expect(first).toHaveLength(total);
    expect(first.every((e) => e.status === 'registered' && typeof e.id === 'number')).toBe(true);
    expect(first.find((e) => e.tipo === 'demanda.recebida' && e.versao === '1.1.0')?.subject).toBe(
      `${topics.namespace}.evento.demanda.recebida-value`,
    );
    const second = await syncSchemas(registry(), catalog, topics);
    expect(second.map((e) => [e.status, e.id])).toEqual(first.map((e) => ['already-registered', e.id]));
  });

  it('check writes nothing and reports what sync would do', async () => {
    const ns = randomNamespace();
    const before = await registry().subjects();
    const { status, out } = runScript('check', ns);
    expect(status).toBe(0);
    expect(out).toContain('would-register');
    expect((await registry().subjects()).filter((s) => s.startsWith(`${ns}.`))).toEqual([]);
    expect(before.filter((s) => s.startsWith(`${ns}.`))).toEqual([]);
    const synced = runScript('sync', ns);
    expect(synced.status).toBe(0);
    expect(runScript('check', ns).out).toMatch(/already-registered\s+demanda\.recebida\s+1\.1\.0/);
  }, 60_000);

  it('check exits non-zero when a catalog version breaks compatibility with what the registry holds', async () => {
    const topics = new TopicNames(randomNamespace());
    const subject = TopicNames.subject(topics.evento('demanda.categorizada'));
    const reg = registry();
    await reg.setCompatibility(subject, 'BACKWARD');
    // The registry already holds a version whose payloads the catalog's 1.0.0 would reject.
    const older = JSON.parse(catalog.versao('demanda.categorizada', '1.0.0')!.schemaText) as {
      $id: string;
      properties: { metodo: { enum: string[] } };
    };
    older.$id = 'urn:feromonios:demanda.categorizada:0.9.0';
    older.properties.metodo.enum.push('hibrido');
    await reg.register(subject, JSON.stringify(older));
    const report = await checkSchemas(reg, catalog, topics);
    expect(report.find((e) => e.tipo === 'demanda.categorizada')?.status).toBe('incompatible');
    const { status, out } = runScript('check', topics.namespace);
    expect(status).toBe(7); // docs/cli.md: a check failed
    expect(out).toMatch(/incompatible\s+demanda\.categorizada\s+1\.0\.0/);
  }, 60_000);
});
