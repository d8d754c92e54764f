import { Kafka, logLevel } from 'kafkajs';
import { brokersOf, kafkaNodes, killKafkaNode, startKafka, startKafkaNode, stopKafka } from './kafka';
import { isRunning, portOpen } from './processes';
import { canConnect } from './postgres';
import { registryProcess, waitForRegistry } from './registry';
import { serviceEnv, waitFor } from '../test/harness';

async function brokerCount(brokers: string[]): Promise<number> {
  const admin = new Kafka({
    clientId: 'infra-test',
    brokers,
    logLevel: logLevel.NOTHING,
    retry: { retries: 1 },
  }).admin();
  try {
    await admin.connect();
    return (await admin.describeCluster()).brokers.length;
  } finally {
    await admin.disconnect();
  }
}

describe('the project scripts run real services', () => {
  it('run the single-node broker, the registry and PostgreSQL the suite uses', async () => {
    const env = serviceEnv();
    expect(await brokerCount(env.brokers)).toBeGreaterThanOrEqual(1);
    await expect(waitForRegistry(env.registryUrl, 5000)).resolves.toBeUndefined();
    expect(await canConnect(env.databaseUrl)).toBe(true);
    const ownRegistry = env.registryUrl.includes('127.0.0.1:8081/apis/ccompat');
    expect(isRunning(registryProcess)).toBe(ownRegistry);
  });

  it('start the 3-node cluster, survive kill -9 of a node, restart it with its data, and stop', async () => {
    const brokers = await startKafka('cluster');
    try {
      expect(brokers).toEqual(brokersOf('cluster'));
      expect(await brokerCount(brokers)).toBe(3);
      await expect(startKafka('cluster')).resolves.toEqual(brokers); // idempotent

      const [, node2] = kafkaNodes('cluster');
      if (!node2) throw new Error('no node 2');
      await killKafkaNode(node2);
      expect(isRunning(node2)).toBe(false);
      expect(await portOpen(node2.port)).toBe(false);
      await waitFor(async () => (await brokerCount([brokers[0] ?? ''])) === 2, { message: 'cluster sees 2 brokers' });

      await startKafkaNode(node2);
      await waitFor(async () => (await brokerCount(brokers)) === 3, { message: 'node 2 back' });
    } finally {
      await stopKafka('cluster');
    }
    for (const n of kafkaNodes('cluster')) expect(await portOpen(n.port)).toBe(false);
  }, 180_000);
});
