import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomNamespace, serviceEnv } from './harness';

/**
 * The colony package proven from outside (issue #15): `npm pack` of `sdk/`, installed from the
 * tarball in a project outside the repository, used there as a colony team would — a CommonJS
 * colony and an ESM colony, type-checked with the tsconfig `tsc --init` writes, compiled, and
 * run with plain `node` against the real services: each publishes an event and receives it.
 */
const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

const CJS_COLONY = `import sdk = require('@feromonios/sdk');
import testing = require('@feromonios/sdk/testing');
import type { EventoConsultado, OpcoesEventBusEntrada } from '@feromonios/sdk';

async function main(): Promise<void> {
  const options: OpcoesEventBusEntrada = {
    brokers: (process.env['KAFKA_BROKERS'] ?? '127.0.0.1:9092').split(','),
    registryUrl: process.env['SCHEMA_REGISTRY_URL'] ?? 'http://127.0.0.1:8081/apis/ccompat/v7',
    clientId: 'PKG-cjs',
    namespace: process.env['COLONY_NAMESPACE'] ?? 'pkg',
    logger: sdk.silentLogger,
  };
  const bus = new sdk.EventBus(options);
  try {
    await bus.sincronizarSchemas(); // a fresh namespace: register the catalog shipped in the package
    const received = new Promise<EventoConsultado>((resolve) => {
      bus.inscrever('demanda.recebida', 'PKG-cjs', async (evento) => resolve(evento));
    });
    await bus.inscricoesProntas();
    let refused = '';
    try {
      await bus.publicar({ tipo: 'nao.existe', origem: 'PKG-cjs', payload: {} });
    } catch (err) {
      if (err instanceof sdk.PublishValidationError) refused = err.code;
    }
    const sent = await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...testing.SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    const got = await received;
    console.log(JSON.stringify({ module: typeof require, sent: sent.event_id, received: got.event_id, refused }));
  } finally {
    await bus.encerrar();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
`;

const ESM_COLONY = `import { EventBus, PublishValidationError, silentLogger, type Barramento, type EventoConsultado } from '@feromonios/sdk';
import { InMemoryEventBus, SAMPLE_PAYLOADS } from '@feromonios/sdk/testing';

// colony code typed against the interface runs on the in-memory bus of its unit tests…
async function capture(b: Barramento): Promise<bigint | null> {
  const e = await b.publicar({ tipo: 'demanda.recebida', origem: 'D-1a', payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] } });
  return e.sequence_number;
}
const memory = new InMemoryEventBus();
const inMemorySequence = String(await capture(memory));
await memory.encerrar();

const bus = new EventBus({
  brokers: (process.env['KAFKA_BROKERS'] ?? '127.0.0.1:9092').split(','),
  registryUrl: process.env['SCHEMA_REGISTRY_URL'] ?? 'http://127.0.0.1:8081/apis/ccompat/v7',
  clientId: 'PKG-esm',
  namespace: process.env['COLONY_NAMESPACE'] ?? 'pkg',
  logger: silentLogger,
});
try {
  await bus.sincronizarSchemas(); // a fresh namespace: register the catalog shipped in the package
  const received = new Promise<EventoConsultado>((resolve) => {
    bus.inscrever('demanda.recebida', 'PKG-esm', async (evento) => resolve(evento));
  });
  await bus.inscricoesProntas();
  let refused = '';
  try {
    await bus.publicar({ tipo: 'nao.existe', origem: 'PKG-esm', payload: {} });
  } catch (err) {
    if (err instanceof PublishValidationError) refused = err.code;
  }
  const sent = await bus.publicar({
    tipo: 'demanda.recebida',
    origem: 'D-1a',
    payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
  });
  const got = await received;
  await capture(bus); // …and on the real one
  console.log(JSON.stringify({ module: typeof require, sent: sent.event_id, received: got.event_id, refused, inMemorySequence }));
} finally {
  await bus.encerrar();
}
`;

