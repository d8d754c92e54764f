import { randomUUID } from 'node:crypto';
import { killKafkaNode, kafkaNodes, startKafkaNode } from '../../infra/kafka';
import { criarTabelaInbox, isRetriable } from '../../sdk';
import { SAMPLE_PAYLOADS } from '../../sdk/testing';
import { buildHeaders, encodeValue } from '../../sdk/wire';
import { createTestDatabase, testKafka, waitFor } from '../harness';
import { startTestBridge } from '../harness/bridge';
import { createTestBus } from '../harness/bus';
import { clusterBus, createEffects, effectCounts, logCoverage, report, size } from './scenario';

const categorizada = () => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  correlacao_id: randomUUID(),
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});

describe('faults on the 3-node cluster (RF 3, min.insync.replicas 2)', () => {
  it('1. kill -9 the partition leader while publishing with acks=all: every acknowledged event in the log once, handled once', async () => {
    const total = size(5_000, 20_000);
    const bus = await createTestBus(clusterBus);
    const db = await createTestDatabase();
    const colony = await createTestDatabase();
    await criarTabelaInbox(colony.pool, 'f1');
    await createEffects(colony.pool, 'f1');
    await startTestBridge(bus, db);
    bus.inscrever(
      'demanda.categorizada',
      'F-1',
      async (e, ctx) =>
        void (await ctx.transacao?.query('INSERT INTO f1.efeitos (event_id) VALUES ($1)', [e.event_id])),
      { inbox: { pool: colony.pool, schema: 'f1' } },
    );
    await bus.inscricoesProntas();
    await bus.publicar(categorizada()); // the topic exists: find its leaders
    const { admin } = testKafka();
    const a = await admin();
    const meta = await a.fetchTopicMetadata({ topics: [bus.topics.evento('demanda.categorizada')] });
    const leaderId = meta.topics[0]?.partitions.find((p) => p.partitionId === 0)?.leader;
    const leader = kafkaNodes('cluster').find((n) => n.id === leaderId);
    if (!leader) throw new Error(`no leader node for partition 0 (got ${leaderId})`);

    const acked: string[] = [];
    const failures = { retriable: 0, other: [] as string[] };
    let sent = 0;
    let killed = false;
    const worker = async (): Promise<void> => {
      while (sent < total) {
        sent++;
        const dto = { ...categorizada(), event_id: randomUUID() };
        try {
          await bus.publicar(dto);
          acked.push(dto.event_id);
        } catch (err) {
          if (isRetriable(err)) failures.retriable++;
          else failures.other.push((err as Error).message);
        }
        if (!killed && acked.length >= total / 3) {
          killed = true;
          await killKafkaNode(leader);
        }
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    await startKafkaNode(leader);

    await waitFor(async () => (await logCoverage(db, acked)).inLog === acked.length, {
      timeoutMs: 180_000,
      message: `${acked.length} acknowledged events in the log`,
    });
    await waitFor(async () => (await effectCounts(colony.pool, 'f1')).ids.size >= acked.length, {
      timeoutMs: 180_000,
      message: 'the inbox colony handled every acknowledged event',
    });
    const cov = await logCoverage(db, acked);
    const eff = await effectCounts(colony.pool, 'f1');
    report('1 leader kill -9 during acks=all publishing', {
      published: total,
      acknowledged: acked.length,
      inLog: cov.inLog,
      duplicatesInLog: cov.duplicates,
      lost: cov.missing.length,
      handledOnce: eff.once,
      handledMoreThanOnce: eff.more,
      notes: `killed broker ${leader.id} (leader of partition 0); ${failures.retriable} retriable publish errors, ${failures.other.length} other`,
    });
    expect(failures.other).toEqual([]);
    expect(cov.missing).toEqual([]);
    expect(cov.duplicates).toBe(0);
    expect(eff.more).toBe(0);
    expect(acked.every((id) => eff.ids.has(id))).toBe(true);
    expect(acked.length).toBeGreaterThan(total / 2);
  }, 600_000);

  it('6. a burst of malformed records from a plain producer between valid events: the valid land in order, the rest quarantined with reasons', async () => {
    const malformed = size(1_000, 1_000);
    const bus = await createTestBus(clusterBus);
    const db = await createTestDatabase();
    const synced = await bus.sincronizarSchemas();
    const schemaId = synced.find((x) => x.tipo === 'demanda.categorizada' && x.versao === '1.0.0')?.id as number;
    const valid = await bus.publicarLote(
      Array.from({ length: 10 }, () => ({ ...categorizada(), chave_particao: 'k' })),
    );
    await startTestBridge(bus, db);
    const { producer } = testKafka();
    const p = await producer();
    const topic = bus.topics.evento('demanda.categorizada');
    const kinds: Array<{ value: () => Buffer; headers: boolean }> = [
      { value: () => Buffer.from('not wire format'), headers: true },
      { value: () => encodeValue(999_999, '{}'), headers: true }, // unknown schema id
      { value: () => encodeValue(schemaId, '{not json'), headers: true },
      { value: () => encodeValue(schemaId, JSON.stringify(SAMPLE_PAYLOADS['demanda.categorizada'])), headers: false },
    ];
    const ceHeaders = (): Record<string, string> => {
      const id = randomUUID();
      const h: Record<string, string> = {};
      for (const [k, v] of Object.entries(
        buildHeaders({
          event_id: id,
          tipo: 'demanda.categorizada',
          versao_schema: '1.0.0',
          timestamp: new Date().toISOString(),
          origem: 'kcat',
          correlacao_id: id,
          causation_id: null,
        }),
      ))
        h[k] = String(v);
      return h;
    };
    const expectedIds: string[] = valid.map((e) => e.event_id);
    for (let round = 0; round < 10; round++) {
      await p.send({
        topic,
        acks: -1,
        messages: Array.from({ length: malformed / 10 }, (_, i) => {
          const kind = kinds[i % kinds.length]!;
          return { key: 'k', value: kind.value(), headers: kind.headers ? ceHeaders() : { ce_id: randomUUID() } };
        }),
      });
      const more = await bus.publicarLote(
        Array.from({ length: 10 }, () => ({ ...categorizada(), chave_particao: 'k' })),
      );
      expectedIds.push(...more.map((e) => e.event_id));
    }
    await waitFor(async () => (await logCoverage(db, expectedIds)).inLog === expectedIds.length, {
      timeoutMs: 120_000,
      message: 'every valid event in the log',
    });
    const { rows } = await db.pool.query<{ id: string }>(
      'SELECT event_id::text AS id FROM core.event_log WHERE event_id = ANY($1::uuid[]) ORDER BY event_log.sequence_number',
      [expectedIds],
    );
    expect(rows.map((r) => r.id)).toEqual(expectedIds); // one key, one partition: the log keeps their order
    const quarantined = await readAll(bus.topics.quarentena(), malformed);
    const reasons = new Map<string, number>();
    for (const m of quarantined) {
      const r = m.headers?.feromonios_quarentena_motivo?.toString() ?? '?';
      reasons.set(r, (reasons.get(r) ?? 0) + 1);
    }
    const cov = await logCoverage(db, expectedIds);
    report('6 malformed burst from a plain producer', {
      published: expectedIds.length + malformed,
      acknowledged: expectedIds.length + malformed,
      inLog: cov.inLog,
      duplicatesInLog: cov.duplicates,
      lost: cov.missing.length,
      notes: `quarantined ${quarantined.length}: ${[...reasons].map(([r, n]) => `${r} ${n}`).join(', ')}`,
    });
    expect(quarantined).toHaveLength(malformed);
    expect([...reasons.keys()].sort()).toEqual([
      'invalid-json',
      'missing-header',
      'not-wire-format',
      'unknown-schema-id',
    ]);
  }, 300_000);
});

async function readAll(topic: string, count: number) {
  const { readTopic } = await import('../harness');
  return readTopic(topic, count, { timeoutMs: 120_000 });
}
