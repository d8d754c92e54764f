import { killKafkaNode, kafkaNodes, type KafkaTopology, resetKafka, startKafkaNode, fetchKafka } from './kafka';
import { fetchRegistry } from './registry';
import { down, up } from './services';
import { ToolchainError } from './toolchain';

const USAGE = `usage: tsx infra/cli.ts <command>
  fetch                    download the Kafka and Apicurio jars through Maven (cached in ~/.m2)
  up [--cluster]           start Kafka (single node, or the 3-node cluster), the registry, PostgreSQL
  down [--cluster]         stop every Kafka node and the registry (or only the 3-node cluster)
  status                   show what runs
  kill <node>              kill -9 a cluster node (kafka-1..3) keeping its data
  start-node <node>        start one cluster node again with its data
  reset [--cluster]        stop and delete a topology's Kafka data`;

function nodeByName(name: string | undefined): ReturnType<typeof kafkaNodes>[number] {
  const node = [...kafkaNodes('single'), ...kafkaNodes('cluster')].find((n) => n.name === name);
  if (!node) throw new Error(`unknown node '${name ?? ''}' (kafka, kafka-1, kafka-2, kafka-3)`);
  return node;
}

async function main(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv;
  const topology: KafkaTopology = rest.includes('--cluster') ? 'cluster' : 'single';
  switch (cmd) {
    case 'fetch':
      fetchKafka();
      fetchRegistry();
      console.log('jars ready');
      return;
    case 'up': {
      const t0 = Date.now();
      const { endpoints, plan, started } = await up({ topology });
      console.log(`services up in ${((Date.now() - t0) / 1000).toFixed(1)} s (${JSON.stringify(plan)})`);
      console.log(started.length ? `started: ${started.join(', ')}` : 'everything was already running');
      for (const [k, v] of Object.entries(endpoints)) console.log(`${k}=${v}`);
      return;
    }
    case 'down':
      await down(rest.includes('--cluster') ? ['kafka:cluster'] : undefined);
      console.log('services stopped');
      return;
    case 'status': {
      const { isRunning } = await import('./processes');
      const { registryProcess } = await import('./registry');
      for (const n of [...kafkaNodes('single'), ...kafkaNodes('cluster')]) {
        console.log(`${n.name.padEnd(16)} 127.0.0.1:${n.port}  ${isRunning(n) ? 'running' : 'stopped'}`);
      }
      console.log(
        `${'schema-registry'.padEnd(16)} 127.0.0.1:8081  ${isRunning(registryProcess) ? 'running' : 'stopped'}`,
      );
      return;
    }
    case 'kill':
      await killKafkaNode(nodeByName(rest[0]));
      console.log(`${rest[0] ?? ''} killed`);
      return;
    case 'start-node':
      await startKafkaNode(nodeByName(rest[0]));
      console.log(`${rest[0] ?? ''} started`);
      return;
    case 'reset':
      await resetKafka(topology);
      console.log(`kafka ${topology} data deleted`);
      return;
    default:
      console.error(USAGE);
      process.exitCode = 2;
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof ToolchainError ? `error: ${err.message}` : err);
  process.exit(1);
});
