/**
 * kafkajs 2.2.4's consumer, made to end the fetchers its fetch manager starts after the consumer
 * stopped, instead of looping on them forever.
 *
 * kafkajs's fetch manager (`consumer/fetchManager.js`) runs one fetcher per broker. When the
 * brokers change (one dies, one comes back), a fetcher fails with a rebalance of the fetchers; the
 * manager stops the others and `continue`s: it creates and starts new fetchers, without asking
 * whether the consumer was stopped meanwhile. If `consumer.stop()` (`Runner#stop`) ran in that
 * window, it stopped the old fetchers only. The new ones call `Runner#fetch`, which returns `[]`
 * at once when the consumer is not running — no I/O, no timer — and the fetcher's loop asks again:
 * an endless chain of microtasks. The event loop never turns again: no timer fires, no socket is
 * read, `stop()` never returns, and the process holds a core at 100 % (found by the bridge's fault
 * suite, a broker killed while its consumers stopped: the suite hung with its main thread inside
 * `fetcher.js` and `runner.js`).
 *
 * The wrap makes `Runner#fetch` of a consumer that is not running throw `FetchAfterStopError`.
 * No fetcher `stop()` flagged can get there: `Runner#stop` sets `running` to false and flags every
 * current fetcher in the same synchronous step, and a flagged fetcher leaves its loop without
 * fetching again. So only a fetcher created after the stop meets the error: it ends, the fetch
 * manager rethrows, and kafkajs's retry of the manager finds the consumer stopped and returns —
 * `stop()` then completes (after one retry delay), as it would have without the race.
 *
 * Applied only to kafkajs {@link KAFKAJS_STOPPED_FETCHERS_VERSION}; any other is left as it is.
 */

import { kafkajsPrototypeWrap } from './kafkajs-prototype-wrap';

/** The kafkajs version the wrap was written and tested against. */
export const KAFKAJS_STOPPED_FETCHERS_VERSION = '2.2.4';

/** A fetch asked of a consumer that was stopped: the fetcher asking was started after the stop, and ends. */
export class FetchAfterStopError extends Error {
  override name = 'FetchAfterStopError';
  constructor() {
    super('fetch after the consumer stopped: a fetcher started after the stop ends');
  }
}

/** The parts of kafkajs's `Runner` (`kafkajs/src/consumer/runner`) the wrap reads. */
export interface StoppableRunner {
  running: boolean;
  fetch: (this: StoppableRunner, nodeId: number) => Promise<unknown[]>;
}

const stoppedFetchersWrap = kafkajsPrototypeWrap<StoppableRunner, 'fetch'>({
  version: KAFKAJS_STOPPED_FETCHERS_VERSION,
  module: 'kafkajs/src/consumer/runner',
  member: 'fetch',
  wrapper: (original) =>
    function fetch(this: StoppableRunner, nodeId: number): Promise<unknown[]> {
      if (!this.running) return Promise.reject(new FetchAfterStopError());
      return original.call(this, nodeId);
    },
});

/**
 * Wraps `fetch` of `proto` (a `Runner.prototype`); a second call does nothing. Exported for the
 * tests.
 */
export const wrapRunnerFetch = (proto: StoppableRunner): void => stoppedFetchersWrap.wrap(proto);

/** Puts back the `fetch` that {@link wrapRunnerFetch} wrapped. */
export const unwrapRunnerFetch = (proto: StoppableRunner): void => stoppedFetchersWrap.unwrap(proto);

/**
 * Makes kafkajs's consumers end fetchers started after their stop (see the module's description).
 * Called by `kafkaConnection` when a Feromônios client is created; a second call does nothing.
 * Returns whether kafkajs's consumers now run with it.
 */
export function patchKafkajsStoppedFetchers(): boolean {
  return stoppedFetchersWrap.patch();
}
