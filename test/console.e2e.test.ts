import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { MOTIVOS_ESTACIONAMENTO, type EventBus, type EventoConsultado } from '../sdk';
import { SAMPLE_PAYLOADS } from '../sdk/testing';
import { createTestDatabase, registerCleanup, waitFor, type TestDatabase } from './harness';
import { operatorToken, startTestAuditApi, type TestAuditApi } from './harness/audit';
import { dlqRow, startTestBridge } from './harness/bridge';
import { createTestBus } from './harness/bus';

/** Debian's package (`.ci/run` installs it); CHROMIUM_PATH points elsewhere. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Set to a directory to save a screenshot of each page there (docs/console.md's images). */
const SHOTS = process.env.FEROMONIOS_CONSOLE_SCREENSHOTS;

/**
 * The operators' console in a real headless Chromium against the real services: login, search,
 * an event, its flow, a failing colony's entry on the dashboard, dry run, reprocess, the entry
 * resolved and the action in the trail. Every request the page makes stays on the API's origin.
 */
describe('the operators console (headless Chromium, real services)', () => {
  let db: TestDatabase;
  let bus: EventBus;
  let api: TestAuditApi;
  let browser: Browser;
  let page: Page;
  let failing = true;
  const requests: string[] = [];
  let root: EventoConsultado;
  let child: EventoConsultado;

  const shot = async (name: string): Promise<void> => {
    if (!SHOTS) return;
    mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  };
  // browser-side code as strings: this file is compiled without the DOM library
  const q = (selector: string) => JSON.stringify(selector);
  const text = (selector: string) =>
    page.evaluate(`document.querySelector(${q(selector)})?.textContent ?? ''`) as Promise<string>;
  const texts = (selector: string) =>
    page.evaluate(`Array.from(document.querySelectorAll(${q(selector)}), (e) => e.textContent ?? '')`) as Promise<
      string[]
    >;
  const value = (selector: string) => page.evaluate(`document.querySelector(${q(selector)}).value`) as Promise<string>;
  const waitText = (selector: string, contains: string) =>
    page.waitForFunction(
      `(document.querySelector(${JSON.stringify(selector)})?.textContent ?? '').includes(${JSON.stringify(contains)})`,
      { timeout: 20_000 },
    );
  const go = async (hash: string) => {
    await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  };
  const cells = (selector: string) =>
    page.evaluate(
      `Array.from(document.querySelectorAll(${q(selector)}), (tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent))`,
    ) as Promise<Array<Array<string | null>>>;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM))
      throw new Error(`no Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
    db = await createTestDatabase();
    bus = await createTestBus({ pool: db.pool });
    await startTestBridge(bus, db);
    bus.inscrever(
      'demanda.recebida',
      'K-1',
      function priorizar() {
        if (failing) throw new Error('serviço de priorização fora do ar');
      },
      { tentativasExtras: 0 },
    );
    await bus.inscricoesProntas();
    api = await startTestAuditApi(bus, db, { AUDIT_REPROCESS_INTERVAL_SECONDS: 0 });
    root = await bus.publicar({
      event_id: randomUUID(),
      tipo: 'demanda.recebida',
      origem: 'D-1a',
      payload: { ...SAMPLE_PAYLOADS['demanda.recebida'], demanda_id: randomUUID() }, // this event only
    });
    child = await bus.publicar(
      {
        tipo: 'demanda.normalizada',
        origem: 'D-1b',
        payload: { ...SAMPLE_PAYLOADS['demanda.normalizada'] },
        correlacao_id: root.correlacao_id ?? undefined,
        causation_id: root.event_id,
      },
      { confirmar: true },
    );
    await waitFor(async () => (await dlqRow(db, root.event_id, 'K-1'))?.status === 'pendente');

    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    registerCleanup(() => browser.close());
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on('request', (r) => requests.push(r.url()));
  }, 120_000);

  it('without a token the page shows the login; a non-operator token is refused', async () => {
    await page.goto(`${api.url}/console/`, { waitUntil: 'networkidle0' });
    expect(await page.$('#token')).not.toBeNull();
    expect(await text('label[for=token]')).toContain('Token de operador');
    await shot('entrar');
    await page.type('#token', await operatorToken({ papel: 'leitor' }));
    await page.click('#login button[type=submit]');
    await waitText('#login-erro', 'Token recusado');
    expect(await text('#login-erro')).toContain('403');
    expect(await page.evaluate(`sessionStorage.getItem('feromonios.token')`)).toBeNull();
  });

  it('an operator enters, searches, opens an event and follows its flow', async () => {
    await page.evaluate(`document.querySelector('#token').value = ''`);
    await page.type('#token', await operatorToken());
    await page.click('#login button[type=submit]');
    await waitText('#total', 'evento(s)');
    // search by correlacao_id through the form
    await page.type('#campo-correlacao_id', root.correlacao_id as string);
    await page.click('form[role=search] button[type=submit]');
    await waitText('#total', '2 de 2 evento(s)');
    await shot('eventos');
    // by a payload key the audit team names (AUDIT_PAYLOAD_SEARCH_KEYS: demanda_id)
    await go('#/eventos');
    await page.waitForSelector('#campo-payload_valor');
    expect(await texts('#campo-payload_campo option')).toEqual(['demanda_id']);
    await page.type('#campo-payload_valor', (root.payload as { demanda_id: string }).demanda_id);
    await page.click('form[role=search] button[type=submit]');
    await waitText('#total', '1 de 1 evento(s)');
    expect(await text('main table')).toContain(root.event_id);
    await page.click(`a[href="#/evento/${root.event_id}"]`);
    await waitText('#atributos', root.event_id);
    expect(await text('#efeitos')).toContain(child.event_id);
    expect(await text('#atributos')).toMatch(
      new RegExp(`${bus.topics.evento('demanda.recebida')} · partição \\d · offset \\d+`),
    );
    expect(await text('#atributos')).toContain('PostgreSQL'); // where the row is (docs/archive.md)
    const payload = await text('#payload');
    expect(payload).toContain('demanda_id');
    expect(payload).not.toContain('cidadao_id'); // the redacted copy
    await shot('evento');
    await page.click(`a[href="#/fluxo/${root.correlacao_id}"]`);
    await waitText('#ordem-causal', child.event_id);
    const order = await texts('#ordem-causal li');
    expect(order[0]).toContain(root.event_id);
    expect(order[1]).toContain(child.event_id);
    expect(order[0]).toContain('DLQ K-1: pendente');
    expect(await texts('#linha-do-tempo .raia')).toHaveLength(2);
    await shot('fluxo');
  });

  it('the dashboard shows the failing colony; dry run, reprocess, the entry resolved and the action in the trail', async () => {
    await go('#/dlq');
    await waitText('main table', 'K-1');
    const row = await cells('main table:first-of-type tbody tr');
    expect(row.find((r) => r[0] === 'K-1')?.slice(1, 3)).toEqual(['1', '0']);
    expect(row.find((r) => r[0] === 'K-1')?.[5]).toMatch(/^há /);
    await shot('dlq');
    await page.click('a[href^="#/reprocessar?colonia=K-1&fingerprint="]');
    await page.waitForSelector('#simular');
    expect(await value('#campo-colonia')).toBe('K-1');
    await page.click('#simular');
    await waitText('#previa', 'Seriam reprocessadas 1');
    expect(await text('#previa')).toContain('1 com o payload original');
    expect(await text('#resultado table')).toContain(root.event_id);
    expect((await dlqRow(db, root.event_id, 'K-1'))?.status).toBe('pendente'); // the dry run changed nothing
    // the reason codes come from the API (the SDK's list), not from a copy in the page
    expect(await texts('#motivo option')).toEqual([...MOTIVOS_ESTACIONAMENTO]);
    await shot('reprocessar');
    // every control of the page has a label (screen readers, keyboard users)
    expect(
      await page.evaluate(
        `Array.from(document.querySelectorAll('main input, main select, main textarea')).filter((c) => c.labels.length === 0).map((c) => c.id)`,
      ),
    ).toEqual([]);
    failing = false;
    await page.click('#confirmar');
    await waitText('#progresso', 'concluido');
    await waitFor(async () => (await dlqRow(db, root.event_id, 'K-1'))?.status === 'resolved');
    await go(`#/dlq/evento/${root.event_id}`);
    await waitText('main table', 'resolved');
    const history = await cells('main table:last-of-type tbody tr');
    expect(history.map((r) => [r[1], r[2], r[3], r[5]])).toEqual([
      ['reprocessar', 'não', 'operador-42', 'concluido'],
      ['reprocessar', 'sim', 'operador-42', 'concluido'],
    ]);
    await go('#/acoes?colonia=K-1');
    await waitText('main', 'reprocessar');
    await shot('acoes');
  });

  it('every request stayed on the API origin, the token never in a URL, nothing in localStorage', async () => {
    expect(requests.length).toBeGreaterThan(10);
    const foreign = requests.filter((u) => !u.startsWith(`${api.url}/`));
    expect(foreign).toEqual([]);
    expect(requests.filter((u) => u.includes('eyJ'))).toEqual([]); // a JWT starts with eyJ
    expect(await page.evaluate('localStorage.length')).toBe(0);
    const res = await fetch(`${api.url}/console/`);
    expect(res.headers.get('content-security-policy')).toContain("connect-src 'self'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
  });
});
