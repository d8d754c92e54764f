import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import {
  ConfigError,
  EventBus,
  silentLogger,
  type PublishValidationError,
  SchemaValidationError,
  type Logger,
} from '..';
import { EventDecoder, ORDER_HEADER, parseOrder } from '../wire';
import { SAMPLE_PAYLOADS } from '../testing';
import { createTestBus, SEED_EVENTS } from '../../test/harness/bus';
import { randomNamespace, readTopic, serviceEnv, testKafka, topicMessageCount, waitFor } from '../../test/harness';
import { Ajv2020SchemaType } from '../../test/harness/confluent-client';
import { HEADER } from '../wire/wire-format';

const categorizada = (patch: Record<string, unknown> = {}) => ({
  tipo: 'demanda.categorizada',
  origem: 'D-3',
  payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'], ...patch },
});

describe('publicar over the real broker and registry', () => {
  let bus: EventBus;
  const metrics = new Registry();
  beforeAll(async () => {
    bus = await createTestBus({ metricsRegistry: metrics });
  });

  it('T1: produces a valid event and returns it with the full payload and its Kafka position', async () => {
    const [seed] = SEED_EVENTS;
    const evento = await bus.publicar({ ...seed, payload: { ...seed.payload } });
    expect(evento).toMatchObject({
      sequence_number: null,
      criado_em: null,
      event_id: seed.event_id,
      tipo: 'demanda.recebida',
      versao_schema: '1.0.0',
      timestamp: seed.timestamp,
      origem: 'D-1a',
      correlacao_id: seed.correlacao_id,
      payload: seed.payload,
    });
    expect(evento.posicao?.topico).toBe(bus.topics.evento('demanda.recebida'));
    const [msg] = await readTopic(bus.topics.evento('demanda.recebida'), 1);
    expect(msg?.partition).toBe(evento.posicao?.particao);
    expect(msg?.offset).toBe(evento.posicao?.offset);
  });

  it('writes headers and value exactly as docs/wire-format.md says, byte for byte', async () => {
    const event_id = randomUUID();
    const correlacao_id = randomUUID();
    const causation_id = randomUUID();
    const payload = { ...SAMPLE_PAYLOADS['demanda.normalizada'] };
    await bus.publicar({
      tipo: 'demanda.normalizada',
      origem: 'D-1b',
      event_id,
      correlacao_id,
      causation_id,
      timestamp: '2026-06-15T10:30:05Z',
      payload,
    });
    const [msg] = (await readTopic(bus.topics.evento('demanda.normalizada'), 1)).filter(
      (m) => m.headers?.[HEADER.id]?.toString() === event_id,
    );
    if (!msg) throw new Error('message not found');
    const lookup = await bus.registry.lookup(
      `${bus.topics.evento('demanda.normalizada')}-value`,
      bus.catalog.versao('demanda.normalizada', '1.0.0')!.schemaText,
    );
    const id = Buffer.alloc(4);
    id.writeUInt32BE(lookup!.id);
    expect(msg.value).toEqual(Buffer.concat([Buffer.from([0]), id, Buffer.from(JSON.stringify(payload), 'utf8')]));
    expect(msg.key?.toString()).toBe(correlacao_id);
    const headers = Object.fromEntries(Object.entries(msg.headers ?? {}).map(([k, v]) => [k, String(v)]));
    expect(headers).toEqual({
      ce_specversion: '1.0',
      ce_id: event_id,
      ce_type: 'demanda.normalizada',
      ce_source: 'D-1b',
      ce_time: '2026-06-15T10:30:05Z',
      'content-type': 'application/vnd.feromonios.confluent-json',
      ce_versaoschema: '1.0.0',
      ce_correlacaoid: correlacao_id,
      ce_causationid: causation_id,
      traceparent: headers.traceparent,
      feromonios_ordem: headers.feromonios_ordem,
    });
    expect(headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
    // the producer session's publish order (docs/ordering.md): a UUID, a counter from 1, and the
    // settled mark (nothing else in flight: the counter itself)
    expect(headers.feromonios_ordem).toMatch(/^[0-9a-f-]{36}:([1-9][0-9]*):\1$/);
  });

  it('T12/T13: fills versao_schema 1.0.0 and correlacao_id = event_id, and keys by correlacao_id', async () => {
    const e = await bus.publicar({ ...categorizada(), event_id: randomUUID() });
    expect(e.versao_schema).toBe('1.0.0');
    expect(e.correlacao_id).toBe(e.event_id);
    const msgs = await readTopic(bus.topics.evento('demanda.categorizada'), 1);
    const m = msgs.find((x) => x.headers?.[HEADER.id]?.toString() === e.event_id);
    expect(m?.key?.toString()).toBe(e.event_id);
    expect(m?.headers?.[HEADER.versaoSchema]?.toString()).toBe('1.0.0');
  });

  it('uses the given partition key instead of correlacao_id', async () => {
    const e = await bus.publicar({ ...categorizada(), chave_particao: 'demanda-42' });
    const msgs = await readTopic(bus.topics.evento('demanda.categorizada'), 2);
    const m = msgs.find((x) => x.headers?.[HEADER.id]?.toString() === e.event_id);
    expect(m?.key?.toString()).toBe('demanda-42');
    expect(m?.headers?.[HEADER.partitionKey]?.toString()).toBe('demanda-42');
  });

  it.each([
    ['T6 unknown type', { tipo: 'demanda.fantasma' }, 'UNKNOWN_TYPE'],
    ['T7 null payload', { payload: null }, 'PAYLOAD_NOT_OBJECT'],
    ['T8 string payload', { payload: 'texto' }, 'PAYLOAD_NOT_OBJECT'],
    ['T8 array payload', { payload: [1] }, 'PAYLOAD_NOT_OBJECT'],
    ['a deprecated type', { tipo: 'demanda.legada', payload: { demanda_id: randomUUID() } }, 'DEPRECATED_TYPE'],
    ['an origem the catalog does not allow for the type', { origem: 'D-4' }, 'ORIGEM_NOT_ALLOWED'],
    ['an unknown version', { versao_schema: '2.0.0' }, 'UNKNOWN_VERSION'],
    ['a malformed event_id', { event_id: 'abc' }, 'INVALID_EVENT_ID'],
    ['a malformed timestamp', { timestamp: '15/06/2026' }, 'INVALID_TIMESTAMP'],
    [
      'a schema-invalid payload',
      { payload: { ...SAMPLE_PAYLOADS['demanda.categorizada'], metodo: 'adivinhado' } },
      'SCHEMA_VALIDATION',
    ],
  ])('rejects %s with %s and produces nothing', async (_label, patch, code) => {
    const dto = { ...categorizada(), ...patch };
    const before = await topicMessageCount(bus.topics.evento(String(dto.tipo)));
    await expect(bus.publicar(dto as never)).rejects.toMatchObject({ code });
    expect(await topicMessageCount(bus.topics.evento(String(dto.tipo)))).toBe(before);
  });

  it('names the type, version and failing field of a schema-invalid payload', async () => {
    const err = (await bus
      .publicar(categorizada({ score_horizontal: 101 }))
      .catch((e: unknown) => e)) as SchemaValidationError;
    expect(err).toBeInstanceOf(SchemaValidationError);
    expect(err).toMatchObject({ phase: 'publish', tipo: 'demanda.categorizada', versao: '1.0.0' });
    expect(err.errors).toEqual([expect.objectContaining({ instancePath: '/score_horizontal', keyword: 'maximum' })]);
  });

  it('publicarLote produces nothing when one event is invalid, naming its index', async () => {
    const topic = bus.topics.evento('demanda.categorizada');
    const before = await topicMessageCount(topic);
    const err = (await bus
      .publicarLote([categorizada(), categorizada(), categorizada({ nivel_precedencia: 0 }), categorizada()])
      .catch((e: unknown) => e)) as PublishValidationError;
    expect(err).toMatchObject({ code: 'SCHEMA_VALIDATION', index: 2 });
    expect(await topicMessageCount(topic)).toBe(before);
  });

  it('publicarLote produces every event, in order within each partition', async () => {
    const correlacao_id = randomUUID();
    const dtos = Array.from({ length: 20 }, (_, i) => ({
      ...categorizada({ nivel_precedencia: (i % 5) + 1 }),
      correlacao_id,
    }));
    const out = await bus.publicarLote(dtos);
    expect(out).toHaveLength(20);
    const partitions = new Set(out.map((e) => e.posicao?.particao));
    expect(partitions.size).toBe(1); // one key, one partition
    const offsets = out.map((e) => BigInt(e.posicao?.offset ?? '-1'));
    expect(offsets).toEqual([...offsets].sort((a, b) => (a < b ? -1 : 1)));
    expect(offsets.at(-1)! - offsets[0]!).toBe(19n);
  });

  it('counts publishes by type, origin and result in Prometheus metrics', async () => {
    const text = await metrics.metrics();
    expect(text).toMatch(/feromonios_publish_total\{tipo="demanda.recebida",origem="D-1a",result="ok"\} [1-9]/);
    expect(text).toMatch(/feromonios_publish_total\{tipo="demanda.fantasma",origem="D-3",result="UNKNOWN_TYPE"\} 1/);
    // an origem the catalog does not allow is counted under the origem it claimed
    expect(text).toMatch(
      /feromonios_publish_total\{tipo="demanda.categorizada",origem="D-4",result="ORIGEM_NOT_ALLOWED"\} 1/,
    );
    expect(text).toContain('feromonios_publish_duration_seconds_bucket');
  });
});

describe('messages from other clients', () => {
  const { producer } = testKafka();

  it('reads back, as an event, a message a plain kafkajs producer wrote in the documented format', async () => {
    const bus = await createTestBus();
    const topic = bus.topics.evento('demanda.categorizada');
    await bus.publicar(categorizada()); // creates the topic
    const v = bus.catalog.versao('demanda.categorizada', '1.0.0')!;
    const { id } = (await bus.registry.lookup(`${topic}-value`, v.schemaText))!;
    const event_id = randomUUID();
    const payload = SAMPLE_PAYLOADS['demanda.categorizada'];
    const value = Buffer.concat([Buffer.from([0, 0, 0, 0, 0]), Buffer.from(JSON.stringify(payload))]);
    value.writeUInt32BE(id, 1);
    const p = await producer();
    await p.send({
      topic,
      acks: -1,
      messages: [
        {
          key: event_id,
          value,
          headers: {
            ce_specversion: '1.0',
            ce_id: event_id,
            ce_type: 'demanda.categorizada',
            ce_source: 'D-3',
            ce_time: '2026-06-15T10:30:10Z',
            'content-type': 'application/json',
          },
        },
      ],
    });
    const msgs = await readTopic(topic, 2);
    const raw = msgs.find((m) => m.headers?.ce_id?.toString() === event_id)!;
    const evento = await new EventDecoder(bus.registry, bus.catalog).decode(raw);
    expect(evento).toMatchObject({
      event_id,
      tipo: 'demanda.categorizada',
      versao_schema: '1.0.0',
      origem: 'D-3',
      correlacao_id: event_id,
      payload,
    });
  });

  it('writes values that @kafkajs/confluent-schema-registry decodes with a draft 2020-12 Ajv', async () => {
    const bus = await createTestBus();
    const e = await bus.publicar(categorizada());
    const [msg] = await readTopic(bus.topics.evento('demanda.categorizada'), 1);
    const decoded: unknown = await Ajv2020SchemaType.decode(msg!.value!);
    expect(decoded).toEqual(e.payload);
  });
});

describe('what publishing says, and stamps, when the colony gets something wrong', () => {
  it("stamps the Kafka record with the publish time; the event's own time (a backfill) stays in ce_time", async () => {
    const bus = await createTestBus();
    const before = Date.now();
    const evento = await bus.publicar({ ...categorizada(), timestamp: '2020-03-01T12:00:00.000Z' });
    const [msg] = await readTopic(bus.topics.evento('demanda.categorizada'), 1);
    expect(Number(msg?.timestamp)).toBeGreaterThanOrEqual(before - 1000);
    expect(Number(msg?.timestamp)).toBeLessThanOrEqual(Date.now() + 1000);
    expect(msg?.headers?.[HEADER.time]?.toString()).toBe('2020-03-01T12:00:00.000Z');
    expect(evento.timestamp).toBe('2020-03-01T12:00:00.000Z');
  });

  it('refuses an event dated two days ahead with a typed, non-retriable error instead of a broker refusal retried for ever', async () => {
    const bus = await createTestBus();
    const err = await bus
      .publicar({ ...categorizada(), timestamp: new Date(Date.now() + 2 * 86_400_000).toISOString() })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'INVALID_TIMESTAMP', retriable: false, step: 'timestamp' });
  });

  it('says the registry URL lacks the Confluent API path when it answers a bare 404 (Apicurio without /apis/ccompat/v7)', async () => {
    const base = new URL(serviceEnv().registryUrl).origin; // http://127.0.0.1:8081
    const bus = new EventBus({
      brokers: serviceEnv().brokers,
      registryUrl: base,
      namespace: randomNamespace(),
      logger: silentLogger,
    });
    try {
      for (const attempt of [() => bus.sincronizarSchemas(), () => bus.publicar(categorizada())]) {
        const err = await attempt().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ConfigError);
        expect((err as ConfigError).message).toContain(
          `registryUrl ${base} is not a Confluent-compatible schema registry API`,
        );
        expect((err as ConfigError).message).toContain('http://host:8081/apis/ccompat/v7 for Apicurio');
      }
    } finally {
      await bus.encerrar();
    }
  });

  it("does not print kafkajs's idempotent-producer retry warning at warn: it is expected, logged at debug with the reason", async () => {
    const lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> = [];
    const logger: Logger = {
      debug: (msg, fields) => void lines.push({ level: 'debug', msg, fields }),
      info: (msg, fields) => void lines.push({ level: 'info', msg, fields }),
      warn: (msg, fields) => void lines.push({ level: 'warn', msg, fields }),
      error: (msg, fields) => void lines.push({ level: 'error', msg, fields }),
    };
    const bus = await createTestBus({ logger });
    await bus.publicar(categorizada());
    const about = lines.filter((l) => l.msg.includes('Limiting retries for the idempotent producer'));
    expect(about.length).toBeGreaterThan(0); // kafkajs did say it…
    expect(about.every((l) => l.level === 'debug' && typeof l.fields?.expected === 'string')).toBe(true); // …not as a warning
  });
});

