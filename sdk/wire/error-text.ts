import { storableText } from './storable';

/**
 * Free text that may quote an event — handlers' error messages and stacks, log lines — made
 * safe to store and log (docs/adr/0006-error-texts.md). It holds against fragments, not only
 * whole values:
 *
 * - every run of {@link FRAGMENT} or more characters that also occurs inside one of the
 *   event's string values (compared case-insensitively, also in its JSON-escaped form, as
 *   `JSON.stringify(payload)` would quote it) is replaced, and so is every whole string value
 *   of 3 or more characters and every number of the payload with 4 or more digits;
 * - whatever the surrounding: e-mail addresses (any local part, accents included), every span
 *   of digits and separators holding {@link MAX_DIGITS} + 1 or more digits (CPF, CNPJ, phone,
 *   CEP, card numbers — glued to letters or not), and decimal numbers with two or more
 *   decimals (coordinates at any precision from about a kilometre);
 * - UUIDs stay: they are event and correlation ids, which the log records anyway;
 * - the result passes the shared storable-text rule (no NUL, no control characters, no unpaired
 *   surrogate) and is cut to `maxLength`.
 *
 * When the event is too large to compare against with certainty, the text is not kept at all:
 * what cannot be scrubbed with certainty is not stored (docs/adr/0006-storable-values-and-error-texts.md).
 */
export function scrubText(text: string, payload?: unknown, maxLength = 4000): string {
  const values = stringValues(payload);
  if (values.budgetExceeded) return UNVERIFIABLE;
  let out = text;
  // 1. protect UUIDs from the digit rules
  const uuids: string[] = [];
  out = out.replace(UUID_G, (u) => `${PROTECT_OPEN}${uuids.push(u) - 1}${PROTECT_CLOSE}`);
  // 2. the event's own values: whole, then any shared fragment
  for (const v of [...values.whole].sort((a, b) => b.length - a.length)) out = replaceAllInsensitive(out, v);
  out = redactSharedFragments(out, values.grams);
  // 3. personal data whatever surrounds it
  out = out
    .replace(EMAIL_G, REDACTED)
    .replace(DIGIT_SPAN_G, (span) => (countDigits(span) > MAX_DIGITS ? REDACTED : span))
    .replace(DECIMAL_G, REDACTED);
  // 4. back the UUIDs; then what PostgreSQL and a log line accept
  out = out.replace(PROTECTED_G, (_m, i: string) => uuids[Number(i)] ?? REDACTED);
  return storableText(collapse(out), maxLength);
}

/** What replaces a scrubbed span. */
export const REDACTED = '[redigido]';
/** What replaces a text that could not be verified (the event is too large to compare against). */
export const UNVERIFIABLE = '[texto omitido: o evento é grande demais para verificar a mensagem]';
/** Shortest run shared with an event's string value that is removed. */
export const FRAGMENT = 5;
/** Most digits a span of digits and separators may hold and stay. */
export const MAX_DIGITS = 6;
/** Most characters of event strings compared against (beyond it the text is not kept). */
const BUDGET = 512 * 1024;

const UUID_G = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const PROTECT_OPEN = '\ue000';
const PROTECT_CLOSE = '\ue001';
const PROTECTED_G = /\ue000(\d+)\ue001/g;
const EMAIL_G = /[^\s@]+@[^\s@]+/gu; // greedy on purpose: over-redacting punctuation is fine
const DIGIT_SPAN_G = /\d(?:[\d\s.\-/()+]*\d)?/g;
const DECIMAL_G = /[-+]?\d+[.,]\d{2,}/g;

const countDigits = (s: string): number => (s.match(/\d/g) ?? []).length;

/** Adjacent redactions read as one. */
const collapse = (s: string): string => s.replace(/\[redigido\](?:[\s\-.,/]*\[redigido\])+/g, REDACTED);

interface PayloadStrings {
  whole: Set<string>;
  /** Lowercased FRAGMENT-grams of every string value (plain and JSON-escaped). */
  grams: Set<string>;
  budgetExceeded: boolean;
}

function stringValues(payload: unknown): PayloadStrings {
  const out: PayloadStrings = { whole: new Set(), grams: new Set(), budgetExceeded: false };
  let budget = BUDGET;
  const addGrams = (s: string): void => {
    const cps = [...s.toLowerCase()];
    for (let i = 0; i + FRAGMENT <= cps.length; i++) out.grams.add(cps.slice(i, i + FRAGMENT).join(''));
  };
  const visit = (v: unknown, depth: number): void => {
    if (out.budgetExceeded || depth > 64) return;
    if (typeof v === 'string') {
      budget -= v.length;
      if (budget < 0) {
        out.budgetExceeded = true;
        return;
      }
      if (v.length >= 3) out.whole.add(v);
      const escaped = JSON.stringify(v).slice(1, -1);
      if (escaped !== v && escaped.length >= 3) out.whole.add(escaped);
      addGrams(v);
      if (escaped !== v) addGrams(escaped);
    } else if (typeof v === 'number' && Number.isFinite(v)) {
      const s = String(v);
      if (countDigits(s) >= 4) out.whole.add(s);
    } else if (Array.isArray(v)) v.forEach((x) => visit(x, depth + 1));
    else if (typeof v === 'object' && v !== null) Object.values(v).forEach((x) => visit(x, depth + 1));
  };
  visit(payload, 0);
  return out;
}

function replaceAllInsensitive(text: string, value: string): string {
  const escaped = value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text.replace(new RegExp(escaped, 'giu'), REDACTED);
}

/** Replaces every maximal run of the text covered by FRAGMENT-grams of the event's strings. */
function redactSharedFragments(text: string, grams: Set<string>): string {
  if (grams.size === 0) return text;
  const cps = [...text];
  const lower = cps.map((c) => [...c.toLowerCase()][0] ?? c);
  const covered = new Array<boolean>(cps.length).fill(false);
  for (let i = 0; i + FRAGMENT <= lower.length; i++) {
    if (grams.has(lower.slice(i, i + FRAGMENT).join(''))) covered.fill(true, i, i + FRAGMENT);
  }
  let out = '';
  for (let i = 0; i < cps.length; i++) {
    if (!covered[i]) out += cps[i];
    else if (i === 0 || !covered[i - 1]) out += REDACTED;
  }
  return out;
}
