import { randomUUID } from 'node:crypto';
import { createTestDatabase, readTopic, testKafka, waitFor, type TestDatabase } from '../test/harness';
import { createTestBus } from '../test/harness/bus';
import { startTestBridge } from '../test/harness/bridge';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { DLQ_HEADERS } from '../sdk/wire';
import { type EventBus } from '../sdk';
import { QUARANTINE_HEADERS } from './bridge';

interface DlqRow {
  event_id: string;
  sequence_number: string;
  colonia: string;
  handler_nome: string | null;
  mensagem_erro: string;
  pilha_erro: string | null;
  tentativas: number;
  status: string;
  resolvido_em: Date | null;
}

const dlqRows = async (db: TestDatabase): Promise<DlqRow[]> =>
  (
    await db.pool.query<DlqRow>(
      'SELECT event_id::text, sequence_number::text, colonia, handler_nome, mensagem_erro, pilha_erro, tentativas, status, resolvido_em FROM core.dead_letter_queue ORDER BY id',
    )
  ).rows;

describe('the bridge mirrors DLQ topics into core.dead_letter_queue', () => {
  let bus: EventBus;
  let db: TestDatabase;
  const { producer } = testKafka();

  beforeAll(async () => {
    bus = await createTestBus();
    db = await createTestDatabase();
    await startTestBridge(bus, db, { dlqEventWaitMs: 1_500 });
  });

  it('T10/T11: a handler failure becomes one pendente row with every field, and no personal data', async () => {
    bus.inscrever(
      'demanda.recebida',
      'D-5',
      function triagem(e) {
        throw new Error(
          `não consegui ler "${String(e.payload.texto_bruto)}" do cidadão ${String(e.payload.cidadao_id)}`,
        );
      },
      { tentativasExtras: 0 },
    );
    await bus.inscricoesProntas();
    const sent = await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: {
        ...SAMPLE_PAYLOADS['demanda.recebida'],
        texto_bruto: 'Minha casa na Rua Segredo 42 alagou',
        cidadao_id: 'cidadao-sigiloso-77',
      },
    });
    const [row] = await waitFor(async () => {
      const r = await dlqRows(db);
      return r.length === 1 && r;
    });
    const { rows: log } = await db.pool.query<{ s: string }>(
      'SELECT sequence_number::text AS s FROM core.event_log WHERE event_id = $1',
      [sent.event_id],
    );
    expect(row).toMatchObject({
      event_id: sent.event_id,
      sequence_number: log[0]?.s,
      colonia: 'D-5',
      handler_nome: 'triagem',
      tentativas: 1,
      status: 'pendente',
      resolvido_em: null,
    });
    expect(row?.mensagem_erro).toContain('não consegui ler');
    expect(row?.pilha_erro).toContain('triagem');
    const all = JSON.stringify(await dlqRows(db));
    expect(all).not.toContain('Rua Segredo');
    expect(all).not.toContain('cidadao-sigiloso-77');
  });

  it('increments tentativas on each new failure, reopens a resolved row, and ends failed_permanent at the maximum', async () => {
    const [first] = await readTopic(bus.topics.dlq('D-5'), 1);
    const again = async (): Promise<void> => {
      const p = await producer();
      await p.send({
        topic: bus.topics.dlq('D-5'),
        acks: -1,
        messages: [
          {
            key: first!.key,
            value: first!.value,
            headers: { ...first!.headers, [DLQ_HEADERS.failedAt]: new Date().toISOString() },
          },
        ],
      });
    };
    await db.pool.query(`UPDATE core.dead_letter_queue SET status = 'resolved', resolvido_em = now()`);
    await again();
    await waitFor(async () => (await dlqRows(db))[0]?.tentativas === 2);
    expect((await dlqRows(db))[0]).toMatchObject({ status: 'pendente', resolvido_em: null });
    await again(); // the third failure reaches DLQ_MAX_TENTATIVAS (3 in tests)
    await waitFor(async () => (await dlqRows(db))[0]?.tentativas === 3);
    const [row] = await dlqRows(db);
    expect(row?.status).toBe('failed_permanent');
    expect(row?.resolvido_em).toBeInstanceOf(Date);
    expect(await dlqRows(db)).toHaveLength(1); // one row per (event_id, colonia)
  });

  it('quarantines a DLQ record whose event never reaches the log', async () => {
    const p = await producer();
    const ghost = randomUUID();
    await p.send({
      topic: bus.topics.dlq('D-5'),
      acks: -1,
      messages: [
        { key: ghost, value: Buffer.from('x'), headers: { ce_id: ghost, [DLQ_HEADERS.errorMessage]: 'boom' } },
      ],
    });
    const q = await waitFor(
      async () => (await readTopic(bus.topics.quarentena(), 1)).find((m) => m.key?.toString() === ghost),
      { timeoutMs: 30_000 },
    );
    expect(q.headers?.[QUARANTINE_HEADERS.reason]?.toString()).toBe('event-not-in-log');
    expect((await dlqRows(db)).some((r) => r.event_id === ghost)).toBe(false);
  });
});
