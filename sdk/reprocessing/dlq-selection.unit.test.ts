import fc from 'fast-check';
import { FeromoniosError } from '../errors';
import { scrubText, REDACTED } from '../wire/error-text';
import {
  condicaoSelecao,
  HANDLER_SELECTOR_RE,
  MOTIVOS_ESTACIONAMENTO,
  motivoEstacionamento,
  REFERENCIA_RE,
  selecaoInteira,
  validarSelecao,
  type SelecaoDLQ,
} from './dlq-selection';

const ID = '1c9c2b4e-0000-4000-8000-000000000000';

/** The value, or what was thrown: lets a property say what it expects of both without branching `expect`. */
function attempt<T>(fn: () => T): { ok: true; value: T } | { ok: false; error: unknown } {
  try {
    return { ok: true, value: fn() };
  } catch (error) {
    return { ok: false, error };
  }
}

describe('DLQ selection: what an operator action takes', () => {
  it('refuses each bad field with BAD_REQUEST naming it', () => {
    const cases: Array<[unknown, string]> = [
      [{ colonia: 'a.b' }, 'colonia'],
      [{ colonia: 'D-5', manipulador: 'maria@cidade.br' }, 'manipulador'],
      [{ colonia: 'D-5', manipulador: 'handler 12345678' }, 'manipulador'],
      [{ colonia: 'D-5', manipulador: '' }, 'manipulador'],
      [{ colonia: 'D-5', event_ids: [] }, 'event_ids'],
      [{ colonia: 'D-5', event_ids: [ID, 'nope'] }, 'event_ids[1]'],
      [{ colonia: 'D-5', event_ids: Array.from({ length: 1001 }, () => ID) }, 'event_ids'],
      [{ colonia: 'D-5', fingerprint: 'ABCDEF012345' }, 'fingerprint'],
      [{ colonia: 'D-5', falhou_desde: 'ontem' }, 'falhou_desde'],
      [{ colonia: 'D-5', falhou_desde: '2026-12-02T00:00:00Z', falhou_ate: '2026-12-01T00:00:00Z' }, 'falhou_desde'],
    ];
    for (const [sel, field] of cases) {
      let err: unknown;
      try {
        validarSelecao(sel as SelecaoDLQ);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(FeromoniosError);
      expect((err as FeromoniosError).code).toBe('BAD_REQUEST');
      expect((err as FeromoniosError).message.startsWith(field)).toBe(true);
    }
  });

  it('keeps only the known fields, ids lower-cased and deduplicated; whole-colony is no narrowing at all', () => {
    const sel = validarSelecao({
      colonia: 'D-5',
      event_ids: [ID.toUpperCase(), ID],
      extra: 'DROP TABLE',
    } as SelecaoDLQ & { extra: string });
    expect(sel).toEqual({ colonia: 'D-5', event_ids: [ID] });
    expect(selecaoInteira(sel)).toBe(false);
    expect(selecaoInteira(validarSelecao({ colonia: 'D-5' }))).toBe(true);
  });

  it('property: a handler selector never holds an e-mail, whitespace or a run of 7 digits', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ maxLength: 10 }), (a, b) => {
        for (const planted of [`${a}@${b}`, `${a} ${b}`, `${a}1234567${b}`, `${a}\n${b}`])
          expect(HANDLER_SELECTOR_RE.test(planted)).toBe(false);
      }),
    );
  });

  it('property: the SQL holds placeholders only — every value travels as a parameter', () => {
    const selection = fc.record(
      {
        colonia: fc.stringMatching(/^[A-Za-z][A-Za-z0-9_-]{0,20}$/),
        manipulador: fc.stringMatching(/^[a-zA-Z_$][\w$#.,:-]{0,30}$/),
        event_ids: fc.uniqueArray(fc.uuid(), { minLength: 1, maxLength: 5 }),
        fingerprint: fc.stringMatching(/^[0-9a-f]{12}$/),
        falhou_desde: fc.constant('2026-01-01T00:00:00Z'),
        falhou_ate: fc.constant('2026-12-31T00:00:00Z'),
      },
      { requiredKeys: ['colonia'] },
    );
    fc.assert(
      fc.property(selection, (raw) => {
        const r = attempt(() => validarSelecao(raw));
        // only typed refusals (e.g. 7 digits in a colony code)
        if (!r.ok) return r.error instanceof FeromoniosError && r.error.code === 'BAD_REQUEST';
        const sel = r.value;
        const params: unknown[] = ['already there'];
        const sql = condicaoSelecao(sel, params);
        const placeholders = [...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]));
        expect(placeholders).toEqual(Array.from({ length: params.length - 1 }, (_, i) => i + 2));
        // the text is made of fixed fragments only; the values are the parameters, in order
        expect(sql.replace(/\$\d+/g, '$')).toMatch(
          /^d\.colonia = \$( AND (d\.handler_nome = \$|d\.event_id = ANY\(\$::uuid\[\]\)|d\.erro_fingerprint = \$|d\.ultima_tentativa >= \$::timestamptz|d\.ultima_tentativa <= \$::timestamptz))*$/,
        );
        expect(params.slice(1)).toEqual(Object.values(sel));
        return true;
      }),
    );
  });
});

describe('parking reason: a code and a ticket reference, never free text', () => {
  it('stores the code and the reference; refuses anything else with BAD_REQUEST', () => {
    expect(motivoEstacionamento('colonia-retirada')).toBe('parked: colonia-retirada');
    expect(motivoEstacionamento('outro', 'OPS-77')).toBe('parked: outro (OPS-77)');
    expect(() => motivoEstacionamento('outro')).toThrow("referencia is required when motivo is 'outro'");
    expect(() => motivoEstacionamento('a citizen complained')).toThrow('motivo must be one of');
    expect(() => motivoEstacionamento(undefined)).toThrow('motivo must be one of');
    expect(() => motivoEstacionamento('duplicado', 'ops-77')).toThrow('referencia must be a ticket reference');
  });

  it('property: whatever an operator types, what is stored is a known code plus a ticket-shaped reference with no personal data', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.constantFrom(...MOTIVOS_ESTACIONAMENTO), fc.string()),
        fc.option(fc.oneof(fc.string(), fc.stringMatching(REFERENCIA_RE)), { nil: undefined }),
        (motivo, referencia) => {
          const r = attempt(() => motivoEstacionamento(motivo, referencia));
          if (!r.ok) return r.error instanceof FeromoniosError && r.error.code === 'BAD_REQUEST';
          return (
            /^parked: [a-z-]+( \([A-Z]{2,10}-[0-9]{1,6}\))?$/.test(r.value) && !scrubText(r.value).includes(REDACTED)
          );
        },
      ),
    );
  });
});
