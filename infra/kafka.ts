import { createHash } from 'node:crypto';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { ROOT, stateDir } from './paths';
import { SUPER_USER, testPki } from './tls';
import { isRunning, type ManagedProcess, sleep, startDetached, stopProcess, waitForLogLine } from './processes';
import { findJava, runMaven } from './toolchain';

/**
 * Apache Kafka in KRaft mode, run from the jars Maven Central serves (no tarball, no Docker).
 * `single` is one combined broker+controller on 127.0.0.1:9092; `cluster` is three combined
 * nodes on 127.0.0.1:29092-29094 with replication factor 3 and min.insync.replicas=2.
 *
 * Every node also has a `PROXIED` listener (`proxiedPort`) that advertises `proxyPort` instead
 * of its own: a client bootstrapped at the proxy ports reaches every broker through whatever
 * listens there — the fault tests' TCP proxy (test/harness/fault-proxy.ts, docs/reliability.md).
 * Nothing listens on `proxyPort` otherwise; clients of `port` never see it.
 */
export type KafkaTopology = 'single' | 'cluster';

/** Fixed KRaft cluster id (22 chars, base64url): formatting needs no extra JVM start. */
const CLUSTER_ID = 'feromoniosKraftCluster';

export interface KafkaNode extends ManagedProcess {
  id: number;
  topology: KafkaTopology;
  port: number;
  controllerPort: number;
  /** Where the broker listens for the PROXIED listener (reached only through the proxy). */
  proxiedPort: number;
  /** What the PROXIED listener advertises: the fault proxy's port in front of `proxiedPort`. */
  proxyPort: number;
  /** SASL_SSL listener: SCRAM-SHA-256/512 and PLAIN over TLS (docs/security.md). */
  securePort: number;
  /** SSL listener requiring a client certificate (mutual TLS). */
  mtlsPort: number;
  dataDir: string;
  configFile: string;
}

const LIBS_DIR = stateDir('kafka', 'libs');

export function kafkaNodes(topology: KafkaTopology): KafkaNode[] {
  const ids = topology === 'single' ? [1] : [1, 2, 3];
  return ids.map((id) => {
    const dir = stateDir('kafka', topology, `node-${id}`);
    return {
      id,
      topology,
      name: topology === 'single' ? 'kafka' : `kafka-${id}`,
      port: topology === 'single' ? 9092 : 29091 + id,
      controllerPort: topology === 'single' ? 9093 : 29191 + id,
      proxiedPort: topology === 'single' ? 9094 : 29291 + id,
      proxyPort: topology === 'single' ? 9095 : 29391 + id,
      securePort: topology === 'single' ? 9096 : 29591 + id,
      mtlsPort: topology === 'single' ? 9097 : 29691 + id,
      dataDir: path.join(dir, 'data'),
      configFile: path.join(dir, 'server.properties'),
      pidFile: path.join(dir, 'kafka.pid'),
      logFile: path.join(dir, 'kafka.log'),
    };
  });
}

export const brokersOf = (topology: KafkaTopology): string[] => kafkaNodes(topology).map((n) => `127.0.0.1:${n.port}`);

/**
 * Copies the broker's runtime jars, Kafka's command-line tools (the Java console consumer the
 * ACL tests use as a non-SDK client) and a log4j2 binding into .infra/kafka/libs — again only
 * when infra/maven/kafka/pom.xml changed (the marker holds its hash).
 */
export function fetchKafka(): void {
  const marker = path.join(LIBS_DIR, '.complete');
  const pom = fs.readFileSync(path.join(ROOT, 'infra', 'maven', 'kafka', 'pom.xml'));
  const wanted = createHash('sha256').update(pom).digest('hex');
  if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8').trim() === wanted) return;
  fs.mkdirSync(LIBS_DIR, { recursive: true });
  runMaven(path.join(ROOT, 'infra', 'maven', 'kafka'), [
    'dependency:copy-dependencies',
    '-DincludeScope=runtime',
    `-DoutputDirectory=${LIBS_DIR}`,
  ]);
  if (!fs.readdirSync(LIBS_DIR).some((f) => f.startsWith('kafka_2.13-'))) {
    throw new Error(`Maven finished but no kafka_2.13 jar is in ${LIBS_DIR}`);
  }
  fs.writeFileSync(marker, wanted);
}

