import { KafkaJSNumberOfRetriesExceeded, KafkaJSRequestTimeoutError, KafkaJSConnectionError } from 'kafkajs';
import { isRequestTimeout } from './producer';

describe('isRequestTimeout (a timed-out request discards the producer session)', () => {
  it('sees a request timeout, also wrapped by kafkajs retries or by a cause chain', () => {
    const timeout = new KafkaJSRequestTimeoutError('Request Produce(key: 0, version: 7) timed out');
    expect(isRequestTimeout(timeout)).toBe(true);
    expect(isRequestTimeout(new KafkaJSNumberOfRetriesExceeded(timeout, { retryCount: 5, retryTime: 1000 }))).toBe(
      true,
    );
    expect(isRequestTimeout(new Error('broker unavailable', { cause: timeout }))).toBe(true);
  });

  it('does not take other errors, non-errors or endless chains for one', () => {
    expect(isRequestTimeout(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED'))).toBe(false);
    expect(isRequestTimeout(new Error('Request timed out'))).toBe(false); // the name decides, not the text
    expect(isRequestTimeout('KafkaJSRequestTimeoutError')).toBe(false);
    expect(isRequestTimeout(undefined)).toBe(false);
    const loop = new Error('loop') as Error & { cause?: unknown };
    loop.cause = loop;
    expect(isRequestTimeout(loop)).toBe(false);
  });
});