describe('a publish that failed, published again', () => {
  it('keeps its place in the session order (feromonios_ordem): the retry carries the counter of the failed attempt', async () => {
    const bus = await createTestBus({ publishTimeoutMs: 1_500 });
    const topic = bus.topics.evento('demanda.categorizada');
    // every record is refused by this topic until its max.message.bytes is raised
    const admin = await testKafka().admin();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic, numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'max.message.bytes', value: '64' }] },
      ],
    });
    const first = categorizada();
    const event_id = randomUUID();
    await expect(bus.publicar({ ...first, event_id })).rejects.toMatchObject({ code: 'BROKER_REJECTED' });
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        { type: 2 /* TOPIC */, name: topic, configEntries: [{ name: 'max.message.bytes', value: '1048588' }] },
      ],
    });
    // a topic config change reaches the partitions' leaders a moment later
    const later = await waitFor(() => bus.publicar(categorizada()), {
      timeoutMs: 10_000,
      intervalMs: 250,
      message: 'the topic takes records once max.message.bytes is raised',
    });
    await bus.publicar({ ...first, event_id }); // the same event again (the outbox relay's next pass)
    const order = (await readTopic(topic, 2)).map((m) => ({
      event_id: m.headers?.[HEADER.id]?.toString(),
      ordem: parseOrder(m.headers?.[ORDER_HEADER]?.toString()),
    }));
    const retried = order.find((o) => o.event_id === event_id)?.ordem;
    const next = order.find((o) => o.event_id === later.event_id)?.ordem;
    // both records carry a well-formed feromonios_ordem (parseOrder gives null otherwise)
    expect([typeof retried?.sessao, typeof next?.contador]).toEqual(['string', 'number']);
    expect(retried?.sessao).toBe(next?.sessao);
    // the failed attempt took its counter before `later` was planned; the retry kept it
    expect(retried?.contador).toBeLessThan(next?.contador as number);
  });
});