function serverProperties(node: KafkaNode, all: KafkaNode[]): string {
  const voters = all.map((n) => `${n.id}@127.0.0.1:${n.controllerPort}`).join(',');
  const rf = all.length;
  const lines = [
    'process.roles=broker,controller',
    `node.id=${node.id}`,
    `controller.quorum.voters=${voters}`,
    'controller.listener.names=CONTROLLER',
    `listeners=PLAINTEXT://127.0.0.1:${node.port},CONTROLLER://127.0.0.1:${node.controllerPort},PROXIED://127.0.0.1:${node.proxiedPort},SASL_SSL://127.0.0.1:${node.securePort},SSL://127.0.0.1:${node.mtlsPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${node.port},PROXIED://127.0.0.1:${node.proxyPort},SASL_SSL://127.0.0.1:${node.securePort},SSL://127.0.0.1:${node.mtlsPort}`,
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,PROXIED:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL',
    ...secureListeners(),
    'inter.broker.listener.name=PLAINTEXT',
    ...authorizer(),
    `log.dirs=${node.dataDir}`,
    // Topics are created explicitly by the SDK's admin client, never by a produce or fetch.
    'auto.create.topics.enable=false',
    `offsets.topic.replication.factor=${rf}`,
    `transaction.state.log.replication.factor=${rf}`,
    `transaction.state.log.min.isr=${Math.min(2, rf)}`,
    `share.coordinator.state.topic.replication.factor=${rf}`,
    `default.replication.factor=${rf}`,
    `min.insync.replicas=${Math.min(2, rf)}`,
    'group.initial.rebalance.delay.ms=0',
    'num.network.threads=2',
    'num.io.threads=2',
    'num.partitions=3',
    'log.segment.bytes=67108864',
    // Retention is enforced every 2 s (default 5 min): the retention-gap tests give a topic a
    // retention of seconds and wait for its records to go. Topics' own retention.ms is unchanged.
    'log.retention.check.interval.ms=2000',
    // A 1 MB payload plus headers and framing exceeds the 1 MB default.
    'message.max.bytes=2097152',
    'replica.fetch.max.bytes=2097152',
    // Quick failover on loopback: a dead broker is fenced within seconds.
    'broker.session.timeout.ms=3000',
    'broker.heartbeat.interval.ms=500',
  ];
  return lines.join('\n') + '\n';
}

/**
 * The secure listeners' settings: the test PKI (infra/tls.ts) as PEM key- and truststores,
 * SCRAM-SHA-256/512 (users created by `ensureScramUsers`) and PLAIN (users in the JAAS line) on
 * SASL_SSL, a required client certificate on SSL. Brokers talk to each other in PLAINTEXT.
 */
function secureListeners(): string[] {
  const pki = testPki();
  const plainUsers = Object.entries(pki.users.plain)
    .map(([user, pw]) => `user_${user}="${pw}"`)
    .join(' ');
  return [
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${pki.brokerKeystoreFile}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${pki.caFile}`,
    'listener.name.ssl.ssl.client.auth=required',
    'listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN',
    'listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;',
    `listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ${plainUsers};`,
  ];
}

/**
 * Runs one of Kafka's own command-line tools — a Java client, beside the SDK and kafkajs — from
 * the fetched jars, e.g. `org.apache.kafka.tools.consumer.ConsoleConsumer`. Resolves with its
 * exit code and output; `input` is its standard input; killed after `timeoutMs`.
 */
export function runKafkaTool(
  mainClass: string,
  args: string[],
  { timeoutMs = 60_000, input }: { timeoutMs?: number; input?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(findJava(17), ['-cp', `${LIBS_DIR}/*`, mainClass, ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end(input ?? '');
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

/**
 * The standard KRaft authorizer, so the per-colony ACLs (`feromonios acls`, docs/security.md) are
 * enforced as on a managed cluster. The PLAINTEXT and PROXIED listeners (the tests, the brokers
 * among themselves, the controllers) authenticate as `User:ANONYMOUS`, a super user: everything
 * that does not pass a principal keeps working unchanged. So are the test's own SASL and
 * mutual-TLS identities; the colonies', the bridge's and the platform's principals are not: they
 * get only what the ACLs grant.
 */
function authorizer(): string[] {
  const pki = testPki();
  const supers = [
    'User:ANONYMOUS',
    `User:${SUPER_USER}`,
    ...Object.keys(pki.users.plain).map((u) => `User:${u}`),
    `User:CN=${pki.clientCommonName}`,
  ];
  return [
    'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    `super.users=${supers.join(';')}`,
  ];
}

/**
 * Creates the test SCRAM users (both mechanisms) through the PLAINTEXT listener with Kafka's own
 * ConfigCommand — once per set of users: a marker in the data directory remembers it.
 */
export function ensureScramUsers(topology: KafkaTopology): void {
  const pki = testPki();
  const marker = stateDir('kafka', topology, 'scram-users.json');
  const wanted = JSON.stringify(pki.users.scram);
  if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === wanted) return;
  const java = findJava(17);
  const [first] = kafkaNodes(topology);
  if (!first) throw new Error(`no node in topology ${topology}`);
  for (const [user, pw] of Object.entries(pki.users.scram))
    for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-512']) {
      // one mechanism per request (the broker refuses two changes of one user in one request)
      const args = ['--alter', '--add-config', `${mechanism}=[iterations=4096,password=${pw}]`];
      try {
        execFileSync(
          java,
          ['-cp', `${LIBS_DIR}/*`, 'kafka.admin.ConfigCommand', '--bootstrap-server', `127.0.0.1:${first.port}`]
            .concat(args)
            .concat(['--entity-type', 'users', '--entity-name', user]),
          { stdio: ['ignore', 'ignore', 'pipe'] },
        );
      } catch (err) {
        const stderr = String((err as { stderr?: Buffer }).stderr ?? '').replaceAll(pw, '***');
        throw new Error(`creating the SCRAM user ${user} (${mechanism}) failed:\n${stderr.slice(0, 2000)}`);
      }
    }
  fs.writeFileSync(marker, wanted, { mode: 0o600 });
}

