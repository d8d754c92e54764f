import { randomUUID } from 'node:crypto';
import { arquivarMes, DiretorioLocal } from '../sdk/service';
import { createTestDatabase } from '../test/harness';
import { tempDir } from '../test/harness/archive';
import { startTestAuditApi } from '../test/harness/audit';
import { createTestBus } from '../test/harness/bus';

type Row = Record<string, unknown> & { sequence_number: string; event_id: string; arquivado?: boolean };
interface Page {
  linhas: Row[];
  total: number;
  total_exato: boolean;
  proximo_cursor: string | null;
}

const json = async <T>(r: Response): Promise<T> => {
  expect(r.status).toBe(200);
  return (await r.json()) as T;
};
const sem = (rows: Row[]): Row[] => rows.map(({ arquivado: _, ...r }) => r as Row);

/**
 * The audit API over a log with an archived month (docs/archive.md): searches, an event by id and
 * a flow's trace answer as before the archive, archived rows marked `arquivado: true`.
 */
describe('audit API: reads of archived months', () => {
  it('answers searches, events and traces from the archive as it did from PostgreSQL', async () => {
    const db = await createTestDatabase();
    const bus = await createTestBus({ pool: db.pool });
    const corr = randomUUID();
    await db.pool.query(`SELECT core.criar_particao_event_log('2026-06-01')`);
    await db.pool.query(
      `INSERT INTO core.event_log (event_id, tipo, origem, correlacao_id, timestamp, payload, criado_em)
       SELECT gen_random_uuid(), CASE WHEN g % 2 = 0 THEN 'demanda.categorizada' ELSE 'demanda.recebida' END, 'D-3',
              CASE WHEN g % 10 = 0 THEN $1::uuid END, t, jsonb_build_object('demanda_id', 'd-' || g), t
         FROM generate_series(1, 300) g, LATERAL (SELECT '2026-06-02T00:00:00Z'::timestamptz + g * interval '1 minute' AS t) x`,
      [corr],
    );
    await db.pool.query(
      `INSERT INTO core.event_log (event_id, tipo, origem, correlacao_id, payload)
       SELECT gen_random_uuid(), 'demanda.categorizada', 'D-3', CASE WHEN g % 10 = 0 THEN $1::uuid END, jsonb_build_object('demanda_id', 'n-' || g)
         FROM generate_series(1, 100) g`,
      [corr],
    );
    // a parked DLQ entry of a flow event in the month to archive (open ones would block it)
    await db.pool.query(
      `INSERT INTO core.dead_letter_queue (event_id, sequence_number, colonia, mensagem_erro, status, resolvido_em)
       SELECT event_id, sequence_number, 'D-4', 'boom', 'failed_permanent', now() FROM core.event_log
        WHERE correlacao_id = $1 ORDER BY event_log.sequence_number LIMIT 1`,
      [corr],
    );
    const api = await startTestAuditApi(bus, db);
    const urls = [
      `/api/events/trace/${corr}/dlq`,
      '/api/events?limite=500',
      '/api/events?tipo=demanda.categorizada&limite=77',
      `/api/events/trace/${corr}`,
      '/api/events?timestamp_inicio=2026-06-02T01:00:00Z&timestamp_fim=2026-06-02T02:00:00Z&limite=500',
      '/api/events?payload_campo=demanda_id&payload_valor=d-42',
    ];
    const before = await Promise.all(urls.map(async (u) => json<Page>(await api.call(u))));
    const old = before[1]!.linhas[5]!;
    expect((before[0] as unknown as { entradas: unknown[] }).entradas).toHaveLength(1);

    expect(
      await arquivarMes(
        { pool: db.pool, destino: new DiretorioLocal(await tempDir()), linhasPorArquivo: 64 },
        '2026-06',
      ),
    ).toMatchObject({ resultado: 'arquivado', linhas: 300 });

    for (const [i, u] of urls.entries()) {
      const after = await json<Page>(await api.call(u));
      expect(after.linhas ? { ...after, linhas: sem(after.linhas) } : after).toEqual(before[i]);
    }
    const all = await json<Page>(await api.call('/api/events?limite=500'));
    expect(all.linhas.filter((e) => e.arquivado === true)).toHaveLength(300);
    expect(all.linhas.slice(300).some((e) => 'arquivado' in e)).toBe(false);
    const trace = await json<Page>(await api.call(`/api/events/trace/${corr}`));
    expect(trace.linhas.map((e) => e.arquivado ?? false)).toEqual([
      ...Array<boolean>(30).fill(true),
      ...Array<boolean>(10).fill(false),
    ]);
    expect(await json<Row>(await api.call(`/api/events/${old.event_id}`))).toEqual({
      ...old,
      arquivado: true,
      posicao_kafka: null,
    });
    expect((await api.call(`/api/events/${randomUUID()}`)).status).toBe(404);
  });
});
