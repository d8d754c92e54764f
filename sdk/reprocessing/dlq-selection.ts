import { FeromoniosError } from '../errors';
import { colonyCodeProblem, isUuid, timestampProblem } from '../wire/storable';

/**
 * Which entries of one colony's DLQ an operator action takes (docs/reprocessing.md). Every
 * criterion given must hold; none but `colonia` means the whole colony.
 */
export interface SelecaoDLQ {
  colonia: string;
  /** The handler that failed (`handler_nome`), exactly. */
  manipulador?: string;
  /** These events only (1 … {@link MAX_IDS_SELECAO}). */
  event_ids?: string[];
  /** Entries failing the same way: `erro_fingerprint` (12 hex digits, shown by every listing). */
  fingerprint?: string;
  /** Last failure at or after this instant (ISO-8601 with a time zone), inclusive. */
  falhou_desde?: string;
  /** Last failure at or before this instant, inclusive. */
  falhou_ate?: string;
}

export const MAX_IDS_SELECAO = 1000;
/** Most entries one action takes (`maxEventos` above it is refused). */
export const MAX_EVENTOS_ACAO = 10_000;

/**
 * A handler name as a selector: what the SDK names handlers (function names, `anônimo#N`, a
 * comma-joined list), and never something that could be personal data (it is stored in the
 * audit trail's `parametros`): at most 6 digits, no spaces, no `@`.
 */
export const HANDLER_SELECTOR_RE = /^(?!(?:[^0-9]*[0-9]){7})[\p{L}\p{N}_$#.,:-]{1,255}$/u;
export const FINGERPRINT_RE = /^[0-9a-f]{12}$/;

/** The selection checked field by field; throws `BAD_REQUEST` naming the first field that is wrong. */
export function validarSelecao(s: SelecaoDLQ): SelecaoDLQ {
  const bad = (field: string, problem: string): never => {
    throw new FeromoniosError('BAD_REQUEST', `${field} ${problem}`);
  };
  if (typeof s !== 'object' || s === null) bad('selection', 'must be an object');
  const colonia = colonyCodeProblem(s.colonia);
  if (colonia) bad('colonia', colonia);
  if (s.manipulador !== undefined && (typeof s.manipulador !== 'string' || !HANDLER_SELECTOR_RE.test(s.manipulador)))
    bad('manipulador', 'must be a handler name: 1-255 letters, digits or _$#.,:- (at most 6 digits)');
  if (s.event_ids !== undefined) {
    if (!Array.isArray(s.event_ids) || s.event_ids.length === 0 || s.event_ids.length > MAX_IDS_SELECAO)
      bad('event_ids', `must be a list of 1 to ${MAX_IDS_SELECAO} UUIDs`);
    const wrong = s.event_ids.findIndex((id) => !isUuid(id));
    if (wrong >= 0) bad(`event_ids[${wrong}]`, 'must be a UUID');
  }
  if (s.fingerprint !== undefined && (typeof s.fingerprint !== 'string' || !FINGERPRINT_RE.test(s.fingerprint)))
    bad('fingerprint', 'must be 12 lowercase hex digits (the erro_fingerprint of an entry)');
  for (const f of ['falhou_desde', 'falhou_ate'] as const) {
    if (s[f] === undefined) continue;
    const problem = timestampProblem(s[f]);
    if (problem) bad(f, problem);
  }
  if (s.falhou_desde && s.falhou_ate && Date.parse(s.falhou_desde) > Date.parse(s.falhou_ate))
    bad('falhou_desde', 'must not be after falhou_ate');
  // only the known fields travel on (to SQL and to the audit trail's `parametros`)
  return {
    colonia: s.colonia,
    ...(s.manipulador !== undefined ? { manipulador: s.manipulador } : {}),
    ...(s.event_ids !== undefined ? { event_ids: [...new Set(s.event_ids.map((id) => id.toLowerCase()))] } : {}),
    ...(s.fingerprint !== undefined ? { fingerprint: s.fingerprint } : {}),
    ...(s.falhou_desde !== undefined ? { falhou_desde: s.falhou_desde } : {}),
    ...(s.falhou_ate !== undefined ? { falhou_ate: s.falhou_ate } : {}),
  };
}

/** True when the selection narrows nothing: the whole colony (the CLI asks for `--yes`). */
export const selecaoInteira = (s: SelecaoDLQ): boolean =>
  s.manipulador === undefined &&
  s.event_ids === undefined &&
  s.fingerprint === undefined &&
  s.falhou_desde === undefined &&
  s.falhou_ate === undefined;

/**
 * The SQL condition on `core.dead_letter_queue d` for a validated selection; its values are
 * appended to `params` (never interpolated).
 */
export function condicaoSelecao(s: SelecaoDLQ, params: unknown[]): string {
  const p = (v: unknown): string => `$${params.push(v)}`;
  const parts = [`d.colonia = ${p(s.colonia)}`];
  if (s.manipulador !== undefined) parts.push(`d.handler_nome = ${p(s.manipulador)}`);
  if (s.event_ids !== undefined) parts.push(`d.event_id = ANY(${p(s.event_ids)}::uuid[])`);
  if (s.fingerprint !== undefined) parts.push(`d.erro_fingerprint = ${p(s.fingerprint)}`);
  if (s.falhou_desde !== undefined) parts.push(`d.ultima_tentativa >= ${p(s.falhou_desde)}::timestamptz`);
  if (s.falhou_ate !== undefined) parts.push(`d.ultima_tentativa <= ${p(s.falhou_ate)}::timestamptz`);
  return parts.join(' AND ');
}

/**
 * Why an operator parks entries: a code from this list, never free text — a sentence can name a
 * citizen, and what cannot be scrubbed with certainty is not stored (DESIGN, "Error texts").
 * The ticket reference (`referencia`) carries the story.
 */
export const MOTIVOS_ESTACIONAMENTO = [
  /** The handler or the colony that failed is retired: nothing will process these. */
  'colonia-retirada',
  /** The event itself can never be processed (bad data upstream). */
  'evento-invalido',
  /** Already processed another way; a redrive would duplicate it. */
  'duplicado',
  /** Fixed by hand outside the platform. */
  'corrigido-manualmente',
  /** Stop redrives until a fix ships; reopen then. */
  'aguardando-correcao',
  /** None of the above: the reference says why. */
  'outro',
] as const;
export type MotivoEstacionamento = (typeof MOTIVOS_ESTACIONAMENTO)[number];

/** A ticket reference, Jira-style (`OPS-77`): an upper-case key and at most 6 digits. */
export const REFERENCIA_RE = /^[A-Z]{2,10}-[0-9]{1,6}$/;

/** The reason for parking, checked; throws `BAD_REQUEST`. Returns the text stored in `motivo`. */
export function motivoEstacionamento(motivo: unknown, referencia?: unknown): string {
  if (typeof motivo !== 'string' || !(MOTIVOS_ESTACIONAMENTO as readonly string[]).includes(motivo))
    throw new FeromoniosError('BAD_REQUEST', `motivo must be one of ${MOTIVOS_ESTACIONAMENTO.join(', ')}`);
  if (referencia !== undefined && (typeof referencia !== 'string' || !REFERENCIA_RE.test(referencia)))
    throw new FeromoniosError('BAD_REQUEST', 'referencia must be a ticket reference like OPS-77 (KEY-number)');
  if (motivo === 'outro' && referencia === undefined)
    throw new FeromoniosError('BAD_REQUEST', "referencia is required when motivo is 'outro'");
  return `parked: ${motivo}${referencia ? ` (${referencia})` : ''}`;
}
