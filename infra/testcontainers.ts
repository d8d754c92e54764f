import type { StartedTestContainer } from 'testcontainers';

/**
 * Redpanda (Kafka API + built-in schema registry) and PostgreSQL through Testcontainers, for
 * machines with a Docker engine and no service variables set. Host ports are fixed so the
 * broker can advertise an address the host reaches. Not exercised on machines without Docker.
 */
export const REDPANDA_IMAGE = 'docker.redpanda.com/redpandadata/redpanda:v24.2.18';
export const POSTGRES_IMAGE = 'postgres:16-alpine';

export interface ContainerEndpoints {
  brokers: string[];
  registryUrl: string;
  databaseUrl: string;
  stop(): Promise<void>;
}

export async function startContainers(): Promise<ContainerEndpoints> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const started: StartedTestContainer[] = [];
  const redpanda = await new GenericContainer(REDPANDA_IMAGE)
    .withExposedPorts({ container: 9092, host: 9092 }, { container: 8081, host: 8081 })
    .withCommand([
      'redpanda',
      'start',
      '--mode',
      'dev-container',
      '--smp',
      '1',
      '--kafka-addr',
      'PLAINTEXT://0.0.0.0:9092',
      '--advertise-kafka-addr',
      'PLAINTEXT://127.0.0.1:9092',
      '--schema-registry-addr',
      '0.0.0.0:8081',
      '--set',
      'redpanda.auto_create_topics_enabled=false',
    ])
    .withWaitStrategy(Wait.forLogMessage(/Successfully started Redpanda!/))
    .start();
  started.push(redpanda);
  const postgres = await new GenericContainer(POSTGRES_IMAGE)
    .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
    .withExposedPorts(5432)
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .start();
  started.push(postgres);
  return {
    brokers: ['127.0.0.1:9092'],
    registryUrl: 'http://127.0.0.1:8081',
    databaseUrl: `postgres://postgres@127.0.0.1:${postgres.getMappedPort(5432)}/postgres`,
    stop: async () => {
      for (const c of started.reverse()) await c.stop();
    },
  };
}
