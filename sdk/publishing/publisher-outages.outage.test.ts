import { BrokerError, RegistryError } from '../errors';
import { SAMPLE_PAYLOADS } from '../testing';
import { createTestBus } from '../../test/harness/bus';
import { serviceEnv } from '../../test/harness';
import { startKafka, stopKafka } from '../../infra/kafka';
import { startRegistry, stopRegistry } from '../../infra/registry';

const categorizada = {
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
};

// These tests stop the project's own local services; with external services they cannot.
const local = serviceEnv().registryUrl.startsWith('http://127.0.0.1:8081/');
const describeLocal = local ? describe : describe.skip;

describeLocal('publishing while a service is down (really stopped)', () => {
  it('keeps publishing with a warm cache while the registry is stopped; a cold cache fails fast, typed and retriable', async () => {
    const warm = await createTestBus({ registryTimeoutMs: 500, registryRetries: 1 });
    await warm.publicar(categorizada); // warms the id cache
    const cold = await createTestBus({ namespace: warm.options.namespace, registryTimeoutMs: 500, registryRetries: 1 });
    await stopRegistry();
    try {
      await expect(warm.publicar(categorizada)).resolves.toMatchObject({ tipo: 'demanda.categorizada' });
      const t0 = Date.now();
      const err = await cold.publicar(categorizada).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RegistryError);
      expect(err).toMatchObject({ code: 'REGISTRY_UNAVAILABLE', retriable: true });
      expect(Date.now() - t0).toBeLessThan(5_000);
    } finally {
      await startRegistry();
    }
    await expect(cold.publicar(categorizada)).resolves.toMatchObject({ tipo: 'demanda.categorizada' });
  }, 120_000);

  it('fails with a typed, retriable BrokerError within publishTimeoutMs while the broker is stopped, and recovers', async () => {
    const bus = await createTestBus({ publishTimeoutMs: 3_000 });
    await bus.publicar(categorizada);
    await stopKafka('single');
    try {
      const t0 = Date.now();
      const err = await bus.publicar(categorizada).catch((e: unknown) => e);
      const elapsed = Date.now() - t0;
      expect(err).toBeInstanceOf(BrokerError);
      expect(err).toMatchObject({ code: 'BROKER_UNAVAILABLE', retriable: true });
      expect(elapsed).toBeLessThan(3_000 + 1_000);
    } finally {
      await startKafka('single');
    }
    await expect(bus.publicar(categorizada)).resolves.toMatchObject({ tipo: 'demanda.categorizada' });
  }, 120_000);
});
