import { FeromoniosError, isRetriable, isRetriableHttpStatus, PublishValidationError, RegistryError } from './errors';

describe('error retry decisions', () => {
  it('retries registry timeouts, throttling and server errors only', () => {
    expect([408, 425, 429, 500, 503].map(isRetriableHttpStatus)).toEqual([true, true, true, true, true]);
    expect([400, 401, 404, 409, 422].map(isRetriableHttpStatus)).toEqual([false, false, false, false, false]);
  });

  it('asks the error, not its message', () => {
    expect(isRetriable(new RegistryError('REGISTRY_UNAVAILABLE', 'down'))).toBe(true);
    expect(isRetriable(new RegistryError('REGISTRY_REJECTED', 'Connection terminated'))).toBe(false);
    expect(isRetriable(new PublishValidationError('UNKNOWN_TYPE', 'registry', 'no such type'))).toBe(false);
  });

  it('retries the PostgreSQL SQLSTATEs of serialization, deadlock and shutdown', () => {
    for (const code of ['40001', '40P01', '57P01', '57P03']) expect(isRetriable({ code })).toBe(true);
    for (const code of ['23505', '42P01', '22P02']) expect(isRetriable({ code })).toBe(false);
  });

  it('looks through kafkajs’s "retries exhausted" wrapper at its cause', async () => {
    const { KafkaJSNonRetriableError, KafkaJSProtocolError } = (await import('kafkajs')) as unknown as {
      KafkaJSNonRetriableError: new (e: Error, o: { cause: Error }) => Error;
      KafkaJSProtocolError: new (e: { message: string; type: string; code: number; retriable: boolean }) => Error;
    };
    const notLeader = new KafkaJSProtocolError({
      message: 'not the leader',
      type: 'NOT_LEADER_FOR_PARTITION',
      code: 6,
      retriable: true,
    });
    const tooLarge = new KafkaJSProtocolError({
      message: 'too large',
      type: 'MESSAGE_TOO_LARGE',
      code: 10,
      retriable: false,
    });
    expect(isRetriable(new KafkaJSNonRetriableError(notLeader, { cause: notLeader }))).toBe(true);
    expect(isRetriable(new KafkaJSNonRetriableError(tooLarge, { cause: tooLarge }))).toBe(false);
  });

  it('keeps code, retriable and cause on the base class', () => {
    const cause = new Error('inner');
    const err = new FeromoniosError('BROKER_UNAVAILABLE', 'x', { retriable: true, cause });
    expect(err).toMatchObject({ code: 'BROKER_UNAVAILABLE', retriable: true, cause });
  });
});
