import fs from 'node:fs';
import { chooseServices, dockerReachable, type ServicePlan } from './environment';
import { brokersOf, type KafkaTopology, startKafka, stopKafka, waitForCluster } from './kafka';
import { STATE_DIR, stateDir } from './paths';
import { DEFAULT_DATABASE_URL, ensurePostgres } from './postgres';
import type { ContainerEndpoints } from './testcontainers';
import { startRegistry, stopRegistry, waitForRegistry } from './registry';

/** Where the services of a run are, as the `KAFKA_BROKERS` / … variables spell them. */
export interface Endpoints {
  KAFKA_BROKERS: string;
  SCHEMA_REGISTRY_URL: string;
  DATABASE_URL: string;
}

export interface UpResult {
  endpoints: Endpoints;
  plan: ServicePlan;
  /** What this call started (and so what `down` for this run should stop). */
  started: string[];
}

const CONTAINERS_FILE = stateDir('containers.json');

/**
 * Brings up what a run needs, idempotently: services already running are reused, variables
 * that are set are used as they are.
 */
export async function up({
  topology = 'single',
  env = process.env,
}: { topology?: KafkaTopology; env?: NodeJS.ProcessEnv } = {}): Promise<UpResult> {
  fs.mkdirSync(STATE_DIR, { recursive: true });
  const plan = chooseServices(env, await dockerReachable(env));
  const started: string[] = [];
  let containers: ContainerEndpoints | undefined;
  if (Object.values(plan).includes('testcontainers')) {
    const { startContainers } = await import('./testcontainers');
    containers = await startContainers();
    fs.writeFileSync(CONTAINERS_FILE, JSON.stringify({ note: 'stopped by the Testcontainers reaper' }));
    started.push('testcontainers');
  }

  const kafka = async (): Promise<string> => {
    if (plan.kafka === 'external') {
      const brokers = (env.KAFKA_BROKERS ?? '').split(',').map((s) => s.trim());
      await waitForCluster(brokers, 1);
      return brokers.join(',');
    }
    if (plan.kafka === 'testcontainers' && containers) return containers.brokers.join(',');
    const before = await alreadyUp(topology);
    const brokers = await startKafka(topology);
    if (!before) started.push(`kafka:${topology}`);
    return brokers.join(',');
  };
  const registry = async (): Promise<string> => {
    if (plan.registry === 'external') {
      await waitForRegistry(env.SCHEMA_REGISTRY_URL ?? '');
      return env.SCHEMA_REGISTRY_URL ?? '';
    }
    if (plan.registry === 'testcontainers' && containers) return containers.registryUrl;
    const { isRunning } = await import('./processes');
    const { registryProcess } = await import('./registry');
    const before = isRunning(registryProcess);
    const url = await startRegistry();
    if (!before) started.push('registry');
    return url;
  };
  const postgres = async (): Promise<string> => {
    if (plan.postgres === 'external') return ensurePostgres(env.DATABASE_URL);
    if (plan.postgres === 'testcontainers' && containers) return containers.databaseUrl;
    return ensurePostgres(DEFAULT_DATABASE_URL);
  };

  // Kafka and the registry are JVMs competing for 2 cores; their start-ups overlap well.
  const [KAFKA_BROKERS, SCHEMA_REGISTRY_URL, DATABASE_URL] = await Promise.all([kafka(), registry(), postgres()]);
  return { endpoints: { KAFKA_BROKERS, SCHEMA_REGISTRY_URL, DATABASE_URL }, plan, started };
}

async function alreadyUp(topology: KafkaTopology): Promise<boolean> {
  const { kafkaNodes } = await import('./kafka');
  const { isRunning } = await import('./processes');
  return kafkaNodes(topology).every((n) => isRunning(n));
}

/** Stops what the project's scripts started (both Kafka topologies and the registry). */
export async function down(only?: string[]): Promise<void> {
  const all = only ?? ['kafka:single', 'kafka:cluster', 'registry'];
  await Promise.all(
    all.map(async (s) => {
      if (s === 'kafka:single') await stopKafka('single');
      if (s === 'kafka:cluster') await stopKafka('cluster');
      if (s === 'registry') await stopRegistry();
    }),
  );
}

export { brokersOf };
