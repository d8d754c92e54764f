import { keyedHash, redactPayload, scrubText, type RedactionPolicy } from './redaction';

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
});

describe('scrubbing free text', () => {
  it('removes payload values, e-mails and long digit runs, keeps UUIDs', () => {
    const text = 'falhou para Maria Silva (maria@ex.com, 11 98765-4321) evento 3189de44-cf7f-420d-8e49-af41a64fa7bd';
    const out = scrubText(text, { nome: 'Maria Silva' });
    expect(out).not.toContain('Maria Silva');
    expect(out).not.toContain('maria@ex.com');
    expect(out).not.toContain('98765-4321');
    expect(out).toContain('3189de44-cf7f-420d-8e49-af41a64fa7bd');
  });
});
