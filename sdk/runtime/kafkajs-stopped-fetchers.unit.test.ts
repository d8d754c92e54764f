/* eslint-disable @typescript-eslint/no-require-imports -- kafkajs's internals are CommonJS, resolved from its package */
import {
  FetchAfterStopError,
  unwrapRunnerFetch,
  wrapRunnerFetch,
  type StoppableRunner,
} from './kafkajs-stopped-fetchers';

/**
 * kafkajs's own `Runner` (its fetch manager and fetchers as released) over a consumer group reduced
 * to what they call, driven into the race the fault suite hit: the brokers change (a fetcher fails
 * with a rebalance of the fetchers) while the consumer stops, so the fetch manager starts new
 * fetchers after the stop.
 */
const Runner = require('kafkajs/src/consumer/runner') as new (o: object) => StoppableRunner & {
  start(): Promise<void>;
  stop(): Promise<void>;
};
const InstrumentationEmitter = require('kafkajs/src/instrumentation/emitter') as new () => object;
const { createLogger, LEVELS } = require('kafkajs/src/loggers') as {
  createLogger(o: { level: number; logCreator: () => () => void }): object;
  LEVELS: { NOTHING: number };
};

interface Deferred {
  promise: Promise<unknown[]>;
  resolve(v: unknown[]): void;
}
const deferred = (): Deferred => {
  let resolve!: (v: unknown[]) => void;
  const promise = new Promise<unknown[]>((r) => (resolve = r));
  return { promise, resolve };
};

/** A few turns of the event loop: every microtask and timer of 0 ms before it has run. */
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 0));
};

/**
 * Runs the race once; returns how many times the fetchers asked for the brokers after the stop
 * (each fetch of a fetcher asks) and whether the loop had to be broken from outside.
 */
async function race(): Promise<{ asksAfterStop: number; brokenFromOutside: boolean; stopped: boolean }> {
  let nodeIds = [1, 2];
  let stopAt: number | undefined = undefined;
  let asks = 0;
  let brokenFromOutside = false;
  const pending = new Map<number, Deferred>();
  const group = {
    groupId: 'g',
    memberId: 'm',
    connect: () => Promise.resolve(),
    joinAndSync: () => Promise.resolve(),
    leave: () => Promise.resolve(),
    heartbeat: () => Promise.resolve(),
    commitOffsetsIfNecessary: () => Promise.resolve(),
    getNodeIds: () => {
      asks++;
      // unwrapped, the new fetcher's loop never yields: break it from here, or the test hangs
      if (stopAt !== undefined && asks - stopAt > 10_000) {
        brokenFromOutside = true;
        throw new Error('fetchers looping after the stop');
      }
      return nodeIds;
    },
    fetch: (nodeId: number) => {
      const d = deferred();
      pending.set(nodeId, d);
      return d.promise;
    },
  };
  const runner = new Runner({
    logger: createLogger({ level: LEVELS.NOTHING, logCreator: () => () => undefined }),
    consumerGroup: group,
    instrumentationEmitter: new InstrumentationEmitter(),
    eachBatch: () => Promise.resolve(),
    heartbeatInterval: 3000,
    retry: { initialRetryTime: 5, retries: 2 },
    onCrash: () => undefined,
  });
  await runner.start();
  await turns();
  expect([...pending.keys()].sort()).toEqual([1, 2]); // one fetcher per broker, each fetching
  // broker 2 leaves: its fetcher's next fetch fails with a rebalance of the fetchers, and the
  // manager waits for broker 1's fetcher to end before it starts new ones
  nodeIds = [1];
  pending.get(2)?.resolve([]);
  await turns();
  // the consumer stops meanwhile: it stops the fetchers it knows, the old ones
  stopAt = asks;
  const stopping = runner.stop();
  pending.get(1)?.resolve([]); // broker 1's fetch ends: the manager starts a new fetcher
  const stopped = await Promise.race([
    stopping.then(() => true),
    new Promise<boolean>((r) => setTimeout(() => r(false), 2000)),
  ]);
  return { asksAfterStop: asks - stopAt, brokenFromOutside, stopped };
}

describe("kafkajs's consumer: fetchers started after the stop (kafkajs-stopped-fetchers)", () => {
  const proto = Runner.prototype as StoppableRunner;

  it('as released, the new fetcher loops on the stopped consumer without yielding (the bug the wrap fixes)', async () => {
    unwrapRunnerFetch(proto);
    const r = await race();
    expect(r.brokenFromOutside).toBe(true);
    expect(r.asksAfterStop).toBeGreaterThan(10_000);
  });

  it('wrapped, the new fetcher ends at its first fetch and stop() completes', async () => {
    wrapRunnerFetch(proto);
    try {
      const r = await race();
      expect(r).toEqual({ asksAfterStop: expect.any(Number) as unknown, brokenFromOutside: false, stopped: true });
      expect(r.asksAfterStop).toBeLessThan(5);
    } finally {
      unwrapRunnerFetch(proto);
    }
  });

  it('wrapped, a running consumer fetches as kafkajs does; a stopped one is refused with FetchAfterStopError', async () => {
    wrapRunnerFetch(proto);
    try {
      const calls: number[] = [];
      const runner = Object.create(proto) as StoppableRunner & Record<string, unknown>;
      Object.assign(runner, {
        running: true,
        logger: { debug: () => undefined },
        instrumentationEmitter: { emit: () => undefined },
        consumerGroup: { fetch: (n: number) => (calls.push(n), Promise.resolve([{ b: n }])) },
      });
      await expect(runner.fetch(3)).resolves.toEqual([{ b: 3 }]);
      runner.running = false;
      await expect(runner.fetch(4)).rejects.toBeInstanceOf(FetchAfterStopError);
      expect(calls).toEqual([3]);
    } finally {
      unwrapRunnerFetch(proto);
    }
  });
});
/* eslint-enable @typescript-eslint/no-require-imports */