describe('natural batching and a record refused for good', () => {
  it('a call never fails for another call’s record: a request refused for good is sent again call by call', async () => {
    const bus = await createTestBus();
    const topic = bus.topics.evento('demanda.recebida');
    const admin = await testKafka().admin();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic,
          numPartitions: 1,
          replicationFactor: 1,
          configEntries: [{ name: 'max.message.bytes', value: '3000' }],
        },
      ],
    });
    const recebida = (texto: string) => ({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'], texto_bruto: texto },
    });
    await bus.publicar(recebida('primeiro')); // the topic known: the calls below queue behind each other
    // concurrent calls share requests (natural batching); one of them carries a record too large
    const calls = Array.from({ length: 40 }, (_, i) => recebida(i === 20 ? 'x'.repeat(8000) : `pequeno ${i}`));
    const outcomes = await Promise.allSettled(calls.map((c) => bus.publicar(c)));
    const refused = outcomes.flatMap((o, i) => (o.status === 'rejected' ? [i] : []));
    expect(refused).toEqual([20]);
    expect((outcomes[20] as PromiseRejectedResult).reason).toMatchObject({ code: 'BROKER_REJECTED' });
    // every accepted call is in the topic, in call order (one partition)
    const accepted = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value.event_id] : []));
    const inTopic = (await readTopic(topic, 1 + accepted.length)).map((m) => m.headers?.[HEADER.id]?.toString());
    const firstCopies = [...new Set(inTopic)].filter((id) => accepted.includes(id as string));
    expect(firstCopies).toEqual(accepted);
  });
});
