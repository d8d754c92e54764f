import { BlockList, isIP } from 'node:net';
import type { Request } from 'express';

/** A set of CIDRs (`10.0.0.0/8`, `::1/128`), IPv4-mapped IPv6 addresses matched as IPv4. */
export class AddressSet {
  private readonly list = new BlockList();

  constructor(readonly cidrs: readonly string[]) {
    for (const cidr of cidrs) {
      const [net = '', bits = ''] = cidr.split('/');
      const type = isIP(net) === 6 ? 'ipv6' : 'ipv4';
      if (isIP(net) === 0 || !/^\d{1,3}$/.test(bits) || Number(bits) > (type === 'ipv6' ? 128 : 32))
        throw new Error(`not a CIDR: ${JSON.stringify(cidr)}`);
      this.list.addSubnet(net, Number(bits), type);
    }
  }

  has(address: string | undefined): boolean {
    const a = normalize(address);
    const kind = isIP(a);
    if (kind === 0) return false;
    return this.list.check(a, kind === 6 ? 'ipv6' : 'ipv4');
  }
}

/** `::ffff:10.1.2.3` → `10.1.2.3`; anything else as given (trimmed). */
export function normalize(address: string | undefined): string {
  const a = (address ?? '').trim();
  return a.toLowerCase().startsWith('::ffff:') && isIP(a.slice(7)) === 4 ? a.slice(7) : a;
}

/**
 * The client's address. `X-Forwarded-For` is believed only when the connection comes from a
 * trusted proxy, and then only up to the first hop (from the right) that is not itself a
 * trusted proxy — a client cannot spoof its address by sending the header itself.
 */
export function clientAddress(req: Request, trustedProxies: AddressSet): string {
  const peer = normalize(req.socket.remoteAddress);
  if (!trustedProxies.has(peer)) return peer;
  const header = req.headers['x-forwarded-for'];
  const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((h) => normalize(h))
    .filter((h) => h !== '');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i] as string;
    if (!trustedProxies.has(hop)) return hop; // an unparsable hop is returned as is: no allowlist matches it
  }
  return hops[0] ?? peer;
}
