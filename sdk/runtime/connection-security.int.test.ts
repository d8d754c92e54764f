import { randomUUID } from 'node:crypto';
import { BrokerSecurityError, type EventoConsultado, type SegurancaKafka } from '..';
import { SAMPLE_PAYLOADS } from '../testing';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestBus } from '../../test/harness/bus';
import { SUPER_USER } from '../../infra/tls';
import { spawnBridge } from '../../test/harness/bridge';
import { createTestDatabase, secureKafka, waitFor } from '../../test/harness';

const categorizada = () => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  correlacao_id: randomUUID(),
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});

/**
 * The SDK over the brokers' secure listeners (docs/security.md): SASL_SSL with SCRAM and PLAIN,
 * mutual TLS; and what each kind of bad credential gives — a typed, non-retriable
 * BrokerSecurityError that names the cause and never the secret.
 */
describe('TLS and SASL towards the brokers', () => {
  const k = secureKafka();
  const ca = k.pem(k.pki.caFile);
  // the test brokers' super user: these tests are about connections, not ACLs (sdk/service/acls.int.test.ts)
  const user = SUPER_USER;
  const password = k.pki.users.scram[user]!;

  for (const mechanism of ['scram-sha-256', 'scram-sha-512'] as const)
    it(`publishes and consumes over SASL_SSL with ${mechanism.toUpperCase()}`, async () => {
      const seguranca: SegurancaKafka = { tls: { ca }, sasl: { mechanism, username: user, password } };
      const bus = await createTestBus({ brokers: k.saslSsl, seguranca });
      const got: EventoConsultado[] = [];
      bus.inscrever('demanda.categorizada', 'D-4', (e) => void got.push(e));
      await bus.inscricoesProntas();
      const sent = await bus.publicar(categorizada());
      await waitFor(() => got.some((e) => e.event_id === sent.event_id), { message: 'delivered over SASL_SSL' });
      expect(got.find((e) => e.event_id === sent.event_id)).toEqual(sent);
    });

  it('publishes over SASL_SSL with PLAIN, and over mutual TLS with a client certificate', async () => {
    const [plainUser, plainPassword] = Object.entries(k.pki.users.plain)[0] as [string, string];
    const plain = await createTestBus({
      brokers: k.saslSsl,
      seguranca: { tls: { ca }, sasl: { mechanism: 'plain', username: plainUser, password: plainPassword } },
    });
    expect((await plain.publicar(categorizada())).posicao).toBeDefined();
    const mtls = await createTestBus({
      brokers: k.mtls,
      seguranca: { tls: { ca, cert: k.pem(k.pki.clientCertFile), key: k.pem(k.pki.clientKeyFile) } },
    });
    expect((await mtls.publicar(categorizada())).posicao).toBeDefined();
  });

  it('the bridge process configured from the environment (password from a file) mirrors over SASL_SSL and never logs the password', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fero-secret-'));
    const passwordFile = path.join(dir, 'kafka-password');
    fs.writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
    try {
      const seguranca: SegurancaKafka = { tls: { ca }, sasl: { mechanism: 'scram-sha-512', username: user, password } };
      const bus = await createTestBus({ brokers: k.saslSsl, seguranca });
      const db = await createTestDatabase();
      const bridge = spawnBridge(bus, db, {
        KAFKA_BROKERS: k.saslSsl.join(','),
        KAFKA_TLS_CA_FILE: k.pki.caFile,
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_SASL_USERNAME: user,
        KAFKA_SASL_PASSWORD_FILE: passwordFile,
        LOG_LEVEL: 'debug',
      });
      const sent = await bus.publicar(categorizada());
      await waitFor(
        async () =>
          (await db.pool.query('SELECT 1 FROM core.event_log WHERE event_id = $1', [sent.event_id])).rowCount === 1,
        { timeoutMs: 60_000, message: `the bridge mirrored the event (its output: ${bridge.output().slice(-500)})` },
      );
      expect(bridge.output()).toContain('bridge started');
      expect(bridge.output()).not.toContain(password);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  /** What one publish with bad credentials gives; the bus never connected, so the first call tells. */
  async function refusal(seguranca: SegurancaKafka, brokers = k.saslSsl) {
    const bus = await createTestBus({ brokers, seguranca, publishTimeoutMs: 20_000, registry: undefined });
    const t0 = Date.now();
    const err = await bus.publicar(categorizada()).then(
      () => undefined,
      (e: unknown) => e,
    );
    return { err: err as BrokerSecurityError, ms: Date.now() - t0 };
  }

  it('a wrong password: BROKER_AUTHENTICATION (sasl), not retriable, without the password', async () => {
    const wrong = `${password}-but-wrong`;
    const { err, ms } = await refusal({
      tls: { ca },
      sasl: { mechanism: 'scram-sha-256', username: user, password: wrong },
    });
    expect(err).toBeInstanceOf(BrokerSecurityError);
    expect(err).toMatchObject({ code: 'BROKER_AUTHENTICATION', causa: 'sasl', retriable: false });
    expect(err.message).toMatch(/authentication failed/i);
    expect(`${err.message} ${String(err.stack)}`).not.toContain(wrong);
    expect(ms).toBeLessThan(20_000); // refused at once, not retried until the deadline
  });

  it('an untrusted broker certificate: BROKER_AUTHENTICATION (tls-untrusted), not retriable', async () => {
    const { err, ms } = await refusal({
      tls: { ca: k.pem(k.pki.untrustedCaFile) },
      sasl: { mechanism: 'scram-sha-256', username: user, password },
    });
    expect(err).toBeInstanceOf(BrokerSecurityError);
    expect(err).toMatchObject({ code: 'BROKER_AUTHENTICATION', causa: 'tls-untrusted', retriable: false });
    expect(err.message).toContain('KAFKA_TLS_CA_FILE');
    expect(err.message).not.toContain(password);
    expect(ms).toBeLessThan(20_000);
  });

  it('an expired client certificate on the mutual-TLS listener: BROKER_AUTHENTICATION (tls-client-certificate), not retriable', async () => {
    const { err, ms } = await refusal(
      { tls: { ca, cert: k.pem(k.pki.expiredClientCertFile), key: k.pem(k.pki.clientKeyFile) } },
      k.mtls,
    );
    expect(err).toBeInstanceOf(BrokerSecurityError);
    expect(err).toMatchObject({ code: 'BROKER_AUTHENTICATION', retriable: false });
    expect(err.causa).toBe('tls-client-certificate'); // Kafka answers certificate_unknown, not "expired"
    expect(err.message).toContain('client certificate');
    expect(ms).toBeLessThan(20_000);
  });
});
