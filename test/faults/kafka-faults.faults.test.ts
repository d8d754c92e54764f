import { randomUUID } from 'node:crypto';
import { killKafkaNode, kafkaNodes, startKafkaNode } from '../../infra/kafka';
import { criarTabelaInbox, criarTabelaOutbox, isRetriable } from '../../sdk';
import { SAMPLE_PAYLOADS } from '../../sdk/testing';
import { buildHeaders, encodeValue } from '../../sdk/wire';
import { createTestDatabase, testKafka, waitFor } from '../harness';
import { startTestBridge } from '../harness/bridge';
import { createTestBus } from '../harness/bus';
import {
  clusterBus,
  createEffects,
  logCoverage,
  report,
  size,
  categorizada,
  subscribeWithEffects,
  waitForEffects,
} from './scenario';

describe('faults on the 3-node cluster (RF 3, min.insync.replicas 2)', () => {
  it('1. kill -9 the partition leader while publishing with acks=all: every acknowledged event in the log once, handled once', async () => {
    const total = size(5_000, 20_000);
    const bus = await createTestBus(clusterBus);
    const db = await createTestDatabase();
    const colony = await createTestDatabase();
    await criarTabelaInbox(colony.pool, 'f1');
    await createEffects(colony.pool, 'f1');
    await startTestBridge(bus, db);
    subscribeWithEffects(bus, colony.pool, 'f1', 'F-1');
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
    const eff = await waitForEffects(colony.pool, 'f1', acked, {
      what: 'the inbox colony handled every acknowledged event',
    });
    const cov = await logCoverage(db, acked);
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
          origem: 'D-3',
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
  it('7. two of three brokers down (below min.insync.replicas): retriable BROKER_UNAVAILABLE within publishTimeoutMs, the outbox backlog measured, everything resumes when one returns', async () => {
    const publishTimeoutMs = 8_000;
    const outageMs = size(20_000, 180_000);
    const db = await createTestDatabase();
    const colony = await createTestDatabase();
    await criarTabelaOutbox(colony.pool, 'f7');
    const b = await createTestBus({ ...clusterBus, publishTimeoutMs, outbox: { schema: 'f7', pool: colony.pool } });
    const bridge = await startTestBridge(b, db);
    // a colony consuming through the quorum loss: its consumer crashes and is restarted, and
    // must still be stoppable (a kafkajs-restarted consumer used to outlive the bus)
    const handled = new Set<string>();
    b.inscrever('demanda.categorizada', 'F-7', (e) => void handled.add(e.event_id));
    await b.inscricoesProntas();
    const relay = await b.iniciarRelayOutbox({ intervaloMs: 100 });
    const acked: string[] = (await b.publicarLote(Array.from({ length: 100 }, categorizada))).map((e) => e.event_id);
    const [n1, n2, n3] = kafkaNodes('cluster');
    if (!n1 || !n2 || !n3) throw new Error('the cluster has three nodes');
    const down = new Set([n2, n3]);
    await killKafkaNode(n2);
    await killKafkaNode(n3);
    const downAt = Date.now();
    try {
      // publishers: typed, retriable errors within the deadline, never a hang
      const outcomes = await Promise.all(
        Array.from({ length: 8 }, async () => {
          const t0 = Date.now();
          try {
            const e = await b.publicar(categorizada());
            acked.push(e.event_id); // a publish that made it before the quorum was noticed
            return { ok: true, ms: Date.now() - t0 };
          } catch (err) {
            return {
              ok: false,
              ms: Date.now() - t0,
              code: (err as { code?: string }).code,
              retriable: isRetriable(err),
            };
          }
        }),
      );
      const failed = outcomes.filter((o) => !o.ok);
      expect(failed.length).toBeGreaterThan(0);
      for (const f of failed) {
        expect(f).toMatchObject({ code: 'BROKER_UNAVAILABLE', retriable: true });
        expect(f.ms).toBeLessThan(publishTimeoutMs + 3_000);
      }
      // the outbox keeps committing; its gauges show the backlog while the relay cannot publish
      const outboxed: string[] = [];
      const gauge = async () => {
        const m = await b.metrics.registry.metrics();
        return {
          pending: Number(/feromonios_outbox_pending\{schema="f7"\} (\d+)/.exec(m)?.[1] ?? 0),
          age: Number(/feromonios_outbox_oldest_pending_age_seconds\{schema="f7"\} ([\d.]+)/.exec(m)?.[1] ?? 0),
        };
      };
      const samples: Array<{ pending: number; age: number }> = [];
      const firstOutboxAt = Date.now();
      while (Date.now() - downAt < outageMs) {
        const client = await colony.pool.connect();
        try {
          await client.query('BEGIN');
          for (let i = 0; i < 10; i++) outboxed.push((await b.publicarNaTransacao(client, categorizada())).event_id);
          await client.query('COMMIT');
        } finally {
          client.release();
        }
        await new Promise((r) => setTimeout(r, 1_000));
        samples.push(await gauge());
      }
      // the gauges are refreshed between the relay's attempts (each bounded by publishTimeoutMs)
      const { pending, age } = await waitFor(
        async () => {
          const g = await gauge();
          return g.pending === outboxed.length ? g : undefined;
        },
        { timeoutMs: publishTimeoutMs + 5_000, message: 'the pending gauge counts every outboxed row' },
      );
      expect(age).toBeGreaterThan((Date.now() - firstOutboxAt - publishTimeoutMs) / 1000 - 3);
      expect(samples.every((g, i) => i === 0 || g.pending >= (samples[i - 1] as { pending: number }).pending)).toBe(
        true,
      );
      // one broker back: quorum again (2 of 3)
      await startKafkaNode(n2);
      down.delete(n2);
      const back = Date.now();
      await waitFor(
        async () => {
          try {
            acked.push((await b.publicar(categorizada())).event_id);
            return true;
          } catch {
            return false;
          }
        },
        { timeoutMs: 120_000, intervalMs: 1_000, message: 'publishing resumes with two brokers' },
      );
      const resumedAfterMs = Date.now() - back;
      acked.push(...(await b.publicarLote(Array.from({ length: 100 }, categorizada))).map((e) => e.event_id));
      await waitFor(
        async () => (await logCoverage(db, [...acked, ...outboxed])).inLog === acked.length + outboxed.length,
        {
          timeoutMs: 180_000,
          message: 'every acknowledged and outboxed event in the log',
        },
      );
      // the backlog drained in commit order (one relay, rows in id order)
      const { rows } = await db.pool.query<{ event_id: string; p: number; s: string }>(
        `SELECT event_id::text, kafka_partition AS p, sequence_number::text AS s
           FROM core.event_log WHERE event_id = ANY($1::uuid[]) ORDER BY sequence_number`,
        [outboxed],
      );
      const logged = rows.map((r) => r.event_id);
      if (logged.join() !== outboxed.join()) {
        // what a failure in CI needs to be explained: where each outboxed row landed, and what
        // the sequencer did about partitions and gaps
        const where = new Map(rows.map((r) => [r.event_id, `p${r.p}@${r.s}`]));
        const m = (await bridge.metrics.registry.metrics())
          .split('\n')
          .filter((l) => /^feromonios_bridge_(order|causal|sequencer|staging_depth)/.test(l));
        process.stderr.write(
          `[faults] 7 order diagnostics: outbox order → partition@sequence: ${outboxed.map((id) => where.get(id)).join(' ')}\n${m.join('\n')}\n`,
        );
      }
      expect(logged).toEqual(outboxed);
      const cov = await logCoverage(db, [...acked, ...outboxed]);
      report('7 two of three brokers down, outbox backlog', {
        published: acked.length + outboxed.length + failed.length,
        acknowledged: acked.length + outboxed.length,
        inLog: cov.inLog,
        duplicatesInLog: cov.duplicates,
        lost: cov.missing.length,
        notes: `${failed.length} publishes refused BROKER_UNAVAILABLE in at most ${Math.max(...failed.map((f) => f.ms))} ms (publishTimeoutMs ${publishTimeoutMs}); outbox backlog ${pending} rows, oldest ${Math.round(age)} s, drained in order; publishing resumed ${resumedAfterMs} ms after a broker returned`,
      });
      expect(cov.missing).toEqual([]);
      expect(cov.duplicates).toBe(0);
      await waitFor(() => [...acked, ...outboxed].every((id) => handled.has(id)), {
        timeoutMs: 120_000,
        message: 'the colony handled every acknowledged event',
      });
    } finally {
      await relay.parar();
      for (const n of down) await startKafkaNode(n); // the cluster whole again for what follows
    }
    // stopped after crashes and restarts: no consumer of the bridge or the colony is left in a group
    await bridge.stop();
    await b.encerrar();
    const groups = [`${b.topics.namespace}-bridge`, `${b.topics.namespace}-bridge.dlq`, b.topics.grupo('F-7')];
    const { admin } = testKafka();
    const a = await admin();
    const members = async () =>
      (await a.describeGroups(groups)).groups.flatMap((g) => g.members.map((m) => `${g.groupId}: ${m.clientId}`));
    let left: string[] = [];
    await waitFor(async () => (left = await members()).length === 0, {
      timeoutMs: 60_000, // a member that left without a LeaveGroup expires with its session (30 s)
      message: () => `every consumer left its group (still there: ${left.join(', ')})`,
    });
    await new Promise((r) => setTimeout(r, 5_000)); // a consumer restarting unowned would join again
    expect(await members()).toEqual([]);
  }, 600_000);
});

async function readAll(topic: string, count: number) {
  const { readTopic } = await import('../harness');
  return readTopic(topic, count, { timeoutMs: 120_000 });
}
