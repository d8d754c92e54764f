import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { FRAGMENT, scrubText, UNVERIFIABLE } from './error-text';
import { textProblem } from './storable';
import { keyedHash, redactPayload, type RedactionPolicy } from './redaction';

const opts = { key: 'k'.repeat(32), coordinateDecimals: 2 };

describe('redaction (allowlist)', () => {
  const policy: RedactionPolicy = {
    campos: {
      id: 'manter',
      texto: 'hash',
      cpf: 'remover',
      local: 'arredondar',
      lat: 'arredondar',
      endereco: { campos: { bairro: 'manter', rua: 'hash' } },
      anexos: { itens: 'hash' },
      tags: 'manter',
      objeto: 'manter',
    },
  };

  it('keeps allowed scalars, hashes texts, removes identifiers, rounds coordinates', () => {
    const out = redactPayload(
      {
        id: 'x1',
        texto: 'Falta água',
        cpf: '123.456.789-00',
        local: { lat: -23.55051, lng: -46.63331, precisao: 3 },
        lat: -23.55051,
      },
      policy,
      opts,
    );
    expect(out).toEqual({
      id: 'x1',
      texto: keyedHash(opts.key, 'Falta água'),
      local: { lat: -23.55, lng: -46.63 },
      lat: -23.55,
    });
  });

  it('drops every field without a rule, at every depth', () => {
    expect(
      redactPayload({ id: 'a', nome: 'Maria', endereco: { bairro: 'Centro', complemento: 'apto 3' } }, policy, opts),
    ).toEqual({ id: 'a', endereco: { bairro: 'Centro' } });
  });

  it('never keeps an object or an array of objects under `manter`', () => {
    expect(redactPayload({ objeto: { nome: 'Maria' }, tags: [{ nome: 'x' }] }, policy, opts)).toEqual({});
    expect(redactPayload({ tags: ['a', 'b'] }, policy, opts)).toEqual({ tags: ['a', 'b'] });
  });

  it('applies item rules to arrays and drops what cannot be rounded', () => {
    const out = redactPayload({ anexos: ['u1', 'u2'], local: 'Rua X' }, policy, opts);
    expect(out).toEqual({ anexos: [keyedHash(opts.key, 'u1'), keyedHash(opts.key, 'u2')] });
  });

  it('keys the hash: another key gives another hash, so a dictionary of texts cannot reverse it', () => {
    expect(keyedHash('a'.repeat(32), 'texto')).not.toBe(keyedHash('b'.repeat(32), 'texto'));
    expect(keyedHash('a'.repeat(32), 'texto')).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
  });

  it('refuses a value with no JSON (undefined, a function) with a TypeError naming its type', () => {
    expect(() => keyedHash('k'.repeat(32), undefined)).toThrow(/type undefined has no JSON/);
    expect(() => keyedHash('k'.repeat(32), () => 1)).toThrow(/type function has no JSON/);
  });

  it("property: the hash is HMAC-SHA256 of the value's JSON under the UTF-8 key, however many keys are in use (rows already in the log keep matching)", () => {
    // the key is made a KeyObject once per key: the hashes must be those of the key as text, keys
    // longer than SHA-256's 64-byte block (hashed first) and multi-byte characters included
    fc.assert(
      fc.property(
        fc.array(fc.string({ minLength: 1, maxLength: 80, unit: 'grapheme' }), { minLength: 1, maxLength: 20 }),
        fc.jsonValue(),
        (keys, value) => {
          for (const key of keys)
            expect(keyedHash(key, value)).toBe(
              `hmac-sha256:${createHmac('sha256', key).update(JSON.stringify(value)).digest('hex')}`,
            );
        },
      ),
    );
  });
});

