import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { jsonLogger } from '../sdk';
import { createTestDatabase, waitFor } from './harness';
import { dlqRow, startTestBridge } from './harness/bridge';
import { createTestBus } from './harness/bus';

/**
 * The LGPD promise as a property (issue #12): personal values planted in every string field of
 * an event and inside handlers' error texts — as fragments, through `JSON.stringify(payload)`,
 * glued to letters, accented — reach no column of any table of any schema, and no log line of
 * the SDK or the bridge.
 */
describe('no personal data reaches PostgreSQL or the logs', () => {
  const name = fc.constantFrom(
    'Maria Aparecida Conceição',
    'José Raimundo Nonato',
    'Ana Beatriz Gonçalves',
    'Francisco Júnior Araújo',
    'Luíza Helena Brandão',
  );
  const street = fc.constantFrom(
    'Rua das Acácias',
    'Avenida Brigadeiro Faria Lima',
    'Travessa São Benedito',
    'Alameda dos Anjos',
  );
  const digits = (n: number) => fc.stringMatching(new RegExp(`^[1-9]\\d{${n - 1}}$`));
  const cpf = fc
    .tuple(digits(3), digits(3), digits(3), digits(2), fc.boolean())
    .map(([a, b, c, d, fmt]) => (fmt ? `${a}.${b}.${c}-${d}` : `${a}${b}${c}${d}`));
  const email = fc
    .tuple(
      fc.constantFrom('joão.silva', 'maría_josé', 'conceição', 'ana.luíza'),
      fc.constantFrom('cidade.br', 'prefeitura.sp.gov.br'),
    )
    .map(([l, d]) => `${l}@${d}`);
  const phone = fc.tuple(digits(2), digits(5), digits(4)).map(([a, b, c]) => `(${a}) 9${b.slice(1)}-${c}`);
  // six significant decimals, the last not 0, so the planted value never equals its rounded copy
  const micro = fc.integer({ min: 100_001, max: 999_999 }).filter((n) => n % 10 !== 0);
  const coordinate = fc.tuple(micro, micro);
  const errorMode = fc.constantFrom('fragmento', 'json', 'colado', 'acentuado', 'telefone', 'coordenadas');
  const plantedCase = fc.record({ name, street, cpf, email, phone, coordinate, errorMode });

  it('property: planted values in fields and error texts are in no table and no log line', async () => {
    const seed = Date.now();
    const cases = fc.sample(plantedCase, { numRuns: 18, seed });
    const logs: string[] = [];
    const logger = (component: string) => jsonLogger(component, 'debug', (l) => logs.push(l));
    const db = await createTestDatabase();
    const bus = await createTestBus({ pool: db.pool, logger: logger('sdk') });
    await startTestBridge(bus, db, { logger: logger('bridge') });

    const byEvent = new Map<string, (typeof cases)[number]>();
    bus.inscrever(
      'demanda.recebida',
      'D-20',
      function triar(evento) {
        const c = byEvent.get(evento.event_id);
        if (!c) return;
        const p = evento.payload as { texto_bruto: string; localizacao_bruta: { lat: number; lng: number } };
        const fragment = p.texto_bruto.slice(4, 4 + 12);
        switch (c.errorMode) {
          case 'fragmento':
            throw new Error(`endereço "${c.street.slice(0, 11)}" inválido para ${fragment}`);
          case 'json':
            throw new Error(`falhou ao triar: ${JSON.stringify(evento.payload)}`);
          case 'colado':
            throw new Error(`documento CPF${c.cpf.replace(/\D/g, '')}inválido`);
          case 'acentuado':
            throw new Error(`destinatário ${c.email} recusou`);
          case 'telefone':
            throw new Error(`ligar p/${c.phone}já`);
          case 'coordenadas':
            throw new TypeError(`fora da área: ${p.localizacao_bruta.lat},${p.localizacao_bruta.lng}`);
        }
      },
      { tentativasExtras: 0 },
    );
    await bus.inscricoesProntas();

    const events: string[] = [];
    for (const c of cases) {
      const lat = -(c.coordinate[0] / 1e6 + 23);
      const lng = -(c.coordinate[1] / 1e6 + 46);
      const event_id = randomUUID();
      byEvent.set(event_id, c);
      await bus.publicar({
        event_id,
        tipo: 'demanda.recebida',
        origem: 'D-1a',
        payload: {
          demanda_id: randomUUID(),
          texto_bruto: `Sou ${c.name}, moro na ${c.street} 45 "fundos"\nCPF ${c.cpf}, e-mail ${c.email}, tel ${c.phone}`,
          localizacao_bruta: { lat, lng },
          cidadao_id: c.email,
          canal: 'whatsapp',
        },
      });
      events.push(event_id);
    }
    await waitFor(
      async () => (await Promise.all(events.map((e) => dlqRow(db, e, 'D-20')))).every((r) => r?.status === 'pendente'),
      { timeoutMs: 60_000, message: `every failure recorded (seed ${seed})` },
    );
    // the audit trail too: a reprocessing request writes its row
    await bus.reprocessarPendentesDLQ('D-20', { solicitante: 'operador-pii' });

    // every column of every table of every schema, as text
    const { rows: tables } = await db.pool.query<{ s: string; t: string }>(
      `SELECT table_schema AS s, table_name AS t FROM information_schema.tables
        WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`,
    );
    expect(tables.map((t) => `${t.s}.${t.t}`)).toEqual(
      expect.arrayContaining(['core.event_log', 'core.dead_letter_queue', 'core.dlq_reprocessamento']),
    );
    let dump = '';
    for (const { s, t } of tables) {
      const { rows } = await db.pool.query<{ r: string }>(`SELECT x::text AS r FROM "${s}"."${t}" x`);
      dump += rows.map((r) => r.r).join('\n') + '\n';
    }
    expect(dump).toContain('D-20'); // the dump really holds the DLQ rows
    const haystacks = { tables: dump.toLowerCase(), logs: logs.join('\n').toLowerCase() };

    const forms = (c: (typeof cases)[number]): string[] => {
      const words = [...c.name.split(' '), ...c.street.split(' ')].filter((w) => w.length >= 5);
      const lat = String(-(c.coordinate[0] / 1e6 + 23));
      return [
        c.name,
        c.street,
        ...words,
        c.cpf,
        c.cpf.replace(/\D/g, ''),
        c.email,
        c.email.split('@')[0] as string,
        c.phone,
        c.phone.replace(/\D/g, ''),
        lat,
        lat.slice(0, 8), // four decimals (about 11 m): more than the policy's rounding keeps
      ].map((f) => f.toLowerCase());
    };
    const found: string[] = [];
    for (const c of cases)
      for (const f of forms(c))
        for (const [where, text] of Object.entries(haystacks))
          if (text.includes(f) || text.includes(JSON.stringify(f).slice(1, -1))) found.push(`${where}: ${f}`);
    expect({ seed, found: [...new Set(found)] }).toEqual({ seed, found: [] });
  }, 120_000);
});
