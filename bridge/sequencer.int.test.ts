import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { silentLogger } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { createTestDatabase, randomNamespace, registerCleanup, serviceEnv, waitFor } from '../test/harness';
import { stageEvents } from './event-log-writer';
import { BridgeMetrics } from './metrics';
import { Sequencer } from './sequencer';

describe('the sequencer loop', () => {
  it('a round that keeps failing is retried with backoff, counted, reported failing, and recovers by itself', async () => {
    const db = await createTestDatabase();
    const ns = randomNamespace();
    const event_id = randomUUID();
    await stageEvents(db.pool, [
      {
        event_id,
        tipo: 'demanda.normalizada',
        versao_schema: '1.0.0',
        timestamp: new Date().toISOString(),
        origem: 'D-1b',
        correlacao_id: event_id,
        causation_id: null,
        tenant_id: null,
        payload: { ...SAMPLE_PAYLOADS['demanda.normalizada'] },
        kafka_topic: `${ns}.evento.demanda.normalizada`,
        kafka_partition: 0,
        kafka_offset: '0',
        publicado_em: new Date().toISOString(),
        ordem_sessao: null,
        ordem_contador: null,
      },
    ]);
    // Kafka "unavailable" to the sequencer at first: no admin client yet
    const kafkaAdmin: { current?: Admin } = {};
    const metrics = new BridgeMetrics();
    const sequencer = new Sequencer({
      pool: db.pool,
      admin: () => kafkaAdmin.current,
      groupId: `${ns}-bridge`,
      pattern: new RegExp(`^${ns}\\.evento\\.`),
      topicPrefix: `${ns}.evento.`,
      causalHoldMs: 30_000,
      maxIdleMs: 30_000,
      orderGapMs: 2_000,
      roundLimit: 1000,
      batchSize: 100,
      pollMs: 50,
      onRefused: () => Promise.resolve(),
      logger: silentLogger,
      metrics,
    });
    registerCleanup(() => sequencer.stop());
    sequencer.start();
    await waitFor(() => sequencer.failing, { timeoutMs: 20_000, message: 'the sequencer reports itself failing' });
    expect((await metrics.sequencerFailures.get()).values[0]?.value).toBeGreaterThanOrEqual(3);
    expect(sequencer.leader).toBe(false); // it let go of the lock to take it anew

    const kafka = new Kafka({ clientId: 'sequencer-test', brokers: serviceEnv().brokers, logLevel: logLevel.NOTHING });
    const connected = kafka.admin();
    await connected.connect();
    registerCleanup(() => connected.disconnect());
    kafkaAdmin.current = connected;
    await waitFor(
      async () => (await db.pool.query('SELECT 1 FROM core.event_log WHERE event_id = $1', [event_id])).rowCount === 1,
      { timeoutMs: 20_000, message: 'the staged event written once Kafka answers' },
    );
    expect(sequencer.failing).toBe(false);
    expect(sequencer.leader).toBe(true);
  });
});
