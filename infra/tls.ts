import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { stateDir } from './paths';

/**
 * Test PKI for the brokers' SASL_SSL listener (docs/security.md), generated locally with
 * `openssl` the first time it is needed — no download, nothing committed. In `.infra/tls/`:
 * - `ca.pem` / `ca.key`: the test CA clients trust;
 * - `broker-keystore.pem`: the brokers' key and certificate (SAN 127.0.0.1, localhost), signed by it;
 * - `client.pem` / `client.key`: a client certificate signed by the CA (mutual TLS);
 * - `client-expired.pem`: the same key, certified for one day in 2020 (expired);
 * - `untrusted-ca.pem`: a second CA, which did not sign the brokers' certificate;
 * - `users.json`: the SASL users the brokers know (random passwords, per machine).
 */
export interface TestPki {
  dir: string;
  caFile: string;
  brokerKeystoreFile: string;
  clientCertFile: string;
  clientKeyFile: string;
  expiredClientCertFile: string;
  untrustedCaFile: string;
  /** The client certificate's CN: with mutual TLS the broker's principal is `User:CN=<it>`. */
  clientCommonName: string;
  users: TestSaslUsers;
}

const CLIENT_CN = 'feromonios-test-client';

/**
 * The test SCRAM users. `feromonios-test` is a super user of the test brokers (infra/kafka.ts);
 * the others are the principals the generated ACLs govern (docs/security.md): two colonies, the
 * bridge and the platform.
 */
export const SUPER_USER = 'feromonios-test';
const SCRAM_USERS = [SUPER_USER, 'colonia-D-3', 'colonia-D-4', 'feromonios-bridge', 'feromonios-plataforma'];

/** SASL users of the test brokers: one per mechanism family, plus the colonies' principals. */
export interface TestSaslUsers {
  /** SCRAM users (created for both SHA-256 and SHA-512). */
  scram: Record<string, string>;
  /** PLAIN users (in the listener's JAAS configuration). */
  plain: Record<string, string>;
}

const password = (): string => randomBytes(18).toString('base64url');

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** The test PKI, generated once per machine (idempotent; regenerated if a file is missing). */
export function testPki(): TestPki {
  const dir = stateDir('tls');
  const pki: TestPki = {
    dir,
    caFile: path.join(dir, 'ca.pem'),
    brokerKeystoreFile: path.join(dir, 'broker-keystore.pem'),
    clientCertFile: path.join(dir, 'client.pem'),
    clientKeyFile: path.join(dir, 'client.key'),
    expiredClientCertFile: path.join(dir, 'client-expired.pem'),
    untrustedCaFile: path.join(dir, 'untrusted-ca.pem'),
    clientCommonName: CLIENT_CN,
    users: { scram: {}, plain: {} },
  };
  const usersFile = path.join(dir, 'users.json');
  const complete = [
    pki.caFile,
    pki.brokerKeystoreFile,
    pki.clientCertFile,
    pki.clientKeyFile,
    pki.expiredClientCertFile,
    pki.untrustedCaFile,
    usersFile,
  ].every((f) => fs.existsSync(f));
  if (!complete) generate(dir, usersFile);
  pki.users = JSON.parse(fs.readFileSync(usersFile, 'utf8')) as TestSaslUsers;
  // a machine whose users.json predates a user gets it added (ensureScramUsers then creates it)
  const missing = SCRAM_USERS.filter((u) => pki.users.scram[u] === undefined);
  if (missing.length > 0) {
    for (const u of missing) pki.users.scram[u] = password();
    fs.writeFileSync(usersFile, JSON.stringify(pki.users, null, 2), { mode: 0o600 });
  }
  return pki;
}

function generate(dir: string, usersFile: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, 'newcerts'), { recursive: true, mode: 0o700 });
  const ca = (name: string, subject: string) => {
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`], dir);
    openssl(
      [
        'req',
        '-x509',
        '-new',
        '-key',
        `${name}.key`,
        '-sha256',
        '-days',
        '3650',
        '-subj',
        subject,
        '-out',
        `${name}.pem`,
      ],
      dir,
    );
  };
  ca('ca', '/CN=feromonios-test-ca');
  ca('untrusted-ca', '/CN=nobody-trusts-this-ca');
  fs.writeFileSync(path.join(dir, 'san.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  const leaf = (name: string, subject: string, issuer: string, extfile?: string) => {
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`], dir);
    openssl(['req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`], dir);
    openssl(
      [
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        `${issuer}.pem`,
        '-CAkey',
        `${issuer}.key`,
        '-CAcreateserial',
        '-days',
        '3650',
        '-sha256',
        ...(extfile ? ['-extfile', extfile] : []),
        '-out',
        `${name}.pem`,
      ],
      dir,
    );
  };
  leaf('broker', '/CN=localhost', 'ca', 'san.cnf');
  leaf('client', `/CN=${CLIENT_CN}`, 'ca');
  // Kafka's PEM keystore: the (unencrypted PKCS#8) key, then the certificate chain
  fs.writeFileSync(
    path.join(dir, 'broker-keystore.pem'),
    fs.readFileSync(path.join(dir, 'broker.key'), 'utf8') +
      fs.readFileSync(path.join(dir, 'broker.pem'), 'utf8') +
      fs.readFileSync(path.join(dir, 'ca.pem'), 'utf8'),
  );
  // an expired certificate for the client's key: `openssl ca` is the tool that takes explicit dates
  fs.writeFileSync(path.join(dir, 'index.txt'), '');
  fs.writeFileSync(path.join(dir, 'serial'), '1000\n');
  fs.writeFileSync(
    path.join(dir, 'ca.cnf'),
    [
      '[ca]',
      'default_ca = local',
      '[local]',
      `dir = ${dir}`,
      'database = $dir/index.txt',
      'new_certs_dir = $dir/newcerts',
      'serial = $dir/serial',
      'certificate = $dir/ca.pem',
      'private_key = $dir/ca.key',
      'default_md = sha256',
      'policy = anything',
      'unique_subject = no',
      '[anything]',
      'commonName = supplied',
      '',
    ].join('\n'),
  );
  openssl(
    [
      'ca',
      '-batch',
      '-config',
      'ca.cnf',
      '-startdate',
      '20200101000000Z',
      '-enddate',
      '20200102000000Z',
      '-in',
      'client.csr',
      '-out',
      'client-expired.pem',
    ],
    dir,
  );
  const users: TestSaslUsers = {
    scram: Object.fromEntries(SCRAM_USERS.map((u) => [u, password()])),
    plain: { 'feromonios-plain': password() },
  };
  fs.writeFileSync(usersFile, JSON.stringify(users, null, 2), { mode: 0o600 });
}
