import { mkdtempSync, cpSync, readFileSync, writeFileSync, rmSync, createReadStream, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { EventBus } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import {
  createTestDatabase,
  randomNamespace,
  serviceEnv,
  testKafka,
  waitFor,
  type TestDatabase,
} from '../test/harness';
import { operatorToken, startTestAuditApi, type TestAuditApi } from '../test/harness/audit';
import { startTestBridge } from '../test/harness/bridge';
import { coloniesWithDlq, type ColoniesWithDlq } from '../test/harness/dlq';
import { createTestBus } from '../test/harness/bus';
import { ROOT } from '../test/harness/spawn';
import { runFeromonios, type CliRun } from '../test/harness/cli';

/**
 * `feromonios` end to end: the real binary (cli/bin/feromonios.cjs) against the real audit API,
 * bridge, Kafka, registry and PostgreSQL. Each verb once, plus what the issue asks to measure.
 */
type Run = CliRun;

describe('feromonios CLI (real services)', () => {
  let db: TestDatabase;
  let bus: EventBus;
  let api: TestAuditApi;
  let token: string;
  let colonies: ColoniesWithDlq;

  const cli = (args: string[], o: { env?: Record<string, string>; sampleRss?: boolean } = {}): Promise<Run> =>
    runFeromonios(
      args,
      {
        FEROMONIOS_API_URL: api.url,
        FEROMONIOS_TOKEN: token,
        KAFKA_BROKERS: serviceEnv().brokers.join(','),
        SCHEMA_REGISTRY_URL: serviceEnv().registryUrl,
        FEROMONIOS_TOPIC_NAMESPACE: bus.topics.namespace,
        ...o.env,
      },
      { sampleRss: o.sampleRss },
    );

  const json = <T>(r: Run): T => {
    if (r.code !== 0) throw new Error(`exit ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout) as T;
  };

  const entry = async (eventId: string, colonia: string) =>
    (
      await db.pool.query<{ status: string; tentativas: number; reprocessamentos: number; motivo: string | null }>(
        'SELECT status, tentativas, reprocessamentos, motivo FROM core.dead_letter_queue WHERE event_id = $1 AND colonia = $2',
        [eventId, colonia],
      )
    ).rows[0];

  /** `feromonios_dlq_transitions_total` of the bus the audit API runs on. */
  const transitions = async (colonia: string, acao: string) =>
    (await bus.metrics.dlqTransitions.get()).values.find((v) => v.labels.colonia === colonia && v.labels.acao === acao)
      ?.value;

  const trailCount = async () =>
    Number((await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM core.dlq_reprocessamento')).rows[0]?.n);

  beforeAll(async () => {
    db = await createTestDatabase();
    bus = await createTestBus({ pool: db.pool });
    // the bridge's own failure-count guard out of the way: this file tests the reprocessor's round guard
    await startTestBridge(bus, db, { dlqMaxTentativas: 10 });
    colonies = await coloniesWithDlq(bus, db, ['C-1', 'C-3', 'C-4']);
    api = await startTestAuditApi(bus, db, { AUDIT_REPROCESS_INTERVAL_SECONDS: 0, AUDIT_REPROCESS_MAX_ROUNDS: 2 });
    token = await operatorToken();
  });

  it('every command answers --help with exit 0, and usage errors exit 2', async () => {
    const commands = [
      [],
      ['dlq'],
      ['dlq', 'stats'],
      ['dlq', 'list'],
      ['dlq', 'show'],
      ['dlq', 'reprocess'],
      ['dlq', 'park'],
      ['dlq', 'reopen'],
      ['dlq', 'history'],
      ['events', 'search'],
      ['events', 'get'],
      ['events', 'trace'],
      ['replay'],
      ['schemas', 'sync'],
      ['schemas', 'check'],
      ['schemas', 'diff'],
      ['topics', 'list'],
      ['topics', 'describe'],
      ['topics', 'remove-colony'],
    ];
    const runs = await Promise.all(commands.map((c) => cli([...c, '--help'])));
    runs.forEach((r, i) => {
      expect(`${commands[i]!.join(' ')} → ${r.code}`).toBe(`${commands[i]!.join(' ')} → 0`);
      expect(r.stdout).toContain('Usage: feromonios');
    });
    for (const [args, text] of [
      [['dlq', 'nope'], "unknown command 'nope'"],
      [['dlq', 'reprocess', 'C-1', '--rate', '0', '--yes'], 'must be a number from 0.1 to 10000'],
      [['dlq', 'reprocess', 'C-1', '--max', '10001', '--yes'], 'must be an integer from 1 to 10000'],
      [['replay', '--from-seq', '-1'], 'must be a sequence number'],
      [['dlq', 'park', 'C-1', '--ids', '1c9c2b4e-0000-4000-8000-000000000000'], "required option '--reason <code>'"],
    ] as const) {
      const r = await cli([...args]);
      expect(`${args.join(' ')} → ${r.code}`).toBe(`${args.join(' ')} → 2`);
      expect(r.stderr).toContain(text);
    }
    // a value the API refuses is a usage error too, with the API's reason
    const bad = await cli(['dlq', 'reprocess', 'C-1', '--fingerprint', 'XYZ', '--dry-run']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('fingerprint');
  });

  it('a missing or refused token exits 5; an unreachable API exits 1', async () => {
    const none = await cli(['dlq', 'stats'], { env: { FEROMONIOS_TOKEN: '' } });
    expect(none.code).toBe(5);
    expect(none.stderr).toContain('FEROMONIOS_TOKEN');
    const reader = await cli(['dlq', 'stats'], { env: { FEROMONIOS_TOKEN: await operatorToken({ papel: 'leitor' }) } });
    expect(reader.code).toBe(5);
    expect(reader.stderr).toContain('403');
    const down = await cli(['dlq', 'stats'], { env: { FEROMONIOS_API_URL: 'http://127.0.0.1:1' } });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot reach the audit API');
  });

  it('dlq stats, list and show: states, fingerprints, the redacted event and its actions', async () => {
    const sent = await colonies.publish('C-1', 3);
    const stats = json<{
      colonias: Array<{
        colonia: string;
        por_status: Record<string, number>;
        falhas: Array<{ erro_fingerprint: string; entradas: number }>;
      }>;
    }>(await cli(['--json', 'dlq', 'stats']));
    const c1 = stats.colonias.find((c) => c.colonia === 'C-1')!;
    expect(c1.por_status.pendente).toBe(3);
    expect(c1.falhas).toEqual([
      {
        erro_fingerprint: expect.stringMatching(/^[0-9a-f]{12}$/) as unknown,
        entradas: 3,
        handler_nome: 'priorizar',
        mensagem_erro: 'serviço de priorização fora do ar',
      },
    ]);
    const human = await cli(['dlq', 'stats']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/C-1\s+3\s+0\s+0\s+0/);
    expect(human.stdout).toContain(c1.falhas[0]!.erro_fingerprint);

    const list = json<{ linhas: Array<{ event_id: string; status: string; erro_fingerprint: string }>; total: number }>(
      await cli([
        '--json',
        'dlq',
        'list',
        'C-1',
        '--status',
        'pendente',
        '--fingerprint',
        c1.falhas[0]!.erro_fingerprint,
      ]),
    );
    expect(list.linhas.map((l) => l.event_id)).toEqual(sent.map((e) => e.event_id));
    const none = json<{ total: number }>(await cli(['--json', 'dlq', 'list', 'C-1', '--handler', 'outro']));
    expect(none.total).toBe(0);

    const show = await cli(['dlq', 'show', sent[0]!.event_id]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('demanda.recebida');
    expect(show.stdout).toMatch(/C-1\s+pendente/);
    const missing = await cli(['dlq', 'show', '1c9c2b4e-0000-4000-8000-000000000000']);
    expect(missing.code).toBe(4);
  });

  it('reprocess --dry-run says what would be sent and with which payload, changes nothing, and is audited', async () => {
    const before = json<{ linhas: Array<{ event_id: string; status: string }> }>(
      await cli(['--json', 'dlq', 'list', 'C-1']),
    );
    const trail = await trailCount();
    const plan = json<{
      reprocessariam: number;
      eventos: Array<{ event_id: string; payload: string }>;
      pedido_id: string;
    }>(await cli(['--json', 'dlq', 'reprocess', 'C-1', '--dry-run']));
    expect(plan.reprocessariam).toBe(3);
    expect(plan.eventos.map((e) => e.payload)).toEqual(['original', 'original', 'original']);
    const after = json<{ linhas: Array<{ event_id: string; status: string }> }>(
      await cli(['--json', 'dlq', 'list', 'C-1']),
    );
    expect(after.linhas).toEqual(before.linhas);
    expect(colonies.handled.filter((h) => h.reprocessado)).toHaveLength(0);
    expect(await trailCount()).toBe(trail + 1);
    const row = json<{
      acao: string;
      simulacao: boolean;
      solicitante: string;
      resultado: string;
      parametros: Record<string, unknown>;
    }>(
      await cli(['--json', 'dlq', 'history', 'C-1', '--limit', '1']).then((r) => ({
        ...r,
        stdout: JSON.stringify((JSON.parse(r.stdout) as { linhas: unknown[] }).linhas[0]),
      })),
    );
    expect(row).toMatchObject({
      acao: 'reprocessar',
      simulacao: true,
      solicitante: 'operador-42',
      resultado: 'concluido',
    });
    expect(row.parametros).toMatchObject({ max: 1000 });
  });

  it('a whole-colony reprocess (or park, or reopen) without --yes is refused with exit 3 and nothing is asked of the API', async () => {
    const trail = await trailCount();
    for (const args of [
      ['dlq', 'reprocess', 'C-1'],
      ['dlq', 'park', 'C-1', '--reason', 'colonia-retirada'],
      ['dlq', 'reopen', 'C-1'],
    ]) {
      const r = await cli(args);
      expect(`${args.join(' ')} → ${r.code}`).toBe(`${args.join(' ')} → 3`);
      expect(r.stderr).toContain('--yes');
    }
    expect(await trailCount()).toBe(trail);
  });

  it('reprocess --max and --rate: exactly max sent, paced at the rate (measured at the handler), progress on stderr', async () => {
    const sent = await colonies.publish('C-3', 12);
    colonies.failing.delete('C-3'); // the colony is fixed: what is sent back now succeeds
    colonies.handled.length = 0;
    const t0 = Date.now();
    const r = await cli(['--json', 'dlq', 'reprocess', 'C-3', '--yes', '--max', '10', '--rate', '5']);
    const row = json<{ resultado: string; reprocessados: number; eventos: Array<{ event_id: string }> }>(r);
    expect(row).toMatchObject({ resultado: 'concluido', reprocessados: 10 });
    expect(r.stderr).toContain('10 to send at 5/s');
    expect(r.stderr).toMatch(/reprocessing \[.*\] \d+\/10 sent/);
    // the oldest 10 by sequence were taken; 2 stay pending
    expect(row.eventos.map((e) => e.event_id)).toEqual(sent.slice(0, 10).map((e) => e.event_id));
    await waitFor(() => colonies.handled.filter((h) => h.colonia === 'C-3' && h.reprocessado).length === 10);
    const times = colonies.handled.filter((h) => h.colonia === 'C-3' && h.reprocessado).map((h) => h.at);
    const span = Math.max(...times) - Math.min(...times);
    // 10 events at 5/s: the 10th leaves 1.8 s after the 1st (unpaced, they arrive within ~100 ms)
    process.stderr.write(
      `[cli redrive] 10 entries at --rate 5: first to last delivery ${span} ms (paced ideal 1800 ms)\n`,
    );
    // (a delivery delayed by a loaded machine shortens or stretches the span; the margins keep
    // paced and unpaced apart without timing the machine)
    expect(span).toBeGreaterThanOrEqual(1400);
    expect(span).toBeLessThan(8000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1800);
    const left = json<{ total: number }>(await cli(['--json', 'dlq', 'list', 'C-3', '--status', 'pendente']));
    expect(left.total).toBe(2);
    await waitFor(async () => (await entry(sent[9]!.event_id, 'C-3'))?.status === 'resolved');
  });

  it('the loop guard: an entry sent back AUDIT_REPROCESS_MAX_ROUNDS times without success becomes failed_permanent with the reason', async () => {
    const [e] = await colonies.publish('C-4', 1);
    const id = e!.event_id;
    for (let round = 1; round <= 2; round++) {
      const r = json<{ reprocessados: number; guardados: number }>(
        await cli(['--json', 'dlq', 'reprocess', 'C-4', '--ids', id]),
      );
      expect(r).toMatchObject({ reprocessados: 1, guardados: 0 });
      // the colony fails it again: back to pendente, one more failure
      await waitFor(
        async () => {
          const now = await entry(id, 'C-4');
          return now?.tentativas === round + 1 && now.status === 'pendente';
        },
        {
          message: async () =>
            `round ${round}: entry ${JSON.stringify(await entry(id, 'C-4'))}, colonies.handled ${JSON.stringify(colonies.handled.filter((h) => h.event_id === id))}`,
        },
      );
    }
    const dry = json<{ reprocessariam: number; guardados_ids: string[] }>(
      await cli(['--json', 'dlq', 'reprocess', 'C-4', '--ids', id, '--dry-run']),
    );
    expect(dry).toMatchObject({ reprocessariam: 0, guardados_ids: [id] });
    const third = json<{ reprocessados: number; guardados: number }>(
      await cli(['--json', 'dlq', 'reprocess', 'C-4', '--ids', id]),
    );
    expect(third).toMatchObject({ reprocessados: 0, guardados: 1 });
    expect(await entry(id, 'C-4')).toMatchObject({
      status: 'failed_permanent',
      reprocessamentos: 2,
      motivo: 'loop guard: sent back 2 time(s) without success (limit 2)',
    });
    expect(colonies.handled.filter((h) => h.event_id === id && h.reprocessado)).toHaveLength(2);
    expect(await transitions('C-4', 'guarda')).toBe(1);
  });

  it('park with a reason code and a ticket, reopen with a fresh budget; free text as a reason is refused; every action in history', async () => {
    const list = json<{ linhas: Array<{ event_id: string }> }>(
      await cli(['--json', 'dlq', 'list', 'C-1', '--status', 'pendente']),
    );
    const [a, b] = list.linhas.map((l) => l.event_id);
    // the reason is a code and a ticket reference: free text (which could name a citizen) never gets in
    const trail = await trailCount();
    for (const [args, text] of [
      [['--reason', 'cidadã 123.456.789-09 reclamou'], 'Allowed choices are colonia-retirada'],
      [['--reason', 'outro', '--ref', 'Maria Aparecida'], 'must be a ticket reference like OPS-77'],
      [['--reason', 'outro', '--ref', 'maria@cidade.br'], 'must be a ticket reference like OPS-77'],
      [['--reason', 'outro'], "referencia is required when motivo is 'outro'"],
    ] as const) {
      const refused = await cli(['dlq', 'park', 'C-1', '--ids', a!, ...args]);
      expect(`${args.join(' ')} → ${refused.code}`).toBe(`${args.join(' ')} → 2`);
      expect(refused.stderr).toContain(text);
    }
    expect((await entry(a!, 'C-1'))?.status).toBe('pendente');
    expect(await trailCount()).toBe(trail);

    const park = ['dlq', 'park', 'C-1', '--ids', `${a},${b}`, '--reason', 'colonia-retirada', '--ref', 'OPS-77'];
    const dry = json<{ simulacao: boolean; event_ids: string[]; afetados: number }>(
      await cli(['--json', ...park, '--dry-run']),
    );
    expect(dry).toMatchObject({ simulacao: true, afetados: 0, event_ids: [a, b] });
    expect((await entry(a!, 'C-1'))?.status).toBe('pendente');

    const parked = await cli(park);
    expect(parked.code).toBe(0);
    expect(parked.stderr).toContain('parked 2');
    expect(await entry(a!, 'C-1')).toMatchObject({
      status: 'failed_permanent',
      motivo: 'parked: colonia-retirada (OPS-77)',
    });
    // a parked entry is not reprocessed
    const plan = json<{ eventos: Array<{ event_id: string }> }>(
      await cli(['--json', 'dlq', 'reprocess', 'C-1', '--dry-run']),
    );
    expect(plan.eventos.map((e) => e.event_id)).not.toContain(a);

    const reopened = json<{ afetados: number; event_ids: string[] }>(
      await cli(['--json', 'dlq', 'reopen', 'C-1', '--ids', a!]),
    );
    expect(reopened).toMatchObject({ afetados: 1, event_ids: [a] });
    expect(await entry(a!, 'C-1')).toMatchObject({
      status: 'pendente',
      motivo: null,
      reprocessamentos: 0,
      tentativas: 1,
    });
    expect(await transitions('C-1', 'estacionar')).toBe(2);
    expect(await transitions('C-1', 'reabrir')).toBe(1);

    const history = json<{
      linhas: Array<{ acao: string; simulacao: boolean; solicitante: string; afetados: number }>;
    }>(await cli(['--json', 'dlq', 'history', 'C-1', '--event-id', a!]));
    expect(history.linhas.map((l) => [l.acao, l.simulacao, l.afetados])).toEqual([
      ['reabrir', false, 1],
      ['estacionar', false, 2],
      ['estacionar', true, 0],
      ['reprocessar', true, 0],
    ]);
    expect(new Set(history.linhas.map((l) => l.solicitante))).toEqual(new Set(['operador-42']));
    const parkings = json<{ linhas: Array<{ acao: string }> }>(
      await cli(['--json', 'dlq', 'history', 'C-1', '--action', 'estacionar']),
    );
    expect(new Set(parkings.linhas.map((l) => l.acao))).toEqual(new Set(['estacionar']));
    const text = await cli(['dlq', 'history', 'C-1']);
    expect(text.stdout).toMatch(/estacionar\s+false\s+operador-42/);
  });

  it('events search, get and trace through the audit API', async () => {
    const root = await bus.publicar({
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'] },
    });
    const child = await bus.publicar(
      {
        tipo: 'demanda.normalizada',
        origem: 'D-1b',
        payload: { ...SAMPLE_PAYLOADS['demanda.normalizada'] },
        correlacao_id: root.correlacao_id ?? undefined,
        causation_id: root.event_id,
      },
      { confirmar: true },
    );
    const trace = await cli(['events', 'trace', root.correlacao_id as string]);
    expect(trace.code).toBe(0);
    const lines = trace.stdout.split('\n').filter((l) => l.includes('demanda.'));
    expect(lines[0]).toContain(`demanda.recebida (D-1a) ${root.event_id}`);
    expect(lines[1]).toContain(`  demanda.normalizada (D-1b) ${child.event_id}`);
    const got = json<{ event_id: string; redigido: boolean; payload: Record<string, unknown> }>(
      await cli(['--json', 'events', 'get', child.event_id]),
    );
    expect(got).toMatchObject({ event_id: child.event_id, redigido: true });
    const search = json<{ linhas: Array<{ event_id: string }> }>(
      await cli(['--json', 'events', 'search', '--correlacao', root.correlacao_id as string]),
    );
    expect(search.linhas.map((l) => l.event_id)).toEqual([root.event_id, child.event_id]);
    expect((await cli(['events', 'get', '1c9c2b4e-0000-4000-8000-000000000000'])).code).toBe(4);
    expect((await cli(['events', 'trace', '1c9c2b4e-0000-4000-8000-000000000000'])).code).toBe(4);
  });

  it('replay streams 100,000 events to an NDJSON file in sequence order, with a progress bar and flat memory', async () => {
    const { rows } = await db.pool.query<{ s: string }>(
      'SELECT coalesce(max(sequence_number), 0)::text AS s FROM core.event_log',
    );
    const from = rows[0]!.s;
    // 100,000 redacted rows straight into the log (the bridge is idle): ~60 MB of NDJSON
    await db.pool.query(
      `INSERT INTO core.event_log (event_id, tipo, versao_schema, timestamp, origem, correlacao_id, payload)
       SELECT gen_random_uuid(), 'demanda.recebida', '1.0.0', now(), 'C-9', gen_random_uuid(),
              jsonb_build_object('i', g, 'texto', repeat('h', 400))
         FROM generate_series(1, 100000) g`,
    );
    const dir = mkdtempSync(path.join(tmpdir(), 'feromonios-replay-'));
    try {
      const file = path.join(dir, 'replay.ndjson');
      const r = await cli(['replay', '--from-seq', from, '--tipo', 'demanda.recebida', '--ndjson', '--to', file], {
        sampleRss: true,
      });
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(/replay \[.*\] \d+\/100000 events/);
      expect(r.stderr).toContain('replayed 100000 events');
      let n = 0;
      let last = BigInt(from);
      for await (const line of createInterface({ input: createReadStream(file) })) {
        const e = JSON.parse(line) as { sequence_number: string; payload: { i: number } };
        expect(BigInt(e.sequence_number) > last).toBe(true);
        last = BigInt(e.sequence_number);
        n++;
      }
      expect(n).toBe(100_000);
      // memory flat: the file is ~60 MB; the CLI never holds more than a chunk of it
      expect(r.rss.length).toBeGreaterThan(10);
      const early = r.rss[Math.floor(r.rss.length * 0.2)]!;
      const peak = Math.max(...r.rss);
      const mb = (b: number) => (b / 1024 / 1024).toFixed(1);
      process.stderr.write(
        `[cli replay] 100000 events, ${mb(statSync(file).size)} MB NDJSON: CLI RSS at 20% ${mb(early)} MB, peak ${mb(peak)} MB (${r.rss.length} samples)\n`,
      );
      expect(peak - early).toBeLessThan(40 * 1024 * 1024);
      expect(peak).toBeLessThan(250 * 1024 * 1024);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('schemas sync, check and diff: a version the registry would refuse is reported field by field and exits 7; a compatible one exits 0', async () => {
    const ns = randomNamespace();
    const env = { FEROMONIOS_TOPIC_NAMESPACE: ns };
    expect((await cli(['schemas', 'sync'], { env })).code).toBe(0);
    const same = await cli(['schemas', 'diff'], { env });
    expect(same.code).toBe(0);
    expect(same.stderr).toContain('0 incompatible');
    expect((await cli(['schemas', 'check'], { env })).code).toBe(0);

    // two branches of one catalog: one registered 1.2.0 with `prioridade_sugerida` as a string,
    // this one adds it as an integer — compatible with its own 1.1.0, not with the registry's 1.2.0
    const branch = (type: string, dirName: string): string => {
      const dir = mkdtempSync(path.join(tmpdir(), dirName));
      cpSync(path.join(ROOT, 'schemas'), dir, { recursive: true });
      const latest = JSON.parse(readFileSync(path.join(dir, 'demanda.recebida/1.1.0.schema.json'), 'utf8')) as {
        properties: Record<string, unknown>;
      };
      const next = {
        ...latest,
        $id: 'urn:feromonios:demanda.recebida:1.2.0',
        title: 'demanda.recebida 1.2.0',
        properties: { ...latest.properties, prioridade_sugerida: { type } },
      };
      writeFileSync(path.join(dir, 'demanda.recebida/1.2.0.schema.json'), JSON.stringify(next, null, 2));
      const rules = path.join(dir, 'demanda.recebida/redaction.json');
      const redaction = JSON.parse(readFileSync(rules, 'utf8')) as { campos: Record<string, string> };
      writeFileSync(rules, JSON.stringify({ campos: { ...redaction.campos, prioridade_sugerida: 'manter' } }));
      return dir;
    };
    const other = branch('string', 'feromonios-schemas-a-');
    const mine = branch('integer', 'feromonios-schemas-b-');
    try {
      const ok = await cli(['schemas', 'diff', '--schemas', other], { env });
      expect(`${ok.code} ${ok.stderr}`).toMatch(/^0 /);
      expect(ok.stdout).toContain('COMPATIBLE  demanda.recebida@1.2.0');
      expect(ok.stdout).toMatch(/property-added\s+\/prioridade_sugerida/);
      expect((await cli(['schemas', 'sync', '--schemas', other], { env })).code).toBe(0);

      const bad = await cli(['schemas', 'diff', '--schemas', mine], { env });
      expect(`${bad.code} ${bad.stderr}`).toMatch(/^7 /);
      expect(bad.stdout).toContain('INCOMPATIBLE  demanda.recebida@1.2.0');
      expect(bad.stdout).toMatch(/type-changed\s+\/prioridade_sugerida\s+type "string" → "integer"/);
      const asJson = await cli(['--json', 'schemas', 'diff', '--schemas', mine], { env });
      expect(asJson.code).toBe(7);
      expect((JSON.parse(asJson.stdout) as { compatible: boolean }).compatible).toBe(false);
      expect((await cli(['schemas', 'check', '--schemas', mine], { env })).code).toBe(7);
    } finally {
      rmSync(other, { recursive: true, force: true });
      rmSync(mine, { recursive: true, force: true });
    }
  });

  it('topics list, describe and remove-colony (refused without --yes, and while the colony runs)', async () => {
    const list = json<Array<{ topic: string; kind: string; partitions: number }>>(
      await cli(['--json', 'topics', 'list']),
    );
    expect(list).toEqual(
      expect.arrayContaining([
        { topic: bus.topics.dlq('C-1'), kind: 'dlq', partitions: 3, replicas: 1 },
        { topic: bus.topics.evento('demanda.recebida'), kind: 'evento', partitions: 3, replicas: 1 },
      ]),
    );
    expect(list.every((t) => t.topic.startsWith(`${bus.topics.namespace}.`))).toBe(true);
    const described = await cli(['topics', 'describe', bus.topics.evento('demanda.recebida')]);
    expect(described.code).toBe(0);
    expect(described.stdout).toContain('retention.ms');
    expect(described.stdout).toMatch(/PARTITION\s+LEADER/);
    expect((await cli(['topics', 'describe', `${bus.topics.namespace}.nada`])).code).toBe(4);

    const { admin } = testKafka();
    const a = await admin();
    await a.createTopics({
      topics: [
        { topic: bus.topics.dlq('C-old'), numPartitions: 1 },
        { topic: bus.topics.reprocessar('C-old'), numPartitions: 1 },
      ],
      waitForLeaders: true,
    });
    const unconfirmed = await cli(['topics', 'remove-colony', 'C-old']);
    expect(unconfirmed.code).toBe(3);
    expect(await a.listTopics()).toContain(bus.topics.dlq('C-old'));
    const removed = json<{ topicosRemovidos: string[] }>(
      await cli(['--json', 'topics', 'remove-colony', 'C-old', '--yes']),
    );
    expect(removed.topicosRemovidos.sort()).toEqual([bus.topics.dlq('C-old'), bus.topics.reprocessar('C-old')].sort());
    const running = await cli(['topics', 'remove-colony', 'C-1', '--yes']);
    expect(running.code).not.toBe(0);
    expect(running.stderr).toContain('still consuming');
  });

  it('bash completion lists the commands and completes colony codes from the DLQ', async () => {
    const script = await cli(['completion']);
    expect(script.code).toBe(0);
    expect(script.stdout).toContain('complete -F _feromonios feromonios');
    expect(script.stdout).toContain('reprocess');
    const colonies = await cli(['__colonias']);
    expect(colonies.stdout.split('\n')).toEqual(expect.arrayContaining(['C-1', 'C-3', 'C-4']));
  });
});
