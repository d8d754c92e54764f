import net from 'node:net';
import { kafkaNodes, type KafkaTopology } from '../../infra/kafka';
import { registerCleanup } from './index';

/**
 * A TCP proxy the fault tests control (there is no toxiproxy here): put it between a client and
 * a server (the bridge and PostgreSQL, or the SDK and the brokers with `proxyKafka`) and inject network faults, as opposed to dead
 * processes (docs/reliability.md, "Network faults"):
 * - `latency(ms)`: every chunk, both ways, delivered `ms` late (order kept);
 * - `blackhole()`: nothing is delivered, both ways, on open and new connections — packets
 *   "lost" until `heal()`, when what was held is delivered (as TCP retransmission would) unless
 *   an endpoint gave up meanwhile;
 * - `reset()`: every open connection is reset (RST) in the middle of whatever it was doing;
 * - `halfOpen()`: the server side of every open connection is closed while the client side stays
 *   open and silent — the client is never told (a peer that vanished);
 * - `cutNextResponse(bytes, how)`: the next chunk the server sends is delivered only up to
 *   `bytes`, then that connection is reset (`'reset'`) or ended (`'end'`) — a response cut off in
 *   the middle of its frame;
 * - `heal()`: back to passing everything at once.
 */
export class FaultProxy {
  private latencyMs = 0;
  /** The next server chunk's bytes to deliver before closing its connection (`cutNextResponse`). */
  private cut: { bytes: number; how: 'reset' | 'end' } | undefined;
  /** Responses cut so far. */
  cuts = 0;
  private holding = false;
  private readonly held: Array<() => void> = [];
  private readonly pairs = new Set<{ client: net.Socket; server: net.Socket; silent: boolean }>();
  /** Client sockets of half-open connections: open, silent, until the client gives up (or `close`). */
  private readonly limbo = new Set<net.Socket>();
  /** Connections accepted so far (a client that reconnects shows up here). */
  connections = 0;

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
  ) {}

  /** Listens on `port` (a free one by default) and forwards to `target`. */
  static async start(target: { host: string; port: number }, port = 0): Promise<FaultProxy> {
    const holder: { proxy?: FaultProxy } = {};
    const server = net.createServer((client) => holder.proxy?.accept(client, target));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject); // a fixed port already taken
      server.listen(port, '127.0.0.1', resolve);
    });
    const proxy = new FaultProxy(server, (server.address() as net.AddressInfo).port);
    holder.proxy = proxy;
    registerCleanup(() => proxy.close());
    return proxy;
  }

  latency(ms: number): void {
    this.latencyMs = ms;
  }

  blackhole(): void {
    this.holding = true;
  }

  reset(): void {
    for (const p of this.pairs) {
      p.client.resetAndDestroy();
      p.server.resetAndDestroy();
    }
    this.pairs.clear();
  }

  halfOpen(): void {
    for (const p of this.pairs) {
      p.silent = true;
      this.limbo.add(p.client);
      p.client.once('close', () => this.limbo.delete(p.client));
      p.server.destroy(); // the server sees the connection end; the client sees nothing
    }
  }

  cutNextResponse(bytes: number, how: 'reset' | 'end' = 'reset'): void {
    this.cut = { bytes, how };
  }

  heal(): void {
    this.latencyMs = 0;
    this.cut = undefined;
    this.holding = false;
    for (const deliver of this.held.splice(0)) deliver();
  }

  async close(): Promise<void> {
    this.heal();
    for (const p of this.pairs) {
      p.client.destroy();
      p.server.destroy();
    }
    for (const c of this.limbo) c.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket, target: { host: string; port: number }): void {
    this.connections++;
    const server = net.connect(target.port, target.host);
    const pair = { client, server, silent: false };
    this.pairs.add(pair);
    const forward = (from: net.Socket, to: net.Socket) => {
      let queue = Promise.resolve();
      from.on('data', (chunk: Buffer) => {
        if (pair.silent) return; // a half-open connection: nothing goes through, nobody is told
        const delay = this.latencyMs;
        queue = queue.then(async () => {
          if (delay > 0) await new Promise((r) => setTimeout(r, delay));
          if (this.holding) await new Promise<void>((r) => this.held.push(r));
          if (pair.silent || to.destroyed) return;
          const cut = from === server ? this.cut : undefined;
          if (cut && chunk.length > cut.bytes) {
            this.cut = undefined;
            this.cuts++;
            pair.silent = true; // nothing more goes through, either way
            server.destroy();
            if (cut.how === 'end') client.end(chunk.subarray(0, cut.bytes));
            else {
              client.write(chunk.subarray(0, cut.bytes));
              // the client reads what arrived, then sees the reset
              setTimeout(() => client.resetAndDestroy(), 50);
            }
            return;
          }
          to.write(chunk);
        });
      });
    };
    forward(client, server);
    forward(server, client);
    const end = () => {
      this.pairs.delete(pair);
      if (!pair.silent) {
        client.destroy();
        server.destroy();
      }
    };
    client.on('close', end);
    server.on('close', end);
    client.on('error', () => undefined);
    server.on('error', () => undefined);
  }
}

/**
 * One proxy in front of every broker of a topology, on the ports the brokers' PROXIED listener
 * advertises (infra/kafka.ts): a client given `brokers` reaches the cluster only through them,
 * metadata included. `each(fn)` applies a fault (or `heal`) to all of them at once.
 */
export async function proxyKafka(topology: KafkaTopology): Promise<{
  brokers: string[];
  proxies: FaultProxy[];
  each(fn: (p: FaultProxy) => void): void;
  connections(): number;
}> {
  const nodes = kafkaNodes(topology);
  const proxies = await Promise.all(
    nodes.map((n) => FaultProxy.start({ host: '127.0.0.1', port: n.proxiedPort }, n.proxyPort)),
  );
  return {
    brokers: nodes.map((n) => `127.0.0.1:${n.proxyPort}`),
    proxies,
    each: (fn) => proxies.forEach(fn),
    connections: () => proxies.reduce((n, p) => n + p.connections, 0),
  };
}
