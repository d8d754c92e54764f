import type { Request } from 'express';
import { AddressSet, clientAddress, normalize } from './client-address';
import { RateLimiter } from './rate-limiter';

const req = (peer: string, xff?: string): Request =>
  ({
    socket: { remoteAddress: peer },
    headers: xff === undefined ? {} : { 'x-forwarded-for': xff },
  }) as unknown as Request;

describe('AddressSet', () => {
  const set = new AddressSet(['10.0.0.0/8', '192.168.1.7/32', '2001:db8::/32']);
  it.each([
    ['10.200.3.4', true],
    ['11.0.0.1', false],
    ['192.168.1.7', true],
    ['192.168.1.8', false],
    ['::ffff:10.0.0.1', true], // IPv4-mapped IPv6, as Node reports IPv4 peers on dual-stack sockets
    ['2001:db8::1', true],
    ['2001:db9::1', false],
    ['', false],
    ['not-an-ip', false],
    [undefined, false],
  ])('%s → %s', (address, expected) => expect(set.has(address)).toBe(expected));

  it.each(['10.0.0.0', '10.0.0.0/33', 'x/8', '::1/129'])('refuses %s as a CIDR', (cidr) =>
    expect(() => new AddressSet([cidr])).toThrow(/not a CIDR/),
  );

  it('normalises IPv4-mapped addresses only', () => {
    expect(normalize('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(normalize('::ffff:zz')).toBe('::ffff:zz');
  });
});

describe('clientAddress', () => {
  const proxies = new AddressSet(['127.0.0.1/32', '10.0.0.0/8']);
  it('is the peer when the peer is not a trusted proxy, whatever the header says', () =>
    expect(clientAddress(req('203.0.113.9', '10.0.0.1'), proxies)).toBe('203.0.113.9'));
  it('is the rightmost untrusted hop behind trusted proxies', () => {
    expect(clientAddress(req('127.0.0.1', '198.51.100.1, 203.0.113.9, 10.0.0.2'), proxies)).toBe('203.0.113.9');
    expect(clientAddress(req('::ffff:127.0.0.1', '203.0.113.9'), proxies)).toBe('203.0.113.9');
  });
  it('is the leftmost hop when every hop is trusted, and the peer without a header', () => {
    expect(clientAddress(req('127.0.0.1', '10.0.0.3, 10.0.0.2'), proxies)).toBe('10.0.0.3');
    expect(clientAddress(req('127.0.0.1'), proxies)).toBe('127.0.0.1');
  });
  it('returns an unparsable hop as is (no allowlist matches it)', () =>
    expect(clientAddress(req('127.0.0.1', 'evil'), proxies)).toBe('evil'));
});

describe('RateLimiter', () => {
  it('allows a burst of perMinute, then refuses with the wait until the next token', () => {
    let now = 0;
    const rl = new RateLimiter(60, () => now);
    for (let i = 0; i < 60; i++) expect(rl.take('a').ok).toBe(true);
    const refused = rl.take('a');
    expect(refused).toMatchObject({ ok: false, remaining: 0 });
    expect(refused.retryAfterMs).toBe(1000);
    expect(rl.take('b').ok).toBe(true); // per key
    now += 1000;
    expect(rl.take('a').ok).toBe(true);
    expect(rl.take('a').ok).toBe(false);
  });

  it('refills up to the burst, never beyond', () => {
    let now = 0;
    const rl = new RateLimiter(2, () => now);
    rl.take('a');
    now += 10 * 60_000;
    expect([rl.take('a').ok, rl.take('a').ok, rl.take('a').ok]).toEqual([true, true, false]);
  });
});