describe('scrubbing free text (error messages, stacks, log lines)', () => {
  it('removes payload values, e-mails and long digit runs, keeps UUIDs', () => {
    const text = 'falhou para Maria Silva (maria@ex.com, 11 98765-4321) evento 3189de44-cf7f-420d-8e49-af41a64fa7bd';
    const out = scrubText(text, { nome: 'Maria Silva' });
    expect(out).not.toContain('Maria Silva');
    expect(out).not.toContain('maria@ex.com');
    expect(out).not.toContain('98765-4321');
    expect(out).toContain('3189de44-cf7f-420d-8e49-af41a64fa7bd');
  });

  const payload = {
    demanda_id: '3189de44-cf7f-420d-8e49-af41a64fa7bd',
    texto_bruto: 'Sou Maria Aparecida da Silva, moro na Rua das Acácias 45 e ele disse "socorro"\nsem água',
    localizacao_bruta: { lat: -23.55052, lng: -46.633308 },
    cidadao_id: 'u-77',
  };

  it.each([
    [
      'a name and a street quoted from inside a text',
      "endereço 'Rua das Acácias' não confere com maria aparecida",
      ['Acácias', 'aparecida'],
    ],
    [
      'the whole payload through JSON.stringify (quotes, newline, coordinates)',
      `falhou: ${JSON.stringify(payload)}`,
      ['Maria', 'Acácias', 'socorro', '23.55', '46.63'],
    ],
    ['a CPF glued to letters', 'documento CPF05824924325 inválido', ['05824924325']],
    [
      'a formatted CPF and a CNPJ in a sentence',
      'cpf=058.249.243-25;cnpj 12.345.678/0001-95',
      ['058.249', '243-25', '345.678', '0001-95'],
    ],
    [
      'an accented e-mail',
      'destinatário joão.conceição@prefeitura.sp.gov.br recusou',
      ['joão', 'conceição@', 'prefeitura.sp'],
    ],
    ['a phone number glued to text', 'ligar p/+55(11)98765-4321já', ['98765', '4321']],
    ['coordinates at several precisions', 'fora da área: -23.55,-46.63 / -23.550520 -46.6333', ['23.55', '46.63']],
  ])('%s', (_name, message, forbidden) => {
    const out = scrubText(message, payload);
    for (const f of forbidden) expect(out.toLowerCase()).not.toContain(f.toLowerCase());
    expect(out).toContain('[redigido]');
  });

  it('keeps what is not personal: UUIDs, short numbers, code words, error classes', () => {
    const msg =
      'TypeError: cannot read x of undefined at event 3189de44-cf7f-420d-8e49-af41a64fa7bd after 3 tries (500 ms)';
    expect(scrubText(msg, payload)).toBe(msg);
  });

  it('does not keep a text it cannot verify against a huge event', () => {
    expect(scrubText('ok', { t: 'x'.repeat(600 * 1024) })).toBe(UNVERIFIABLE);
  });

  it('property: no planted personal value, nor any 5-character fragment of it, survives, whatever surrounds it', () => {
    const planted = fc.oneof(
      fc.constantFrom('Maria Aparecida', 'Rua das Acácias, 45', 'José da Conceição', 'Travessa Ñandú 9'),
      fc.stringMatching(/^[A-Za-zÀ-ú ]{8,30}$/),
    );
    const around = fc.stringMatching(/^[g-zG-Z ]{0,10}$/); // no hex: nothing that can form a UUID
    fc.assert(
      fc.property(planted, fc.nat(), fc.nat(), around, around, fc.boolean(), (value, a, b, pre, post, escape) => {
        const start = a % Math.max(1, value.length - FRAGMENT);
        const len = FRAGMENT + (b % Math.max(1, value.length - start - FRAGMENT + 1));
        const fragment = value.slice(start, start + len);
        const quoted = escape ? JSON.stringify({ v: fragment }) : fragment;
        const out = scrubText(`${pre}${quoted}${post}`, { texto: value, outro: 'x' });
        return !out.toLowerCase().includes(fragment.toLowerCase()) && textProblem(out) === undefined;
      }),
      { numRuns: 3000 },
    );
  });

  it('property: CPFs, phones and e-mails are removed in any surrounding, and the text is always storable', () => {
    const cpf = fc.stringMatching(/^\d{3}\.?\d{3}\.?\d{3}-?\d{2}$/);
    const phone = fc.stringMatching(/^(\+55 ?)?\(?\d{2}\)? ?9?\d{4}-?\d{4}$/);
    const email = fc.emailAddress();
    const glue = fc.string({ unit: 'binary', maxLength: 6 });
    fc.assert(
      fc.property(fc.oneof(cpf, phone, email), glue, glue, (p, pre, post) => {
        const out = scrubText(`${pre}${p}${post}`);
        const digits = p.replace(/\D/g, '');
        return (
          textProblem(out) === undefined &&
          !out.includes(p) &&
          (p.includes('@') || !out.replace(/\D/g, '').includes(digits))
        );
      }),
      { numRuns: 3000 },
    );
  });
});
