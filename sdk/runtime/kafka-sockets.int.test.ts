import { SAMPLE_PAYLOADS } from '../testing';
import { createTestBus } from '../../test/harness/bus';
import { proxyKafka } from '../../test/harness/fault-proxy';
import { topicMessageCount, waitFor } from '../../test/harness';

const categorizada = () => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});

/**
 * A broker connection that ends in the middle of a response (a reset, a proxy or a load balancer
 * giving up, a broker killed) leaves the first bytes of that response behind. kafkajs keeps them
 * and prepends them to whatever the next socket of the same connection receives, so every later
 * response is read out of frame: requests time out on a connection that looks healthy, or the
 * decoder throws out of the socket's data handler — an uncaught RangeError that kills the process
 * (tulios/kafkajs#715). The SDK's sockets hand kafkajs whole responses only (kafka-sockets.ts).
 */
describe('a broker connection cut in the middle of a response', () => {
  let kafkaNet: Awaited<ReturnType<typeof proxyKafka>>;
  beforeAll(async () => {
    kafkaNet = await proxyKafka('single'); // one proxy per broker, on the port its PROXIED listener advertises
  });
  beforeEach(() => kafkaNet.each((p) => ((p.cuts = 0), p.heal())));

  it('costs a retried request: later responses on the reconnected connection are read whole, nothing lost or duplicated', async () => {
    const bus = await createTestBus({ brokers: kafkaNet.brokers, publishTimeoutMs: 5_000 });
    await bus.publicar(categorizada()); // metadata, the producer id and the topic, before any cut
    let published = 1;
    // 1..3 bytes: not even the size of the response; 4: the size alone; 6, 9: into its header and body
    const cuts = (['reset', 'end'] as const).flatMap((how) => [1, 3, 4, 6, 9].map((keep) => ({ how, keep })));
    for (const { how, keep } of cuts) {
      kafkaNet.each((p) => p.cutNextResponse(keep, how));
      for (let i = 0; i < 5; i++) {
        const t0 = Date.now();
        await bus.publicar(categorizada());
        published++;
        expect(Date.now() - t0).toBeLessThan(5_000);
      }
    }
    expect(kafkaNet.proxies.reduce((n, p) => n + p.cuts, 0)).toBe(cuts.length);
    // the producer is idempotent: a produce request retried after its response was cut is written once
    expect(await topicMessageCount(bus.topics.evento('demanda.categorizada'))).toBe(published);
  });

  it('a consuming colony whose fetches, heartbeats and commits are cut goes on: every event handled', async () => {
    const publisher = await createTestBus();
    const colony = await createTestBus({
      brokers: kafkaNet.brokers,
      namespace: publisher.options.namespace,
      publishTimeoutMs: 5_000,
    });
    const handled = new Set<string>();
    colony.inscrever('demanda.categorizada', 'D-4', (e) => void handled.add(e.event_id));
    await colony.inscricoesProntas();
    const published: string[] = [];
    for (const keep of [2, 4, 7, 40, 200]) {
      for (let i = 0; i < 10; i++) published.push((await publisher.publicar(categorizada())).event_id);
      kafkaNet.each((p) => p.cutNextResponse(keep));
      await waitFor(() => kafkaNet.proxies.some((p) => p.cuts > 0) && published.every((id) => handled.has(id)), {
        timeoutMs: 30_000,
        message: `every event handled after a response cut at ${keep} bytes`,
      });
      kafkaNet.each((p) => (p.cuts = 0));
    }
    expect(handled.size).toBe(published.length);
  });
});