const LOG4J2 = `Configuration:
  Appenders:
    Console:
      name: STDOUT
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Logger:
      - name: kafka.request.logger
        level: WARN
      - name: org.apache.kafka.storage
        level: WARN
    Root:
      level: INFO
      AppenderRef:
        - ref: STDOUT
`;

function prepareNode(node: KafkaNode, all: KafkaNode[], java: string): void {
  fs.mkdirSync(node.dataDir, { recursive: true });
  fs.writeFileSync(node.configFile, serverProperties(node, all));
  fs.writeFileSync(path.join(path.dirname(node.configFile), 'log4j2.yaml'), LOG4J2);
  if (fs.existsSync(path.join(node.dataDir, 'meta.properties'))) return;
  runJava(java, ['kafka.tools.StorageTool', 'format', '-t', CLUSTER_ID, '-c', node.configFile, '--ignore-formatted']);
}

function runJava(java: string, args: string[]): void {
  execFileSync(java, ['-cp', `${LIBS_DIR}/*`, ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
}

function heapFor(topology: KafkaTopology): string {
  return topology === 'single' ? '-Xmx1g' : '-Xmx512m';
}

/** Starts one node (keeping its data) and waits for `Kafka Server started`. No-op if it runs. */
export async function startKafkaNode(node: KafkaNode, timeoutMs = 90_000): Promise<void> {
  if (isRunning(node)) return;
  fetchKafka();
  const java = findJava(17);
  const all = kafkaNodes(node.topology);
  prepareNode(node, all, java);
  const offset = startDetached(node, java, [
    heapFor(node.topology),
    '-Xms256m',
    '-XX:+UseG1GC',
    '-XX:TieredStopAtLevel=1',
    `-Dlog4j2.configurationFile=${path.join(path.dirname(node.configFile), 'log4j2.yaml')}`,
    '-cp',
    `${LIBS_DIR}/*`,
    'kafka.Kafka',
    node.configFile,
  ]);
  await waitForLogLine(node, 'Kafka Server started', offset, timeoutMs);
}

/** Starts every node of a topology in parallel (a KRaft quorum needs a majority up to elect). */
export async function startKafka(topology: KafkaTopology): Promise<string[]> {
  const nodes = kafkaNodes(topology);
  await Promise.all(nodes.map((n) => startKafkaNode(n)));
  await waitForCluster(brokersOf(topology), nodes.length);
  ensureScramUsers(topology);
  return brokersOf(topology);
}

export async function stopKafka(topology: KafkaTopology): Promise<void> {
  await Promise.all(kafkaNodes(topology).map((n) => stopProcess(n, { graceMs: 30_000 })));
}

/** kill -9 one node (fault injection). Its data stays; `startKafkaNode` brings it back. */
export async function killKafkaNode(node: KafkaNode): Promise<void> {
  await stopProcess(node, { signal: 'SIGKILL' });
}

/** Deletes a topology's data (logs, metadata) after stopping it. */
export async function resetKafka(topology: KafkaTopology): Promise<void> {
  await stopKafka(topology);
  fs.rmSync(stateDir('kafka', topology), { recursive: true, force: true });
}

/**
 * Client-side readiness: the cluster reports `expectedBrokers` brokers and a controller
 * through a real metadata request.
 */
export async function waitForCluster(brokers: string[], expectedBrokers: number, timeoutMs = 60_000): Promise<void> {
  const kafka = new Kafka({ clientId: 'feromonios-infra', brokers, logLevel: logLevel.NOTHING, retry: { retries: 2 } });
  const admin = kafka.admin();
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  try {
    for (;;) {
      try {
        await admin.connect();
        const cluster = await admin.describeCluster();
        if (cluster.brokers.length >= expectedBrokers && cluster.controller !== null) return;
        last = `${cluster.brokers.length}/${expectedBrokers} brokers`;
      } catch (err) {
        last = (err as Error).message;
      }
      if (Date.now() > deadline) throw new Error(`Kafka cluster at ${brokers.join(',')} not ready: ${last}`);
      await sleep(500);
    }
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
