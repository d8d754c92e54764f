import { randomUUID } from 'node:crypto';
import { createTestDatabase, waitFor } from '../test/harness';
import { createTestBus } from '../test/harness/bus';
import { spawnBridge, startLogPollers } from '../test/harness/bridge';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import type { PublicarEventoDto } from '../sdk';
import { SchemaCatalog } from '../sdk/wire';

const TYPES = ['demanda.categorizada', 'demanda.normalizada', 'parametros.atualizados'] as const;
const publicador = (tipo: string): string => SchemaCatalog.load().tipo(tipo)!.publicadores[0]!;

describe('the global sequence readers can trust', () => {
  it('never lets a reader polling sequence_number > cursor skip a committed row, with two bridges and one killed -9 mid-stream', async () => {
    const bus = await createTestBus({ topics: { partitions: 4, replicationFactor: -1, retentionMs: 3_600_000 } });
    const db = await createTestDatabase();
    // Create every topic first so both bridges subscribe to all of them at once.
    await bus.publicarLote(
      TYPES.map((tipo) => ({ tipo, origem: publicador(tipo), payload: { ...SAMPLE_PAYLOADS[tipo] } })),
    );
    // Random delays before COMMIT make concurrent transactions commit out of sequence order
    // unless the writers are serialised: without the lock, readers skip rows.
    const small = { BRIDGE_BATCH_SIZE: '20', BRIDGE_FLUSH_INTERVAL_MS: '20', BRIDGE_FAULT_COMMIT_JITTER_MS: '15' };
    let a = spawnBridge(bus, db, small);
    const b = spawnBridge(bus, db, small);

    // Concurrent readers, each with its own cursor, recording every row it saw.
    const pollers = startLogPollers(db, 3);

    const published: string[] = TYPES.map(() => '');
    published.length = 0;
    const total = 3000;
    let killed = false;
    for (let i = 0; i < total / 50; i++) {
      const lote: PublicarEventoDto[] = Array.from({ length: 50 }, (_, j) => {
        const tipo = TYPES[(i + j) % TYPES.length]!;
        return { tipo, origem: publicador(tipo), correlacao_id: randomUUID(), payload: { ...SAMPLE_PAYLOADS[tipo] } };
      });
      published.push(...(await bus.publicarLote(lote)).map((e) => e.event_id));
      if (!killed && i === total / 50 / 3) {
        killed = true;
        a.child.kill('SIGKILL');
        await a.exited;
        a = spawnBridge(bus, db, small); // restarted: resumes from the last committed offsets
      }
    }
    const expected = published.length + TYPES.length;
    await waitFor(
      async () =>
        Number((await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM core.event_log')).rows[0]?.n) >= expected,
      { timeoutMs: 120_000, message: `${expected} rows` },
    );
    const { rows: finalRows } = await db.pool.query<{ s: string }>(
      'SELECT sequence_number::text AS s FROM core.event_log ORDER BY sequence_number',
    );
    const max = finalRows.at(-1)!.s;
    // let every reader reach the end, then stop them
    await waitFor(() => pollers.lastSeen().every((s) => s === max), {
      timeoutMs: 30_000,
      message: () => `every reader at ${max} (cursors ${pollers.lastSeen().join(', ')})`,
    });
    const seen = await pollers.stop();
    const final = finalRows.map((r) => r.s);
    for (const s of seen) {
      expect(s.at(-1)).toBe(max);
      expect(s).toEqual(final); // saw every committed row, in order, none skipped
    }
    const { rows: dup } = await db.pool.query<{ n: string; d: string }>(
      'SELECT count(*) AS n, count(DISTINCT event_id) AS d FROM core.event_log',
    );
    expect(Number(dup[0]?.n)).toBe(expected);
    expect(Number(dup[0]?.d)).toBe(expected);
    const { rows: missing } = await db.pool.query<{ n: string }>(
      'SELECT count(*) AS n FROM unnest($1::uuid[]) AS p(id) WHERE NOT EXISTS (SELECT 1 FROM core.event_log WHERE event_id = p.id)',
      [published],
    );
    expect(Number(missing[0]?.n)).toBe(0);
    expect(b.child.exitCode).toBeNull(); // the other instance ran throughout
  }, 240_000);
});

describe('the bridge process', () => {
  it('refuses to start without a redaction key, naming the variable', async () => {
    const bus = await createTestBus();
    const db = await createTestDatabase();
    const p = spawnBridge(bus, db, { BRIDGE_REDACTION_KEY: '' });
    expect(await p.exited).toBe(2);
    expect(p.output()).toContain('BRIDGE_REDACTION_KEY: required, expected a secret of at least 32 characters');
  });

  it('stops gracefully on SIGTERM: finishes, commits, exits 0, and a restart reads nothing again', async () => {
    const bus = await createTestBus();
    const db = await createTestDatabase();
    const lote = (n: number): PublicarEventoDto[] =>
      Array.from({ length: n }, () => ({
        tipo: 'demanda.categorizada',
        origem: 'D-3',
        payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'] },
      }));
    await bus.publicarLote(lote(200));
    const p = spawnBridge(bus, db, { LOG_LEVEL: 'info' });
    const count = async (): Promise<number> =>
      Number((await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM core.event_log')).rows[0]?.n);
    await waitFor(async () => (await count()) === 200, { timeoutMs: 60_000 });
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(p.output()).toContain('"msg":"bridge stopped"');
    // The restart logs every batch it writes (debug): had the stop not committed its offsets, it
    // would read the 200 again and log them as duplicates — the row count alone cannot tell,
    // since the log drops duplicates by event_id.
    const again = spawnBridge(bus, db, { LOG_LEVEL: 'debug' });
    await waitFor(() => again.output().includes('"msg":"bridge started"'), { timeoutMs: 60_000 });
    await bus.publicarLote(lote(1));
    await waitFor(async () => (await count()) === 201, { timeoutMs: 60_000 });
    const written = () =>
      again
        .output()
        .split('\n')
        .filter((l) => l.includes('"msg":"batch written"'))
        .map((l) => JSON.parse(l) as { inserted: number; duplicates: number });
    await waitFor(() => written().reduce((n, b) => n + b.inserted, 0) === 1, {
      timeoutMs: 30_000,
      message: () => `the restarted bridge's batches: ${JSON.stringify(written())}`,
    });
    expect(written().reduce((n, b) => n + b.duplicates, 0)).toBe(0);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  }, 120_000);
});
