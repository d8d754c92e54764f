import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes, type Admin } from 'kafkajs';
import { BrokerSecurityError, type EventBus, type EventoConsultado, type SegurancaKafka } from '..';
import { SAMPLE_PAYLOADS } from '../testing';
import { createTestBus } from '../../test/harness/bus';
import { startTestBridge } from '../../test/harness/bridge';
import { createTestDatabase, secureKafka, serviceEnv, testKafka, waitFor, type TestDatabase } from '../../test/harness';
import { runFeromonios } from '../../test/harness/cli';
import { runKafkaTool } from '../../infra/kafka';

const categorizada = (origem = 'D-3') => ({
  tipo: 'demanda.categorizada',
  origem,
  correlacao_id: randomUUID(),
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});

/**
 * Per-colony permissions enforced by the broker (issue #22, docs/security.md): the ACLs
 * `feromonios acls apply` generates from the catalog, on the test brokers' standard authorizer,
 * with each colony, the bridge and the platform connecting over SASL_SSL as their own principal.
 * The tests run in order: the first applies the ACLs the others rely on.
 */
describe('ACLs generated from the catalog, enforced by the broker', () => {
  const k = secureKafka();
  const ca = k.pem(k.pki.caFile);
  const as = (username: string): SegurancaKafka => ({
    tls: { ca },
    sasl: { mechanism: 'scram-sha-512', username, password: k.pki.users.scram[username]! },
  });
  let bus: EventBus; // PLAINTEXT: the test brokers' super user (creates topics, reads offsets)
  let admin: Admin;
  let db: TestDatabase;

  const cli = (args: string[], env: Record<string, string> = {}) =>
    runFeromonios(args, {
      KAFKA_BROKERS: serviceEnv().brokers.join(','),
      FEROMONIOS_TOPIC_NAMESPACE: bus.topics.namespace,
      ...env,
    });

  const endOffsets = async (topic: string): Promise<number> =>
    (await admin.fetchTopicOffsets(topic)).reduce((n, p) => n + Number(p.high), 0);

  beforeAll(async () => {
    bus = await createTestBus();
    admin = await testKafka().admin();
    db = await createTestDatabase();
  });

  it('acls apply creates what the catalog calls for; run twice, it changes nothing the second time; diff shows drift and leaves foreign ACLs alone', async () => {
    const ns = bus.topics.namespace;
    const first = await cli(['acls', 'apply']);
    expect(first).toMatchObject({ code: 0 });
    expect(first.stdout).toContain(`+ User:colonia-D-3 WRITE topic ${ns}.evento.demanda.categorizada\n`);
    expect(first.stdout).toContain(`+ User:colonia-D-4 READ group ${ns}.colonia.D-4\n`);
    expect(first.stdout).toContain(`+ User:feromonios-bridge WRITE topic ${ns}.quarentena\n`);
    const added = first.stdout.split('\n').filter((l) => l.startsWith('+ ')).length;

    const second = await cli(['--json', 'acls', 'apply']);
    expect(second.code).toBe(0);
    expect(JSON.parse(second.stdout)).toMatchObject({ adicionar: [], remover: [], iguais: added, aplicado: true });
    expect(await cli(['acls', 'diff'])).toMatchObject({ code: 0 });

    // drift: a wanted binding deleted, an unwanted one granted to a managed principal, and a
    // foreign principal's binding on the namespace
    const topic = bus.topics.evento('demanda.categorizada');
    const entry = (principal: string, operation: AclOperationTypes) => ({
      resourceType: AclResourceTypes.TOPIC,
      resourceName: topic,
      resourcePatternType: ResourcePatternTypes.LITERAL,
      principal,
      host: '*',
      operation,
      permissionType: AclPermissionTypes.ALLOW,
    });
    await admin.deleteAcls({ filters: [entry('User:colonia-D-3', AclOperationTypes.WRITE)] });
    await admin.createAcls({
      acl: [entry('User:colonia-D-4', AclOperationTypes.WRITE), entry('User:monitor', AclOperationTypes.DESCRIBE)],
    });
    const drift = await cli(['acls', 'diff']);
    expect(drift.code).toBe(7); // EXIT.CHECK_FAILED
    expect(drift.stdout.split('\n').filter((l) => /^[+-] /.test(l))).toEqual([
      `+ User:colonia-D-3 WRITE topic ${topic}`,
      `- User:colonia-D-4 WRITE topic ${topic}`,
    ]);
    expect(drift.stdout).toContain(`? User:monitor DESCRIBE topic ${topic}  (not managed: left alone)`);
    expect(drift.stderr).toContain('1 to add, 1 to remove');
    expect(await cli(['acls', 'apply'])).toMatchObject({ code: 0 });
    expect(await cli(['acls', 'diff'])).toMatchObject({ code: 0 });
    const monitor = await admin.describeAcls({
      resourceType: AclResourceTypes.TOPIC,
      resourceName: topic,
      resourcePatternType: ResourcePatternTypes.LITERAL,
      principal: 'User:monitor',
      operation: AclOperationTypes.ANY,
      permissionType: AclPermissionTypes.ANY,
    });
    expect(monitor.resources.flatMap((r) => r.acls)).toHaveLength(1);
  });

  it('a principal without cluster rights cannot read or change the ACLs: exit 5, typed, without its password', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fero-acl-'));
    const password = k.pki.users.scram['feromonios-plataforma']!;
    fs.writeFileSync(path.join(dir, 'pw'), password, { mode: 0o600 });
    try {
      const r = await cli(['acls', 'apply'], {
        KAFKA_BROKERS: k.saslSsl.join(','),
        KAFKA_TLS_CA_FILE: k.pki.caFile,
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_SASL_USERNAME: 'feromonios-plataforma',
        KAFKA_SASL_PASSWORD_FILE: path.join(dir, 'pw'),
      });
      expect(r.code).toBe(5); // EXIT.UNAUTHORIZED
      expect(r.stderr).toContain('BROKER_AUTHORIZATION (cluster)');
      expect(r.stdout + r.stderr).not.toContain(password);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("colony D-3 publishes its type as its own principal; D-4's principal writing that type — even signed D-3 — is refused by the broker, typed, and nothing reaches the log", async () => {
    const ns = bus.topics.namespace;
    // the bridge as its own principal: reads the event topics, writes only the quarantine topic
    await startTestBridge(bus, db, { brokers: k.saslSsl, seguranca: as('feromonios-bridge') });
    const d3 = await createTestBus({ namespace: ns, brokers: k.saslSsl, seguranca: as('colonia-D-3') });
    const d4 = await createTestBus({ namespace: ns, brokers: k.saslSsl, seguranca: as('colonia-D-4') });
    const ok = await d3.publicar(categorizada());
    const topic = bus.topics.evento('demanda.categorizada');
    const before = await endOffsets(topic);

    const t0 = Date.now();
    const impostor = { ...categorizada('D-3'), event_id: randomUUID() };
    const err = await d4.publicar(impostor).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(BrokerSecurityError);
    expect(err).toMatchObject({ code: 'BROKER_AUTHORIZATION', causa: 'topic', retriable: false });
    expect(Date.now() - t0).toBeLessThan(bus.options.publishTimeoutMs); // refused, not timed out
    // and the SDK refuses before the broker when the origem is honest: D-4 does not publish this type
    await expect(d4.publicar(categorizada('D-4'))).rejects.toMatchObject({ code: 'ORIGEM_NOT_ALLOWED' });

    const after = await d3.publicar(categorizada());
    const inLog = async (id: string) =>
      (await db.pool.query('SELECT 1 FROM core.event_log WHERE event_id = $1', [id])).rowCount === 1;
    await waitFor(() => inLog(after.event_id), {
      timeoutMs: 30_000,
      message: 'the bridge (its own principal) mirrored the next D-3 event',
    });
    expect(await inLog(ok.event_id)).toBe(true);
    expect(await inLog(impostor.event_id)).toBe(false);
    expect(await endOffsets(topic)).toBe(before + 1); // only the second D-3 event was written
  });

  it("the Java client is held by the same ACLs: D-4's principal cannot join D-3's group nor write D-3's type", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fero-java-'));
    const config = path.join(dir, 'client.properties');
    fs.writeFileSync(
      config,
      [
        'security.protocol=SASL_SSL',
        'sasl.mechanism=SCRAM-SHA-512',
        `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="colonia-D-4" password="${k.pki.users.scram['colonia-D-4']!}";`,
        'ssl.truststore.type=PEM',
        `ssl.truststore.location=${k.pki.caFile}`,
      ].join('\n'),
      { mode: 0o600 },
    );
    try {
      const topic = bus.topics.evento('demanda.categorizada');
      const bootstrap = k.saslSsl.join(',');
      // a topic D-4 may read, under the group of another colony
      const read = await runKafkaTool('org.apache.kafka.tools.consumer.ConsoleConsumer', [
        ...['--bootstrap-server', bootstrap, '--topic', topic, '--group', bus.topics.grupo('D-3')],
        ...['--consumer.config', config, '--from-beginning', '--timeout-ms', '15000'],
      ]);
      // (the console consumer exits 0 after logging the refusal: its output is the evidence)
      expect(read.stdout + read.stderr).toContain('Processed a total of 0 messages');
      expect(read.stdout + read.stderr).toContain(
        `GroupAuthorizationException: Not authorized to access group: ${bus.topics.grupo('D-3')}`,
      );
      const before = await endOffsets(topic);
      const write = await runKafkaTool(
        'org.apache.kafka.tools.ConsoleProducer',
        ['--bootstrap-server', bootstrap, '--topic', topic, '--producer.config', config],
        { input: 'not even a valid record\n' },
      );
      expect(write.stdout + write.stderr).toContain('TopicAuthorizationException');
      expect(await endOffsets(topic)).toBe(before);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("colony D-4 consumes its type under its own group; under D-3's group its principal is refused, typed, and handles nothing", async () => {
    const ns = bus.topics.namespace;
    const d3 = await createTestBus({ namespace: ns, brokers: k.saslSsl, seguranca: as('colonia-D-3') });
    const own = await createTestBus({ namespace: ns, brokers: k.saslSsl, seguranca: as('colonia-D-4') });
    const got: EventoConsultado[] = [];
    own.inscrever('demanda.categorizada', 'D-4', (e) => void got.push(e));
    await own.inscricoesProntas();

    const stolen: EventoConsultado[] = [];
    const thief = await createTestBus({ namespace: ns, brokers: k.saslSsl, seguranca: as('colonia-D-4') });
    thief.inscrever('demanda.categorizada', 'D-3', (e) => void stolen.push(e));
    const state = await waitFor(() => thief.estadoDasInscricoes().find((s) => s.falha !== undefined), {
      timeoutMs: 30_000,
      message: "the subscription under D-3's group reports its refusal",
    });
    expect(state).toMatchObject({ colonia: 'D-3', consumindo: false, falha: { code: 'BROKER_AUTHORIZATION' } });
    // the SDK's subscription is refused at its first step: creating D-3's reprocessing topic
    expect(state.falha).toMatchObject({ causa: 'topic' });

    const sent = await d3.publicar(categorizada());
    await waitFor(() => got.some((e) => e.event_id === sent.event_id), {
      timeoutMs: 30_000,
      message: 'D-4 handled the event under its own group',
    });
    expect(stolen).toEqual([]);
    expect(thief.estadoDasInscricoes()[0]).toMatchObject({
      consumindo: false,
      falha: { code: 'BROKER_AUTHORIZATION' },
    });
  });
});
