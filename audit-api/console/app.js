// @ts-check
/**
 * The operators' console (docs/console.md, ADR 0011): plain ES modules, no build, no
 * dependency. Everything it shows comes from the audit API's own routes on this origin, with the
 * operator token kept in sessionStorage (this tab only) and sent as a header — never in a URL.
 * Every value is rendered as text (no innerHTML): an event cannot inject markup.
 */

const TOKEN_KEY = 'feromonios.token';
const main = /** @type {HTMLElement} */ (document.getElementById('conteudo'));
const menu = /** @type {HTMLElement} */ (document.getElementById('menu'));
const aviso = /** @type {HTMLElement} */ (document.getElementById('aviso'));

/** @typedef {Record<string, any>} Json */

class ApiError extends Error {
  /** @param {number} status @param {string} message */
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/**
 * An element: attributes (`on*` become listeners), children as nodes or text.
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...any} children
 * @returns {HTMLElement}
 */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = String(v);
    else if (k === 'style')
      Object.assign(el.style, v); // CSSOM: allowed by the CSP, unlike a style attribute
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const token = () => sessionStorage.getItem(TOKEN_KEY);

/**
 * A call to the audit API with the token; a 401 ends the session (back to the login).
 * @param {string} path
 * @param {{ method?: string, body?: unknown }} [o]
 * @returns {Promise<any>}
 */
async function api(path, o = {}) {
  const res = await fetch(path, {
    method: o.method ?? 'GET',
    headers: {
      authorization: `Bearer ${token() ?? ''}`,
      accept: 'application/json',
      ...(o.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
    credentials: 'omit',
    cache: 'no-store',
  });
  if (res.ok) return res.json();
  let detail = res.statusText;
  try {
    const p = await res.json();
    detail = p.detail ?? p.title ?? detail;
  } catch {
    // not a problem document
  }
  if (res.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    location.hash = '#/entrar';
  }
  throw new ApiError(res.status, `${res.status}: ${detail}`);
}

/** @param {string} text @param {'ok'|'erro'} [kind] */
function notify(text, kind = 'ok') {
  aviso.replaceChildren(h('span', { class: kind }, text));
}

const qs = (/** @type {Record<string, any>} */ q) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
};

const link = (/** @type {string} */ href, /** @type {any} */ text) => h('a', { href }, text);
const eventLink = (/** @type {string} */ id) => link(`#/evento/${id}`, h('code', {}, id));
const flowLink = (/** @type {string|null} */ id) => (id ? link(`#/fluxo/${id}`, h('code', {}, id)) : '-');
const when = (/** @type {string|null} */ iso) => (iso ? new Date(iso).toLocaleString('pt-BR') : '-');

/** @param {string} iso */
function age(iso) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

/**
 * A table; `rows` are arrays of cells (nodes or text).
 * @param {string} caption @param {string[]} headers @param {any[][]} rows
 */
function table(caption, headers, rows) {
  return h(
    'table',
    {},
    h('caption', { class: 'pular-visual' }, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((t) => h('th', { scope: 'col' }, t)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.length === 0
        ? h('tr', {}, h('td', { colspan: headers.length }, 'Nenhum resultado.'))
        : rows.map((r) =>
            h(
              'tr',
              {},
              r.map((c) => h('td', typeof c === 'number' ? { class: 'num' } : {}, c)),
            ),
          ),
    ),
  );
}

/**
 * A labelled input.
 * @param {string} name @param {string} label @param {Record<string, any>} [attrs]
 */
function field(name, label, attrs = {}) {
  return h('label', {}, label, h('input', { name, id: `campo-${name}`, ...attrs }));
}

/** @param {HTMLFormElement} form */
const formValues = (form) =>
  Object.fromEntries([...new FormData(form).entries()].filter(([, v]) => v !== '').map(([k, v]) => [k, String(v)]));

// ---------------------------------------------------------------- pages

/** The payload keys a search may use, asked once. @type {{ payload: string[] } | undefined} */
let campos;
/** The parking reason codes, asked once. @type {string[] | undefined} */
let motivos;

const PAGES = [
  ['eventos', 'Eventos'],
  ['dlq', 'DLQ'],
  ['reprocessar', 'Reprocessar'],
  ['acoes', 'Trilha de ações'],
];

function login(/** @type {string} */ message = '') {
  menu.replaceChildren();
  const input = h('input', {
    id: 'token',
    name: 'token',
    type: 'password',
    autocomplete: 'off',
    required: true,
    'aria-describedby': 'token-ajuda',
  });
  const erro = h('p', { id: 'login-erro', class: 'erro', role: 'alert' }, message);
  const form = h(
    'form',
    {
      id: 'login',
      onsubmit: async (/** @type {SubmitEvent} */ e) => {
        e.preventDefault();
        sessionStorage.setItem(TOKEN_KEY, /** @type {HTMLInputElement} */ (input).value.trim());
        try {
          await api('/api/events?limite=1');
          location.hash = '#/eventos';
          route();
        } catch (err) {
          sessionStorage.removeItem(TOKEN_KEY);
          erro.textContent = `Token recusado — ${/** @type {Error} */ (err).message}`;
        }
      },
    },
    h('label', { for: 'token' }, 'Token de operador (JWT)'),
    input,
    h('p', { id: 'token-ajuda' }, 'Fica só nesta aba do navegador e nunca vai na URL.'),
    h('button', { type: 'submit' }, 'Entrar'),
    erro,
  );
  main.replaceChildren(h('h1', {}, 'Entrar'), form);
  input.focus();
}

/** @param {URLSearchParams} q */
async function eventos(q) {
  const filters = Object.fromEntries(q.entries());
  campos ??= await api('/api/events/campos-pesquisaveis');
  const form = h(
    'form',
    {
      class: 'filtros',
      role: 'search',
      onsubmit: (/** @type {SubmitEvent} */ e) => {
        e.preventDefault();
        const { payload_campo, payload_valor, ...v } = formValues(/** @type {HTMLFormElement} */ (e.target));
        // a payload key search: the keys the API allows (AUDIT_PAYLOAD_SEARCH_KEYS)
        const payload = payload_valor ? { payload_campo, payload_valor } : {};
        location.hash = `#/eventos${qs({ ...v, ...payload })}`;
      },
    },
    field('tipo', 'Tipo', { value: filters.tipo ?? '' }),
    field('origem', 'Origem (colônia)', { value: filters.origem ?? '' }),
    field('correlacao_id', 'correlacao_id', { value: filters.correlacao_id ?? '' }),
    field('tenant_id', 'tenant_id', { value: filters.tenant_id ?? '' }),
    field('timestamp_inicio', 'Desde (ISO-8601)', { value: filters.timestamp_inicio ?? '' }),
    field('timestamp_fim', 'Até (ISO-8601)', { value: filters.timestamp_fim ?? '' }),
    field('sequence_inicio', 'Sequência desde', { value: filters.sequence_inicio ?? '', inputmode: 'numeric' }),
    field('sequence_fim', 'Sequência até', { value: filters.sequence_fim ?? '', inputmode: 'numeric' }),
    h(
      'label',
      {},
      'Campo do payload',
      h(
        'select',
        { name: 'payload_campo', id: 'campo-payload_campo' },
        campos.payload.map((/** @type {string} */ k) =>
          h('option', { value: k, selected: k === filters.payload_campo }, k),
        ),
      ),
    ),
    field('payload_valor', 'Valor no payload', { value: filters.payload_valor ?? '' }),
    field('limite', 'Por página', { value: filters.limite ?? '50', inputmode: 'numeric' }),
    h('button', { type: 'submit' }, 'Buscar'),
  );
  main.replaceChildren(h('h1', {}, 'Eventos'), form, h('p', {}, 'Carregando…'));
  const r = await api(`/api/events${qs({ limite: 50, ...filters })}`);
  const rows = r.linhas.map((/** @type {Json} */ e) => [
    e.sequence_number,
    when(e.timestamp),
    e.tipo,
    e.origem,
    eventLink(e.event_id),
    flowLink(e.correlacao_id),
  ]);
  // keyset paging: the API's cursor is the next page's apos_sequence
  const next = r.proximo_cursor ? { ...filters, apos_sequence: r.proximo_cursor } : undefined;
  main.replaceChildren(
    h('h1', {}, 'Eventos'),
    form,
    h('p', { id: 'total' }, `${r.linhas.length} de ${r.total_exato === false ? '~' : ''}${r.total} evento(s)`),
    table('Eventos', ['Sequência', 'Publicado', 'Tipo', 'Origem', 'event_id', 'Fluxo'], rows),
    h(
      'div',
      { class: 'paginas' },
      filters.apos_sequence
        ? link(`#/eventos${qs({ ...filters, apos_sequence: undefined })}`, 'Primeira página')
        : null,
      next ? link(`#/eventos${qs(next)}`, 'Próxima página') : null,
    ),
  );
}

/** @param {string} id */
async function evento(id) {
  const e = await api(`/api/events/${encodeURIComponent(id)}`);
  const [trace, dlq] = await Promise.all([
    e.correlacao_id ? api(`/api/events/trace/${e.correlacao_id}`) : { linhas: [] },
    api(`/api/events/dlq/entradas/${encodeURIComponent(id)}`).catch((err) => {
      if (err instanceof ApiError && err.status === 404) return { entradas: [] };
      throw err;
    }),
  ]);
  const effects = trace.linhas.filter((/** @type {Json} */ x) => x.causation_id === id);
  main.replaceChildren(
    h('h1', {}, `Evento ${e.tipo}`),
    h(
      'dl',
      { class: 'campos', id: 'atributos' },
      [
        ['event_id (ce_id)', h('code', {}, e.event_id)],
        ['tipo (ce_type)', e.tipo],
        ['origem (ce_source)', e.origem],
        ['timestamp (ce_time)', e.timestamp],
        ['specversion', '1.0'],
        ['versao_schema', e.versao_schema],
        ['sequence_number', e.sequence_number],
        [
          'posição no Kafka',
          e.posicao_kafka
            ? `${e.posicao_kafka.topic} · partição ${e.posicao_kafka.partition} · offset ${e.posicao_kafka.offset}`
            : '-',
        ],
        ['gravado no log', e.criado_em],
        ['armazenamento', e.arquivado ? 'arquivo frio (Parquet, mês arquivado)' : 'PostgreSQL'],
        ['correlacao_id', flowLink(e.correlacao_id)],
        ['causa (causation_id)', e.causation_id ? eventLink(e.causation_id) : '-'],
        ['tenant_id', e.tenant_id ?? '-'],
      ].map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]),
    ),
    h('h2', {}, 'Efeitos'),
    effects.length
      ? h(
          'ul',
          { id: 'efeitos' },
          effects.map((/** @type {Json} */ x) => h('li', {}, `${x.tipo} `, eventLink(x.event_id))),
        )
      : h('p', {}, 'Nenhum efeito registrado.'),
    h('h2', {}, 'Payload (cópia redigida)'),
    h('pre', { id: 'payload' }, JSON.stringify(e.payload, null, 2)),
    h('h2', {}, 'Entregas na DLQ'),
    table(
      'Entregas na DLQ',
      ['Colônia', 'Estado', 'Tentativas', 'Erro'],
      dlq.entradas.map((/** @type {Json} */ d) => [
        link(`#/dlq/evento/${d.event_id}`, d.colonia),
        d.status,
        d.tentativas,
        d.mensagem_erro,
      ]),
    ),
  );
}

/** @param {string} id */
async function fluxo(id) {
  const [trace, dlq] = await Promise.all([
    api(`/api/events/trace/${encodeURIComponent(id)}`),
    api(`/api/events/trace/${encodeURIComponent(id)}/dlq`),
  ]);
  /** @type {Json[]} */
  const events = trace.linhas;
  const dlqBy = new Map();
  for (const d of dlq.entradas) dlqBy.set(d.event_id, [...(dlqBy.get(d.event_id) ?? []), d]);
  const times = events.flatMap((e) => [Date.parse(e.timestamp), Date.parse(e.criado_em)]);
  const t0 = Math.min(...times);
  const span = Math.max(1, Math.max(...times) - t0);
  const pos = (/** @type {string} */ iso) => `${4 + ((Date.parse(iso) - t0) / span) * 88}%`;
  const lanes = [...new Set(events.map((e) => e.origem))];
  const depth = new Map();
  for (const e of events) depth.set(e.event_id, e.causation_id ? (depth.get(e.causation_id) ?? 0) + 1 : 0);
  main.replaceChildren(
    h('h1', {}, 'Fluxo'),
    h(
      'p',
      {},
      'correlacao_id ',
      h('code', {}, id),
      ` — ${events.length} evento(s) em ordem causal; a marca é a publicação, a barra vai até a gravação no log.`,
    ),
    h(
      'div',
      { class: 'linha-do-tempo', id: 'linha-do-tempo', role: 'list', 'aria-label': 'Linha do tempo por colônia' },
      lanes.map((lane) =>
        h(
          'div',
          { class: 'raia', role: 'listitem' },
          h('strong', {}, lane),
          h(
            'div',
            { class: 'trilho' },
            events
              .filter((e) => e.origem === lane)
              .flatMap((e) => [
                h('span', {
                  class: 'logado',
                  style: { left: pos(e.timestamp), width: `calc(${pos(e.criado_em)} - ${pos(e.timestamp)})` },
                }),
                h(
                  'span',
                  { class: `marca${dlqBy.has(e.event_id) ? ' com-dlq' : ''}`, style: { left: pos(e.timestamp) } },
                  link(`#/evento/${e.event_id}`, `${e.tipo}${dlqBy.has(e.event_id) ? ' ⚠' : ''}`),
                ),
              ]),
          ),
        ),
      ),
    ),
    h('h2', {}, 'Em ordem causal'),
    h(
      'ol',
      { id: 'ordem-causal' },
      events.map((e) =>
        h(
          'li',
          { style: { marginLeft: `${(depth.get(e.event_id) ?? 0) * 1.5}rem` } },
          `#${e.sequence_number} ${e.tipo} (${e.origem}) `,
          eventLink(e.event_id),
          (dlqBy.get(e.event_id) ?? []).map((/** @type {Json} */ d) =>
            h(
              'span',
              {},
              ' ',
              link(`#/dlq/evento/${e.event_id}`, h('span', { class: 'selo dlq' }, `DLQ ${d.colonia}: ${d.status}`)),
            ),
          ),
        ),
      ),
    ),
  );
}

async function dlq() {
  const r = await api('/api/events/dlq/resumo');
  main.replaceChildren(
    h('h1', {}, 'DLQ'),
    h('p', {}, `${r.total_abertas} entrada(s) abertas (pendente + retrying).`),
    table(
      'Entradas por colônia',
      ['Colônia', 'Pendente', 'Retrying', 'Failed permanent', 'Resolved', 'Pendente mais antiga'],
      r.colonias.map((/** @type {Json} */ c) => [
        link(`#/dlq/colonia/${encodeURIComponent(c.colonia)}`, c.colonia),
        c.por_status.pendente,
        c.por_status.retrying,
        c.por_status.failed_permanent,
        c.por_status.resolved,
        c.pendente_mais_antigo ? `há ${age(c.pendente_mais_antigo)}` : '-',
      ]),
    ),
    h('h2', {}, 'Falhas abertas por impressão digital'),
    table(
      'Falhas por impressão digital',
      ['Colônia', 'Impressão digital', 'Manipulador', 'Erro', 'Entradas', ''],
      r.colonias.flatMap((/** @type {Json} */ c) =>
        c.falhas.map((/** @type {Json} */ f) => [
          c.colonia,
          h('code', {}, f.erro_fingerprint),
          f.handler_nome ?? '-',
          f.mensagem_erro,
          f.entradas,
          link(`#/reprocessar${qs({ colonia: c.colonia, fingerprint: f.erro_fingerprint })}`, 'Reprocessar…'),
        ]),
      ),
    ),
  );
}

/** @param {string} colonia @param {URLSearchParams} q */
async function dlqColonia(colonia, q) {
  const status = q.get('status') ?? '';
  const r = await api(`/api/events/dlq/entradas${qs({ colonia, status, limite: 200 })}`);
  const select = h(
    'select',
    {
      id: 'filtro-estado',
      name: 'status',
      onchange: (/** @type {Event} */ e) =>
        (location.hash = `#/dlq/colonia/${encodeURIComponent(colonia)}${qs({ status: /** @type {HTMLSelectElement} */ (e.target).value })}`),
    },
    ['', 'pendente', 'retrying', 'resolved', 'failed_permanent'].map((s) =>
      h('option', { value: s, selected: s === status }, s || 'todos'),
    ),
  );
  main.replaceChildren(
    h('h1', {}, `DLQ de ${colonia}`),
    h('label', { for: 'filtro-estado' }, 'Estado'),
    select,
    h('p', {}, `${r.linhas.length} de ${r.total}`),
    table(
      `Entradas de ${colonia}`,
      [
        'event_id',
        'Estado',
        'Tentativas',
        'Rodadas',
        'Impressão digital',
        'Última falha',
        'Manipulador',
        'Erro',
        'Motivo',
      ],
      r.linhas.map((/** @type {Json} */ e) => [
        link(`#/dlq/evento/${e.event_id}`, h('code', {}, e.event_id)),
        e.status,
        e.tentativas,
        e.reprocessamentos,
        h('code', {}, e.erro_fingerprint),
        when(e.ultima_tentativa),
        e.handler_nome ?? '-',
        e.mensagem_erro,
        e.motivo ?? '-',
      ]),
    ),
    h('p', {}, link(`#/reprocessar${qs({ colonia })}`, `Reprocessar, estacionar ou reabrir entradas de ${colonia}…`)),
  );
}

/** @param {string} id */
async function dlqEvento(id) {
  const r = await api(`/api/events/dlq/entradas/${encodeURIComponent(id)}`);
  main.replaceChildren(
    h('h1', {}, 'Entrada da DLQ'),
    h(
      'p',
      {},
      'Evento ',
      eventLink(id),
      r.evento ? ` — ${r.evento.tipo} de ${r.evento.origem}, sequência ${r.evento.sequence_number}` : '',
    ),
    table(
      'Entregas que falharam',
      ['Colônia', 'Estado', 'Tentativas', 'Rodadas', 'Manipulador', 'Erro (sem dados pessoais)', 'Motivo'],
      r.entradas.map((/** @type {Json} */ e) => [
        e.colonia,
        e.status,
        e.tentativas,
        e.reprocessamentos,
        e.handler_nome ?? '-',
        e.mensagem_erro,
        e.motivo ?? '-',
      ]),
    ),
    h('h2', {}, 'Histórico'),
    trailTable(r.acoes),
  );
}

/** @param {Json[]} linhas */
function trailTable(linhas) {
  return table(
    'Ações',
    ['Quando', 'Ação', 'Simulação', 'Quem', 'Colônia', 'Resultado', 'Enviados', 'Alterados', 'Pedido', 'Detalhe'],
    linhas.map((a) => [
      when(a.solicitado_em),
      a.acao,
      a.simulacao ? 'sim' : 'não',
      a.solicitante,
      a.colonia,
      a.resultado,
      a.reprocessados,
      a.afetados,
      h('code', {}, JSON.stringify(a.parametros)),
      a.detalhe ?? '-',
    ]),
  );
}

/** @param {URLSearchParams} q */
async function reprocessar(q) {
  // the reason codes the API takes (MOTIVOS_ESTACIONAMENTO in the SDK), asked once
  motivos ??= (await api('/api/events/dlq/motivos')).motivos;
  const v = Object.fromEntries(q.entries());
  const form = /** @type {HTMLFormElement} */ (
    h(
      'form',
      { class: 'filtros', id: 'selecao', onsubmit: (/** @type {Event} */ e) => e.preventDefault() },
      field('colonia', 'Colônia', { value: v.colonia ?? '', required: true }),
      field('manipulador', 'Manipulador', { value: v.manipulador ?? '' }),
      field('fingerprint', 'Impressão digital', { value: v.fingerprint ?? '' }),
      h(
        'label',
        {},
        'event_ids (um por linha)',
        h('textarea', { name: 'event_ids', id: 'campo-event_ids', rows: 2 }, v.event_ids ?? ''),
      ),
      field('falhou_desde', 'Falhou desde (ISO-8601)', { value: v.falhou_desde ?? '' }),
      field('falhou_ate', 'Falhou até (ISO-8601)', { value: v.falhou_ate ?? '' }),
      field('max', 'Máximo de entradas', { value: v.max ?? '', inputmode: 'numeric' }),
      field('taxa', 'Taxa (eventos/s)', { value: v.taxa ?? '', inputmode: 'decimal' }),
    )
  );
  const resultado = h('section', { id: 'resultado', 'aria-live': 'polite' });
  const confirm = /** @type {HTMLButtonElement} */ (
    h('button', { type: 'button', id: 'confirmar', disabled: true }, 'Confirmar reprocessamento')
  );
  const wholeColony = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', id: 'colonia-inteira' }));
  let previewed = '';

  /** The selection as the API takes it, or an error message. */
  const selection = () => {
    const f = formValues(form);
    /** @type {Json} */
    const body = { colonia: f.colonia };
    if (f.manipulador) body.manipulador = f.manipulador;
    if (f.fingerprint) body.fingerprint = f.fingerprint;
    if (f.event_ids) body.event_ids = f.event_ids.split(/[\s,]+/).filter(Boolean);
    if (f.falhou_desde) body.falhou_desde = f.falhou_desde;
    if (f.falhou_ate) body.falhou_ate = f.falhou_ate;
    if (f.max) body.max = Number(f.max);
    return { body, taxa: f.taxa ? Number(f.taxa) : undefined };
  };
  const narrows = (/** @type {Json} */ b) =>
    ['manipulador', 'fingerprint', 'event_ids', 'falhou_desde', 'falhou_ate'].some((k) => k in b);
  form.addEventListener('input', () => {
    confirm.disabled = true; // a changed selection needs a new preview
  });

  const simular = async () => {
    const { body, taxa } = selection();
    const plan = await api('/api/events/dlq/reprocessamentos', {
      method: 'POST',
      body: { ...body, ...(taxa ? { taxa } : {}), dry_run: true },
    });
    previewed = JSON.stringify({ body, taxa });
    resultado.replaceChildren(
      h('h2', {}, 'Prévia (nada mudou)'),
      h(
        'p',
        { id: 'previa' },
        `Seriam reprocessadas ${plan.reprocessariam} entrada(s): ${plan.originais} com o payload original, ${plan.redigidos} com a cópia redigida; ${plan.guardados} seriam estacionadas pela proteção contra laços; ${plan.restantes} ficariam pendentes.`,
      ),
      table(
        'Entradas da prévia',
        ['event_id', 'Payload'],
        plan.eventos.map((/** @type {Json} */ e) => [
          eventLink(e.event_id),
          e.payload === 'original' ? 'original (completo, do tópico DLQ)' : 'cópia redigida do log',
        ]),
      ),
    );
    confirm.disabled = plan.reprocessariam === 0;
  };

  const confirmar = async () => {
    const { body, taxa } = selection();
    if (JSON.stringify({ body, taxa }) !== previewed) return notify('A seleção mudou: simule de novo.', 'erro');
    if (!narrows(body) && !wholeColony.checked) return notify('Para a colônia inteira, marque a confirmação.', 'erro');
    confirm.disabled = true;
    const claim = await api('/api/events/dlq/reprocessamentos', {
      method: 'POST',
      body: { ...body, ...(taxa ? { taxa } : {}) },
    });
    const progress = h('p', { id: 'progresso' }, `Pedido ${claim.pedido_id}: 0 de ${claim.selecionados} enviadas…`);
    resultado.replaceChildren(h('h2', {}, 'Reprocessamento'), progress);
    for (;;) {
      const row = await api(`/api/events/dlq/reprocessamentos/${claim.pedido_id}`);
      progress.textContent = `Pedido ${claim.pedido_id}: ${row.reprocessados} de ${claim.selecionados} enviadas — ${row.resultado}`;
      if (row.resultado !== 'em_andamento') {
        progress.className = row.resultado === 'concluido' ? 'ok' : 'erro';
        break;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  };

  const motivo = h(
    'select',
    { id: 'motivo', name: 'motivo' },
    (motivos ?? []).map((m) => h('option', { value: m }, m)),
  );
  const referencia = h('input', { id: 'referencia', name: 'referencia', placeholder: 'OPS-77' });
  const transition = async (/** @type {'estacionar'|'reabrir'} */ acao, /** @type {boolean} */ dry) => {
    const { body } = selection();
    if (!dry && !narrows(body) && !wholeColony.checked)
      return notify('Para a colônia inteira, marque a confirmação.', 'erro');
    const extra =
      acao === 'estacionar'
        ? {
            motivo: /** @type {HTMLSelectElement} */ (motivo).value,
            .../** @type {HTMLInputElement} */ (
              referencia.value ? { referencia: /** @type {HTMLInputElement} */ (referencia).value } : {}
            ),
          }
        : {};
    const r = await api(`/api/events/dlq/${acao}`, {
      method: 'POST',
      body: { ...body, ...extra, ...(dry ? { dry_run: true } : {}) },
    });
    const verbo = acao === 'estacionar' ? 'estacionadas' : 'reabertas';
    resultado.replaceChildren(
      h('h2', {}, acao === 'estacionar' ? 'Estacionar' : 'Reabrir'),
      h(
        'p',
        { id: 'transicao' },
        r.simulacao
          ? `Seriam ${verbo} ${r.event_ids.length} entrada(s) (nada mudou).`
          : `${r.afetados} entrada(s) ${verbo}.`,
      ),
      h(
        'ul',
        {},
        r.event_ids.map((/** @type {string} */ id) => h('li', {}, eventLink(id))),
      ),
    );
  };
  const guarded = (/** @type {() => Promise<unknown>} */ fn) => () => fn().catch((err) => notify(err.message, 'erro'));
  confirm.addEventListener('click', guarded(confirmar));

  main.replaceChildren(
    h('h1', {}, 'Reprocessar'),
    h(
      'p',
      {},
      'Escolha as entradas de uma colônia. Nada muda antes de confirmar; toda ação fica na trilha, simulações também.',
    ),
    form,
    h('label', { class: 'linha' }, wholeColony, 'Confirmo a ação na colônia inteira (sem outro filtro)'),
    h(
      'div',
      { class: 'acoes' },
      h('button', { type: 'button', id: 'simular', onclick: guarded(simular) }, 'Simular'),
      confirm,
    ),
    h(
      'fieldset',
      {},
      h('legend', {}, 'Estacionar (failed_permanent) ou reabrir'),
      h(
        'div',
        { class: 'acoes' },
        h('label', { for: 'motivo' }, 'Motivo', motivo),
        h('label', { for: 'referencia' }, 'Chamado', referencia),
      ),
      h(
        'div',
        { class: 'acoes' },
        h(
          'button',
          {
            type: 'button',
            class: 'secundario',
            id: 'estacionar-simular',
            onclick: guarded(() => transition('estacionar', true)),
          },
          'Simular estacionar',
        ),
        h(
          'button',
          { type: 'button', id: 'estacionar', onclick: guarded(() => transition('estacionar', false)) },
          'Estacionar',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'secundario',
            id: 'reabrir-simular',
            onclick: guarded(() => transition('reabrir', true)),
          },
          'Simular reabrir',
        ),
        h('button', { type: 'button', id: 'reabrir', onclick: guarded(() => transition('reabrir', false)) }, 'Reabrir'),
      ),
    ),
    resultado,
  );
}

/** @param {URLSearchParams} q */
async function acoes(q) {
  const filters = Object.fromEntries(q.entries());
  const r = await api(`/api/events/dlq/reprocessamentos${qs({ limite: 100, ...filters })}`);
  main.replaceChildren(
    h('h1', {}, 'Trilha de ações'),
    h(
      'form',
      {
        class: 'filtros',
        onsubmit: (/** @type {SubmitEvent} */ e) => {
          e.preventDefault();
          location.hash = `#/acoes${qs(formValues(/** @type {HTMLFormElement} */ (e.target)))}`;
        },
      },
      field('colonia', 'Colônia', { value: filters.colonia ?? '' }),
      h(
        'label',
        {},
        'Ação',
        h(
          'select',
          { name: 'acao', id: 'campo-acao' },
          ['', 'reprocessar', 'estacionar', 'reabrir'].map((a) =>
            h('option', { value: a, selected: a === (filters.acao ?? '') }, a || 'todas'),
          ),
        ),
      ),
      field('event_id', 'event_id', { value: filters.event_id ?? '' }),
      h('button', { type: 'submit' }, 'Filtrar'),
    ),
    h('p', {}, `${r.linhas.length} de ${r.total}`),
    trailTable(r.linhas),
  );
}

// ---------------------------------------------------------------- routing

async function route() {
  const [path, query = ''] = location.hash.replace(/^#/, '').split('?');
  const parts = (path ?? '').split('/').filter(Boolean).map(decodeURIComponent);
  const q = new URLSearchParams(query);
  if (!token() || parts[0] === 'entrar') return login();
  if (parts[0] === 'sair') {
    sessionStorage.removeItem(TOKEN_KEY);
    location.hash = '#/entrar';
    return;
  }
  const current = parts[0] ?? 'eventos';
  menu.replaceChildren(
    ...PAGES.map(([p, label]) =>
      h(
        'a',
        {
          href: `#/${p}`,
          'aria-current':
            current === p || (current === 'evento' && p === 'eventos') || (current === 'fluxo' && p === 'eventos')
              ? 'page'
              : undefined,
        },
        label,
      ),
    ),
    h('a', { href: '#/sair' }, 'Sair'),
  );
  aviso.replaceChildren();
  try {
    if (current === 'eventos') await eventos(q);
    else if (current === 'evento' && parts[1]) await evento(parts[1]);
    else if (current === 'fluxo' && parts[1]) await fluxo(parts[1]);
    else if (current === 'dlq' && parts[1] === 'colonia' && parts[2]) await dlqColonia(parts[2], q);
    else if (current === 'dlq' && parts[1] === 'evento' && parts[2]) await dlqEvento(parts[2]);
    else if (current === 'dlq') await dlq();
    else if (current === 'reprocessar') await reprocessar(q);
    else if (current === 'acoes') await acoes(q);
    else main.replaceChildren(h('h1', {}, 'Página não encontrada'), link('#/eventos', 'Voltar aos eventos'));
  } catch (err) {
    if (err instanceof ApiError && err.status === 401)
      return login('Sessão expirada ou token inválido: entre de novo.');
    main.replaceChildren(
      h('h1', {}, 'Erro'),
      h('p', { class: 'erro', role: 'alert' }, /** @type {Error} */ (err).message),
    );
  }
  main.focus();
}

window.addEventListener('hashchange', () => void route());
void route();
