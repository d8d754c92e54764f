import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, stateDir } from './paths';
import { isRunning, type ManagedProcess, sleep, startDetached, stopProcess, waitForLogLine } from './processes';
import { findJava, runMaven } from './toolchain';

/**
 * Apicurio Registry 3.x from Maven Central, H2 storage in .infra/registry/data. Code talks only to its
 * Confluent-compatible API (`/apis/ccompat/v7`), the same API Redpanda's registry serves.
 */
export const REGISTRY_PORT = 8081;
export const REGISTRY_MANAGEMENT_PORT = 8082;
export const registryUrl = (): string => `http://127.0.0.1:${REGISTRY_PORT}/apis/ccompat/v7`;

const DIR = stateDir('registry');
const APP_DIR = path.join(DIR, 'app');

export const registryProcess: ManagedProcess = {
  name: 'schema-registry',
  pidFile: path.join(DIR, 'registry.pid'),
  logFile: path.join(DIR, 'registry.log'),
};

export function fetchRegistry(): void {
  if (fs.existsSync(path.join(APP_DIR, 'quarkus-run.jar'))) return;
  const download = path.join(DIR, 'download');
  fs.mkdirSync(download, { recursive: true });
  runMaven(path.join(ROOT, 'infra', 'maven', 'apicurio'), ['dependency:copy', `-DoutputDirectory=${download}`]);
  const tarball = fs.readdirSync(download).find((f) => f.endsWith('.tar.gz'));
  if (!tarball) throw new Error(`Maven finished but no Apicurio tar.gz is in ${download}`);
  fs.mkdirSync(APP_DIR, { recursive: true });
  execFileSync('tar', ['xzf', path.join(download, tarball), '-C', APP_DIR]);
  fs.rmSync(download, { recursive: true, force: true }); // the tarball stays cached in ~/.m2
}

/** Starts the registry (no-op if it runs) and waits until its Confluent API answers. */
export async function startRegistry(timeoutMs = 120_000): Promise<string> {
  if (isRunning(registryProcess)) {
    await waitForRegistry(registryUrl(), timeoutMs);
    return registryUrl();
  }
  fetchRegistry();
  const java = findJava(21); // Apicurio 3.3 is compiled for Java 21
  const offset = startDetached(
    registryProcess,
    java,
    [
      '-Xmx512m',
      '-XX:TieredStopAtLevel=1',
      '-Dquarkus.http.host=127.0.0.1',
      `-Dquarkus.http.port=${REGISTRY_PORT}`,
      '-Dquarkus.management.host=127.0.0.1',
      `-Dquarkus.management.port=${REGISTRY_MANAGEMENT_PORT}`,
      '-Dapicurio.storage.kind=sql',
      '-Dapicurio.storage.sql.kind=h2',
      // On disk, so a stop/start (outage tests) keeps subjects and ids, as a real registry does.
      `-Dapicurio.datasource.url=jdbc:h2:file:${path.join(DIR, 'data', 'registry')}`,
      // Its default JSON compatibility checker cannot parse draft 2020-12 (Apicurio #9079).
      '-Dapicurio.compat.json-schema.use-apitomy=true',
      '-jar',
      'quarkus-run.jar',
    ],
    { cwd: APP_DIR },
  );
  await waitForLogLine(registryProcess, /started in [\d.]+s/, offset, timeoutMs);
  await waitForRegistry(registryUrl(), timeoutMs);
  return registryUrl();
}

export async function stopRegistry(): Promise<void> {
  await stopProcess(registryProcess);
}

/** Readiness: the Confluent-compatible API lists subjects with HTTP 200. */
export async function waitForRegistry(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  for (;;) {
    try {
      const res = await fetch(`${url}/subjects`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`schema registry at ${url} not ready: ${last}`);
    await sleep(300);
  }
}
