import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { createTestBus } from '../../test/harness/bus';
import { serviceEnv, testKafka, topicMessageCount, waitFor } from '../../test/harness';
import { SAMPLE_PAYLOADS } from '../testing';
import { retirarColonia } from './retire-colony';

describe('retirarColonia (npm run colony:retire, feromonios topics remove-colony)', () => {
  it('refuses while the colony consumes, then removes its DLQ and reprocessing topics and its group, once', async () => {
    const bus = await createTestBus();
    const topics = bus.topics;
    bus.inscrever(
      'demanda.categorizada',
      'R-1',
      () => {
        throw new Error('always');
      },
      { tentativasExtras: 0 },
    );
    await bus.inscricoesProntas();
    await bus.publicar({
      tipo: 'demanda.categorizada',
      origem: 'D-3',
      payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
    });
    await waitFor(async () => (await topicMessageCount(topics.dlq('R-1'))) >= 1, {
      message: 'the DLQ topic of R-1, created at the first dead letter',
    });
    const a = await testKafka().admin();

    await expect(retirarColonia(a, topics, 'R-1')).rejects.toMatchObject({
      code: 'BAD_REQUEST',
      message: expect.stringContaining('colony R-1 is still consuming') as string,
    });
    expect(await a.listTopics()).toEqual(expect.arrayContaining([topics.dlq('R-1'), topics.reprocessar('R-1')]));

    await bus.encerrar();
    const group = `${topics.namespace}.colonia.R-1`;
    await waitFor(async () => (await a.describeGroups([group])).groups[0]?.members.length === 0, {
      message: 'R-1 left its group',
    });
    const done = await retirarColonia(a, topics, 'R-1');
    expect(done).toEqual({
      colonia: 'R-1',
      topicosRemovidos: [topics.dlq('R-1'), topics.reprocessar('R-1')],
      grupoRemovido: group,
    });
    await waitFor(
      async () => !(await a.listTopics()).some((t) => t === topics.dlq('R-1') || t === topics.reprocessar('R-1')),
      {
        message: 'the topics are gone',
      },
    );
    expect((await a.describeGroups([group])).groups[0]?.state).toBe('Dead');
    expect(await a.listTopics()).toContain(topics.evento('demanda.categorizada')); // shared topics stay

    // again, from the command line (`npm run colony:retire` = `feromonios topics remove-colony --yes`): nothing left to remove
    const root = path.resolve(__dirname, '..', '..');
    const run = (args: string[]) =>
      spawnSync(
        process.execPath,
        [path.join(root, 'cli', 'bin', 'feromonios.cjs'), '--json', 'topics', 'remove-colony', '--yes', ...args],
        {
          encoding: 'utf8',
          env: {
            ...process.env,
            KAFKA_BROKERS: serviceEnv().brokers.join(','),
            FEROMONIOS_TOPIC_NAMESPACE: topics.namespace,
          },
        },
      );
    const again = run(['R-1']);
    expect(again.status).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ colonia: 'R-1', topicosRemovidos: [], grupoRemovido: null });
    expect(run([]).status).toBe(2);
    await expect(retirarColonia(a, topics, 'not a colony!')).rejects.toThrow();
  }, 90_000);
});