describe('the colony package, installed from its tarball outside the repository', () => {
  let project: string;
  let tarball: string;
  let packed: { size: number; unpackedSize: number; files: Array<{ path: string }> };

  beforeAll(async () => {
    project = fs.mkdtempSync(path.join(os.tmpdir(), 'feromonios-colony-'));
    const { stdout } = await run('npm', ['pack', '--workspace', 'sdk', '--pack-destination', project, '--json'], {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
    });
    const info = (JSON.parse(stdout) as Array<typeof packed & { filename: string }>)[0];
    if (!info) throw new Error(`npm pack printed no package: ${stdout.slice(0, 500)}`);
    packed = info;
    tarball = path.join(project, info.filename);
    fs.writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'colonia-de-fora', version: '1.0.0', private: true }),
    );
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], {
      cwd: project,
      maxBuffer: 64 * 1024 * 1024,
    });
    await run(process.execPath, [TSC, '--init'], { cwd: project });
    fs.writeFileSync(path.join(project, 'colony.cts'), CJS_COLONY);
    fs.writeFileSync(path.join(project, 'colony.mts'), ESM_COLONY);
  }, 240_000);

  afterAll(() => fs.rmSync(project, { recursive: true, force: true }));

  it('ships what runs: built JavaScript, declarations and the schemas — no sources, tests or server code', () => {
    const files = packed.files.map((f) => f.path);
    expect(files).toEqual(
      expect.arrayContaining(['package.json', 'dist/index.js', 'dist/index.mjs', 'dist/index.d.ts']),
    );
    expect(files).toContain('dist/schemas/demanda.recebida/1.0.0.schema.json');
    const stray = files.filter(
      (f) =>
        (f.endsWith('.ts') && !f.endsWith('.d.ts')) || /\.test\.|(^|\/)(bridge|audit-api|test|bench|infra)\//.test(f),
    );
    expect(stray).toEqual([]);
    const manifest = JSON.parse(
      fs.readFileSync(path.join(project, 'node_modules', '@feromonios', 'sdk', 'package.json'), 'utf8'),
    ) as { dependencies: Record<string, string> };
    expect(Object.keys(manifest.dependencies).sort()).toEqual([
      '@opentelemetry/api',
      '@types/pg',
      'ajv',
      'ajv-formats',
      // reads of the log's cold archive (Parquet, ADR 0018): pure JavaScript, no install scripts
      'hyparquet',
      'hyparquet-writer',
      'kafkajs',
      'pg',
      'prom-client',
    ]);
  });

  it('type-checks a CommonJS and an ESM colony with the tsconfig `tsc --init` writes, with zero errors', async () => {
    const errors = await run(process.execPath, [TSC, '-p', project], { cwd: project }).then(
      () => '',
      (err: Error & { stdout?: string }) => err.stdout || err.message,
    );
    expect(errors).toBe('');
    expect(fs.existsSync(path.join(project, 'colony.cjs'))).toBe(true);
    expect(fs.existsSync(path.join(project, 'colony.mjs'))).toBe(true);
  }, 120_000);

  it.each([
    ['CommonJS', 'colony.cjs', 'function'],
    ['ESM', 'colony.mjs', 'undefined'],
  ])(
    'a %s colony run with plain node publishes and receives an event',
    async (_kind, file, requireType) => {
      const { stdout } = await run(process.execPath, [path.join(project, file)], {
        cwd: project,
        timeout: 90_000,
        env: {
          PATH: process.env.PATH ?? '',
          KAFKA_BROKERS: serviceEnv().brokers.join(','),
          SCHEMA_REGISTRY_URL: serviceEnv().registryUrl,
          COLONY_NAMESPACE: randomNamespace(),
        },
      });
      const out = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Record<string, string>;
      expect(out.module).toBe(requireType); // really loaded as CommonJS / as ESM
      expect(out.sent).toMatch(/^[0-9a-f-]{36}$/);
      expect(out.received).toBe(out.sent);
      expect(out.refused).toBe('UNKNOWN_TYPE');
      expect(out.inMemorySequence).toBe(file === 'colony.mjs' ? '1' : undefined); // the testing entry's bus (ESM colony)
    },
    120_000,
  );
});
