import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  KafkaJSConnectionError,
  KafkaJSNumberOfRetriesExceeded,
  KafkaJSProtocolError,
  KafkaJSSASLAuthenticationError,
} from 'kafkajs';
import { BrokerSecurityError, brokerSecurityFailure, ConfigError, isRetriable } from '../errors';
import { readEnv } from '../service/env';
import { busSecurityFromEnv, kafkaSecurity, securityEnv, securityFromEnv } from './connection-security';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fero-sec-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));
const file = (name: string, text: string): string => {
  const f = path.join(tmp, name);
  fs.writeFileSync(f, text);
  return f;
};
const fromEnv = (vars: Record<string, string>) => securityFromEnv(readEnv(securityEnv, vars));

describe('connection security from the environment', () => {
  it('is plaintext and anonymous when nothing is set', () => {
    expect(fromEnv({})).toEqual({});
    expect(kafkaSecurity(undefined)).toEqual({});
  });

  it('builds TLS with a CA and a client certificate, and SCRAM with a password read from a file', () => {
    const s = fromEnv({
      KAFKA_TLS_CA_FILE: file('ca.pem', 'CA PEM'),
      KAFKA_TLS_CERT_FILE: file('c.pem', 'CERT PEM'),
      KAFKA_TLS_KEY_FILE: file('c.key', 'KEY PEM'),
      KAFKA_SASL_MECHANISM: 'scram-sha-512',
      KAFKA_SASL_USERNAME: 'colonia-D-3',
      KAFKA_SASL_PASSWORD_FILE: file('pw', 's3cret-from-a-mounted-file\n'),
      SCHEMA_REGISTRY_USERNAME: 'key',
      SCHEMA_REGISTRY_PASSWORD: 'registry-secret',
    });
    expect(s.kafka?.tls).toEqual({ ca: 'CA PEM', cert: 'CERT PEM', key: 'KEY PEM' });
    expect(kafkaSecurity(s.kafka)).toEqual({
      ssl: { ca: 'CA PEM', cert: 'CERT PEM', key: 'KEY PEM', rejectUnauthorized: true },
      sasl: { mechanism: 'scram-sha-512', username: 'colonia-D-3', password: 's3cret-from-a-mounted-file' },
    });
    expect(s.registry).toEqual({ username: 'key', password: 'registry-secret' });
  });

  it('KAFKA_TLS=true alone: TLS with the system CAs; a given CA never turns verification off', () => {
    expect(fromEnv({ KAFKA_TLS: 'true' }).kafka).toEqual({ tls: true });
    expect(kafkaSecurity({ tls: { ca: 'x' } }).ssl).toMatchObject({ rejectUnauthorized: true });
  });

  it('OAUTHBEARER reads the token file at every authentication (rotation)', async () => {
    const tokenFile = file('token', 'token-one\n');
    const ssl = kafkaSecurity(
      busSecurityFromEnv(
        readEnv(securityEnv, { KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_FILE: tokenFile }),
      ).seguranca,
    );
    const provider = (ssl.sasl as { oauthBearerProvider: () => Promise<{ value: string }> }).oauthBearerProvider;
    expect(await provider()).toEqual({ value: 'token-one' });
    fs.writeFileSync(tokenFile, 'token-two');
    expect(await provider()).toEqual({ value: 'token-two' });
  });

  it('names every inconsistent variable, never a secret value', () => {
    let err: unknown;
    try {
      fromEnv({
        KAFKA_SASL_MECHANISM: 'scram-sha-256',
        KAFKA_SASL_PASSWORD: 'do-not-print-me',
        KAFKA_TLS_CERT_FILE: file('only-cert.pem', 'x'),
        KAFKA_TLS_CA_FILE: path.join(tmp, 'missing-ca.pem'),
        SCHEMA_REGISTRY_PASSWORD: 'nor-me',
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        'KAFKA_SASL_USERNAME: required with KAFKA_SASL_MECHANISM=scram-sha-256',
        'KAFKA_TLS_CERT_FILE and KAFKA_TLS_KEY_FILE: set both (a client certificate needs its key) or neither',
        expect.stringMatching(/^KAFKA_TLS_CA_FILE: cannot read ".*missing-ca.pem" \(ENOENT\)$/),
        'SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD: set both or neither',
      ]),
    );
    expect((err as Error).message).not.toMatch(/do-not-print-me|nor-me/);
    expect(() => readEnv(securityEnv, { KAFKA_SASL_MECHANISM: 'gssapi' })).toThrow(
      'KAFKA_SASL_MECHANISM: expected one of none, plain, scram-sha-256, scram-sha-512, oauthbearer',
    );
  });
});

