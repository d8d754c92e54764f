import net from 'node:net';
import { registerCleanup } from './index';

/**
 * A TCP proxy the fault tests control (there is no toxiproxy here): put it between a client and
 * a server (the bridge and PostgreSQL, say) and inject network faults, as opposed to dead
 * processes (docs/reliability.md, "Network faults"):
 * - `latency(ms)`: every chunk, both ways, delivered `ms` late (order kept);
 * - `blackhole()`: nothing is delivered, both ways, on open and new connections — packets
 *   "lost" until `heal()`, when what was held is delivered (as TCP retransmission would) unless
 *   an endpoint gave up meanwhile;
 * - `reset()`: every open connection is reset (RST) in the middle of whatever it was doing;
 * - `halfOpen()`: the server side of every open connection is closed while the client side stays
 *   open and silent — the client is never told (a peer that vanished);
 * - `heal()`: back to passing everything at once.
 */
export class FaultProxy {
  private latencyMs = 0;
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

  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    const holder: { proxy?: FaultProxy } = {};
    const server = net.createServer((client) => holder.proxy?.accept(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
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

  heal(): void {
    this.latencyMs = 0;
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
          if (!pair.silent && !to.destroyed) to.write(chunk);
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
