import http from 'node:http';
import fc from 'fast-check';
import type { AddressInfo } from 'node:net';
import { RegistryError } from '../errors';
import { ConfluentSchemaRegistry } from './registry';

/**
 * Basic auth towards the registry (Confluent Cloud's API key, Redpanda's SASL user), against a
 * local HTTP server that checks the header the way a registry does: 401 without it.
 */
describe('registry credentials', () => {
  const expected = `Basic ${Buffer.from('api-key:api-secret/with:odd@chars').toString('base64')}`;
  const seen: Array<string | undefined> = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers.authorization);
    if (req.headers.authorization !== expected) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error_code: 40101, message: 'Unauthorized' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/vnd.schemaregistry.v1+json' });
    res.end(JSON.stringify(['demanda.recebida-value']));
  });
  let base = '';
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('sends the credentials given as options', async () => {
    const r = new ConfluentSchemaRegistry({
      url: `http://${base}`,
      auth: { username: 'api-key', password: 'api-secret/with:odd@chars' },
    });
    expect(await r.subjects()).toEqual(['demanda.recebida-value']);
    expect(seen.at(-1)).toBe(expected);
  });

  it('takes credentials out of the URL, so errors never show them', async () => {
    const ok = new ConfluentSchemaRegistry({
      url: `http://api-key:${encodeURIComponent('api-secret/with:odd@chars')}@${base}`,
    });
    expect(await ok.subjects()).toEqual(['demanda.recebida-value']);
    const wrong = new ConfluentSchemaRegistry({ url: `http://api-key:not-the-secret@${base}`, retries: 0 });
    const err = (await wrong.subjects().catch((e: unknown) => e)) as RegistryError;
    expect(err).toBeInstanceOf(RegistryError);
    expect(err).toMatchObject({ code: 'REGISTRY_REJECTED', status: 401, retriable: false });
    expect(err.message).toContain('HTTP 401');
    expect(err.message).not.toContain('not-the-secret');
  });

  it('property: any user and password in the URL reach the header intact and never an error message', async () => {
    // printable secrets with the characters URLs treat specially
    const secret = fc.string({ unit: fc.constantFrom(...'aZ09:@/%?#&+ =!~*'.split('')), minLength: 8, maxLength: 30 });
    await fc.assert(
      fc.asyncProperty(secret, secret, async (username, password) => {
        const before = seen.length;
        const r = new ConfluentSchemaRegistry({
          url: `http://${encodeURIComponent(username)}:${encodeURIComponent(password)}@${base}`,
          retries: 0,
        });
        const err = (await r.subjects().catch((e: unknown) => e)) as RegistryError;
        // the server refuses them (not its key): the header carried exactly what was given
        expect(seen.slice(before)).toEqual([`Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`]);
        expect(err).toMatchObject({ code: 'REGISTRY_REJECTED', status: 401 });
        expect(err.message).not.toContain(encodeURIComponent(password));
        expect(err.message.includes(password)).toBe(false);
      }),
      { numRuns: 40 },
    );
  });

  it('sends nothing when no credentials are given', async () => {
    const anonymous = new ConfluentSchemaRegistry({ url: `http://${base}`, retries: 0 });
    await expect(anonymous.subjects()).rejects.toMatchObject({ status: 401 });
    expect(seen.at(-1)).toBeUndefined();
  });
});