describe('broker security failures are typed and not retriable', () => {
  it('a SASL failure, also wrapped by kafkajs retries', () => {
    // kafkajs's typings omit the constructors' arguments its code takes
    const Sasl = KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error;
    const sasl = new Sasl('SASL SCRAM SHA256 authentication failed: Authentication failed');
    for (const err of [sasl, new KafkaJSNumberOfRetriesExceeded(sasl, { retryCount: 5, retryTime: 100 })]) {
      const f = brokerSecurityFailure(err);
      expect(f).toBeInstanceOf(BrokerSecurityError);
      expect(f).toMatchObject({ code: 'BROKER_AUTHENTICATION', causa: 'sasl', retriable: false });
      expect(isRetriable(err)).toBe(false);
    }
  });

  it('TLS verification failures kafkajs reports as retriable connection errors', () => {
    const cases: Array<[string, string]> = [
      ['SELF_SIGNED_CERT_IN_CHAIN', 'tls-untrusted'],
      ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'tls-untrusted'],
      ['CERT_HAS_EXPIRED', 'tls-expired'],
      ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls-hostname'],
      ['ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN', 'tls-client-certificate'], // what Kafka answers an expired one
      ['ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'tls-client-certificate'],
      ['ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', 'tls-handshake'],
    ];
    for (const [code, causa] of cases) {
      const err = new KafkaJSConnectionError(`Connection error: ${code}`, { broker: '127.0.0.1:9096', code });
      expect(err.retriable).toBe(true); // what kafkajs says
      expect(brokerSecurityFailure(err)).toMatchObject({ code: 'BROKER_AUTHENTICATION', causa });
      expect(isRetriable(err)).toBe(false); // what we say
    }
  });

  it('an ACL denial is BROKER_AUTHORIZATION naming what was denied; ordinary errors are not security failures', () => {
    const denied = new KafkaJSProtocolError({
      type: 'TOPIC_AUTHORIZATION_FAILED',
      code: 29,
      retriable: false,
      message: 'Not authorized to access topics: [Topic authorization failed]',
    } as unknown as Error); // the broker error kafkajs builds from, not an Error
    expect(denied.type).toBe('TOPIC_AUTHORIZATION_FAILED');
    expect(brokerSecurityFailure(denied)).toMatchObject({ code: 'BROKER_AUTHORIZATION', causa: 'topic' });
    // createTopics refused for one topic of several: kafkajs aggregates one error per topic
    const aggregate = Object.assign(new Error('Topic creation errors'), {
      name: 'KafkaJSAggregateError',
      errors: [new Error('unrelated'), denied],
    });
    expect(brokerSecurityFailure(aggregate)).toMatchObject({ code: 'BROKER_AUTHORIZATION', causa: 'topic' });
    expect(
      brokerSecurityFailure(
        new KafkaJSConnectionError('Connection error: connect ECONNREFUSED', { code: 'ECONNREFUSED' }),
      ),
    ).toBeUndefined();
    expect(brokerSecurityFailure(new Error('boom'))).toBeUndefined();
    expect(brokerSecurityFailure('SELF_SIGNED_CERT_IN_CHAIN')).toBeUndefined();
  });
});
