import { serviceEnv, createTestDatabase, randomNamespace, testKafka, waitFor } from './harness';

describe('the real services the suite runs against', () => {
  const { producer, consumer, admin } = testKafka();

  it('produces and consumes one message through the real broker', async () => {
    const topic = `${randomNamespace()}.smoke`;
    const a = await admin();
    await a.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    const c = consumer(`${topic}.group`);
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    const received: string[] = [];
    await c.run({
      eachMessage: ({ message }) => {
        received.push(message.value?.toString() ?? '');
        return Promise.resolve();
      },
    });
    const p = await producer();
    await p.send({ topic, acks: -1, messages: [{ key: 'k', value: 'olá' }] });
    await waitFor(() => received.length === 1, { message: 'message consumed' });
    expect(received).toEqual(['olá']);
  });

  it('registers and fetches a JSON schema through the registry Confluent API', async () => {
    const { registryUrl } = serviceEnv();
    const subject = `${randomNamespace()}.smoke-value`;
    const schema = JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' });
    const reg = await fetch(`${registryUrl}/subjects/${subject}/versions`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schema, schemaType: 'JSON' }),
    });
    expect(reg.status).toBe(200);
    const { id } = (await reg.json()) as { id: number };
    const got = (await (await fetch(`${registryUrl}/schemas/ids/${id}`)).json()) as {
      schema: string;
      schemaType?: string;
    };
    expect(JSON.parse(got.schema)).toEqual(JSON.parse(schema));
  });

  it('connects to PostgreSQL, in a database cloned from the migrated template', async () => {
    const db = await createTestDatabase();
    const { rows } = await db.pool.query<{ t: string }>(
      // the log's monthly partitions (ADR 0017) are not tables of their own here
      `SELECT table_name AS t FROM information_schema.tables t
        WHERE table_schema = 'core'
          AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = format('%I.%I', t.table_schema, t.table_name)::regclass)
        ORDER BY 1`,
    );
    expect(rows.map((r) => r.t)).toEqual([
      'dead_letter_queue',
      'dlq_reprocessamento',
      'event_ids',
      'event_log',
      'event_log_arquivo',
      'event_staging',
      'lacunas_retencao',
    ]);
  });
});
