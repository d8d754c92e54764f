import { randomUUID } from 'node:crypto';
import { SAMPLE_PAYLOADS } from '../../sdk/testing';
import { createTestDatabase, waitFor } from '../harness';
import { startTestBridge } from '../harness/bridge';
import { createTestBus } from '../harness/bus';
import { FaultProxy } from '../harness/fault-proxy';
import { clusterBus, logCoverage, report, size } from './scenario';

const categorizada = () => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  correlacao_id: randomUUID(),
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Network faults, as opposed to dead processes (issue #21), through the harness's TCP proxy
 * (test/harness/fault-proxy.ts) between the bridge and PostgreSQL: 500 ms of latency, a
 * blackhole, every connection reset mid-request, half-open connections. Publishing goes on
 * throughout; what must hold: every acknowledged event reaches the log once, and the bridge
 * resumes by itself once the network heals.
 */
describe('network faults between the bridge and PostgreSQL', () => {
  it('8. latency, blackhole, resets and half-open connections: nothing acknowledged lost, nothing duplicated, resumes by itself', async () => {
    const phaseMs = size(8_000, 30_000);
    const bus = await createTestBus(clusterBus);
    const db = await createTestDatabase();
    const url = new URL(db.url);
    const proxy = await FaultProxy.start({ host: url.hostname, port: Number(url.port || 5432) });
    url.port = String(proxy.port);
    const { metrics } = await startTestBridge(bus, { ...db, url: url.toString() }, { dbQueryTimeoutMs: 3_000 });
    const acked: string[] = [];
    let publishing = true;
    const publisher = (async () => {
      while (publishing) {
        acked.push(...(await bus.publicarLote(Array.from({ length: 20 }, categorizada))).map((e) => e.event_id));
        await sleep(100);
      }
    })();
    const phases: Array<[string, () => void]> = [
      ['latency 500 ms', () => proxy.latency(500)],
      ['blackhole', () => proxy.blackhole()],
      ['connections reset mid-request', () => proxy.reset()],
      ['half-open connections', () => proxy.halfOpen()],
    ];
    const seen: string[] = [];
    try {
      await waitFor(async () => (await logCoverage(db, acked)).inLog === acked.length && acked.length > 0, {
        timeoutMs: 60_000,
        message: 'the bridge mirrors through the proxy',
      });
      for (const [name, inject] of phases) {
        const before = acked.length;
        inject();
        await sleep(phaseMs);
        proxy.heal();
        seen.push(`${name}: ${acked.length - before} published meanwhile`);
        // the bridge catches up by itself after each fault
        await waitFor(async () => (await logCoverage(db, acked)).inLog === acked.length, {
          timeoutMs: 120_000,
          message: `the log complete again after ${name}`,
        });
      }
    } finally {
      publishing = false;
      await publisher;
    }
    await waitFor(async () => (await logCoverage(db, acked)).inLog === acked.length, {
      timeoutMs: 120_000,
      message: 'every acknowledged event in the log',
    });
    const cov = await logCoverage(db, acked);
    const retries = (await metrics.retries.get()).values.find((v) => v.labels.dependency === 'database')?.value ?? 0;
    report('8 network faults bridge ↔ PostgreSQL', {
      published: acked.length,
      acknowledged: acked.length,
      inLog: cov.inLog,
      duplicatesInLog: cov.duplicates,
      lost: cov.missing.length,
      notes: `${phaseMs / 1000} s per fault; ${seen.join('; ')}; ${retries} database retries; ${proxy.connections} connections through the proxy`,
    });
    expect(cov.missing).toEqual([]);
    expect(cov.duplicates).toBe(0);
    expect(retries).toBeGreaterThan(0); // the faults were felt, and ridden out
  }, 900_000);
});
