/**
 * What PostgreSQL accepts — the one rule for every value that crosses into it
 * (docs/adr/0006-storable-values-and-error-texts.md). The SDK's
 * publish validation, the bridge's decoder, the DLQ mirror and the audit API's request
 * validation all ask these functions, so a value one of them accepts is never refused by the
 * database later (where it would block a partition or answer a 500).
 *
 * Each `…Problem` function returns `undefined` for an acceptable value, or a sentence saying
 * what is wrong (without quoting the value: it may be personal data).
 */

/**
 * At most this many digits in a code or id: a CPF has 11, a CNPJ 14, a phone number 8 to 11,
 * a CEP 8; six is what the government's own masked CPF (`***.456.789-**`) shows.
 */
export const MAX_DIGITS_IN_CODES = 6;

/**
 * A colony code (`D-1a`, `D-4`, `quickstart`): 1-100 characters of `[A-Za-z0-9_-]`, starting
 * with a letter or digit, with at most 6 digits in all. It is `origem`, a DLQ/reprocessing
 * topic's last segment, a `colonia` column and a metric label, so it is as strict as the
 * strictest of those, and cannot carry a CPF or a phone number into the log.
 */
export const COLONY_CODE_RE = /^(?!(?:[^0-9]*[0-9]){7})[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/;

export const isColonyCode = (v: unknown): v is string => typeof v === 'string' && COLONY_CODE_RE.test(v);

export function colonyCodeProblem(v: unknown): string | undefined {
  if (typeof v !== 'string') return `must be a colony code (a string), got ${typeOf(v)}`;
  if (!COLONY_CODE_RE.test(v))
    return 'must be a colony code: 1-100 characters of [A-Za-z0-9_-], starting with a letter or digit, at most 6 digits';
  return undefined;
}

/**
 * An operator id (who asked for a reprocessing; the audit API's token `sub`): 2-64 characters,
 * a letter first, then letters, digits and `._:-`, with at most 6 digits in all. It is an
 * allowlist, so a CPF, a CNPJ, a phone number, an e-mail address or a UUID that could carry
 * one cannot be recorded as the requester, whatever surrounds them (docs/adr/0005).
 */
export const OPERATOR_ID_RE = /^(?!(?:[^0-9]*[0-9]){7})[A-Za-z][A-Za-z0-9._:-]{1,63}$/;

export function operatorIdProblem(v: unknown): string | undefined {
  if (typeof v !== 'string') return `must be an operator id (a string), got ${typeOf(v)}`;
  if (!OPERATOR_ID_RE.test(v))
    return 'must be an operator id: 2-64 characters of [A-Za-z0-9._:-], a letter first, at most 6 digits';
  return undefined;
}

// ISO-8601 / RFC 3339 date-time with a zone, as `Date#toISOString` writes it; seconds optional,
// offset with or without its colon.
const TIMESTAMP_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(?:Z|([+-])(\d{2}):?(\d{2}))$/;
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

const daysIn = (year: number, month: number): number =>
  month === 2
    ? year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
      ? 29
      : 28
    : month === 4 || month === 6 || month === 9 || month === 11
      ? 30
      : 31;

/**
 * A date-time `TIMESTAMPTZ` takes as the same instant JavaScript reads: a real calendar date
 * (no 30 February: `Date` would roll it over to March), hours 00-23, minutes and seconds
 * 00-59, an offset PostgreSQL accepts (at most ±15:59), and an instant between the years 1
 * and 9999 in UTC.
 */
export function timestampProblem(v: unknown): string | undefined {
  if (typeof v !== 'string') return `must be an ISO-8601 date-time string, got ${typeOf(v)}`;
  if (isStorableUtcMillis(v)) return undefined;
  const t = readTimestamp(v);
  return 'problem' in t ? t.problem : undefined;
}

/**
 * A date-time string read as `timestampProblem` reads it: its instant in whole seconds (as
 * milliseconds since the Unix epoch) and its fraction of a second as written (`''`, or `.` and 1-9
 * digits), or the problem `timestampProblem` words. For the binary `COPY` of the bridge
 * (bridge/copy-binary.ts), which must store the instant PostgreSQL's text input reads.
 */
export function readTimestamp(v: string): { seconds: number; fraction: string } | { problem: string } {
  const m = TIMESTAMP_RE.exec(v);
  if (!m) return { problem: 'must be an ISO-8601 date-time with a time zone (e.g. 2026-03-01T10:00:00Z)' };
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4]);
  const minute = Number(m[5]);
  const second = Number(m[6] ?? 0);
  const offH = Number(m[9] ?? 0);
  const offM = Number(m[10] ?? 0);
  if (year < 1) return { problem: 'must have a year from 0001 to 9999' };
  if (month < 1 || month > 12) return { problem: 'must have a month from 01 to 12' };
  if (day < 1 || day > daysIn(year, month)) return { problem: 'must be a real calendar date' };
  if (hour > 23 || minute > 59 || second > 59) return { problem: 'must have a time of day from 00:00:00 to 23:59:59' };
  if (offH > 15 || offM > 59) return { problem: 'must have a time-zone offset within ±15:59' };
  const local = new Date(Date.UTC(2000, month - 1, day, hour, minute, second));
  local.setUTCFullYear(year); // Date.UTC maps years 0-99 to 1900-1999
  const t = local.getTime() - (m[8] === '-' ? -1 : 1) * (offH * 60 + offM) * 60_000;
  if (t < EARLIEST || t > LATEST) return { problem: 'must be an instant between the years 0001 and 9999 (UTC)' };
  return { seconds: t, fraction: m[7] ?? '' };
}

/**
 * `timestampProblem`'s answer for the one shape `Date#toISOString` writes — what every SDK
 * publisher and most producers send (`2026-03-01T10:00:00.123Z`) — read by character codes:
 * `true` only when that answer is "no problem" (a real date in the years 0001-9999, in UTC, is
 * always within range). Anything else, a problem included, takes the general path, which words
 * the problem; the two agree on every string (a property test). ~10× cheaper than the regular
 * expression and the `Date` it needs, checked for every decoded record.
 */
export function isStorableUtcMillis(v: string): boolean {
  if (v.length !== 24 || v.charCodeAt(23) !== 90) return false; // …Z
  let year = 0;
  let month = 0;
  let day = 0;
  let hour = 0;
  let minute = 0;
  let second = 0;
  for (let i = 0; i < 23; i++) {
    const ch = v.charCodeAt(i);
    const sep = UTC_MILLIS_SEPARATORS[i];
    if (sep !== 0) {
      if (ch !== sep) return false;
      continue;
    }
    const d = ch - 48;
    if (d < 0 || d > 9) return false;
    if (i < 4) year = year * 10 + d;
    else if (i < 7) month = month * 10 + d;
    else if (i < 10) day = day * 10 + d;
    else if (i < 13) hour = hour * 10 + d;
    else if (i < 16) minute = minute * 10 + d;
    else if (i < 19) second = second * 10 + d;
  }
  return (
    year >= 1 &&
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysIn(year, month) &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59
  );
}

/** `YYYY-MM-DDTHH:MM:SS.sss`: the separator expected at each position, 0 for a digit. */
const UTC_MILLIS_SEPARATORS = Uint8Array.from('0000-00-00T00:00:00.000', (ch) => (ch === '0' ? 0 : ch.charCodeAt(0)));

export const isStorableTimestamp = (v: unknown): v is string => timestampProblem(v) === undefined;

/**
 * Text a `TEXT`/`VARCHAR(maxLength)` column takes unchanged: no NUL (PostgreSQL refuses it),
 * no unpaired UTF-16 surrogate (the driver would silently turn it into U+FFFD, and JSONB
 * refuses it), and at most `maxLength` characters (code points, as PostgreSQL counts).
 */
export function textProblem(v: unknown, maxLength = Infinity): string | undefined {
  if (typeof v !== 'string') return `must be a string, got ${typeOf(v)}`;
  // one pass over the code units finds what could be wrong (almost every text has neither): no
  // regular expression run, nothing allocated, for the strings of every event a colony receives
  if (hasNulOrSurrogate(v)) {
    if (v.includes('\u0000')) return 'must not contain a NUL character';
    if (hasLoneSurrogate(v)) return 'must not contain an unpaired UTF-16 surrogate';
  }
  if (maxLength !== Infinity && codePoints(v) > maxLength) return `must be at most ${maxLength} characters`;
  return undefined;
}

/**
 * Text made storable without refusing it: NUL and other C0 controls except tab and newline
 * become spaces, unpaired surrogates become U+FFFD, and the result is cut to `maxLength`
 * characters (never inside a surrogate pair). For texts the bridge records rather than
 * validates: error messages and stacks, handler names.
 */
export function storableText(v: string, maxLength = Infinity): string {
  // eslint-disable-next-line no-control-regex -- control characters are what this removes
  let out = replaceLoneSurrogates(v).replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, ' ');
  if (maxLength !== Infinity && codePoints(out) > maxLength) out = [...out].slice(0, maxLength).join('');
  return out;
}

/**
 * A JSON value JSONB takes unchanged: every string and key passes `textProblem` (NUL and
 * unpaired surrogates are the two things JSONB refuses in valid JSON), numbers are finite,
 * and nesting is at most `maxDepth` deep. Returns the JSON pointer of the first problem.
 */
export function jsonProblem(v: unknown, maxDepth = 64): string | undefined {
  const found = jsonProblemAt(v, maxDepth, 0);
  if (!found) return undefined;
  const path = found.segments
    .reverse()
    .map((s) => `/${s}`)
    .join('');
  return found.key ? `${path}/(a key): ${found.problem}` : `${path || '/'}: ${found.problem}`;
}

/** A problem `jsonProblemAt` found. */
interface JsonProblem {
  /** The JSON pointer's segments, innermost first. */
  segments: string[];
  problem: string;
  /** The problem is a key of the object at `segments`, not a value. */
  key?: true;
}

// Every event's payload passes here on every hop, so the walk builds no path while it goes: the
// pointer is put together, segment by segment, only on the way back from a problem.
function jsonProblemAt(x: unknown, maxDepth: number, depth: number): JsonProblem | undefined {
  if (depth > maxDepth) return { segments: [], problem: `nested deeper than ${maxDepth} levels` };
  if (typeof x === 'string') {
    const p = textProblem(x);
    return p === undefined ? undefined : { segments: [], problem: p };
  }
  if (typeof x === 'number')
    return Number.isFinite(x) ? undefined : { segments: [], problem: 'must be a finite number' };
  if (x === null || typeof x === 'boolean') return undefined;
  if (Array.isArray(x)) {
    for (let i = 0; i < x.length; i++) {
      const found = jsonProblemAt(x[i], maxDepth, depth + 1);
      if (found) {
        found.segments.push(String(i));
        return found;
      }
    }
    return undefined;
  }
  if (typeof x === 'object') {
    // `for…in` over own keys visits what `Object.keys` lists, in its order, without an array per object
    for (const k in x) {
      if (!Object.prototype.hasOwnProperty.call(x, k)) continue;
      const kp = textProblem(k);
      if (kp) return { segments: [], problem: kp, key: true };
      const found = jsonProblemAt((x as Record<string, unknown>)[k], maxDepth, depth + 1);
      if (found) {
        found.segments.push(k.replace(/~/g, '~0').replace(/\//g, '~1'));
        return found;
      }
    }
    return undefined;
  }
  return { segments: [], problem: `${typeOf(x)} is not JSON` };
}

/** Whether `s` holds a NUL or any surrogate code unit (paired or not): what `textProblem` looks at further. */
function hasNulOrSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0 || (c & 0xf800) === 0xd800) return true;
  }
  return false;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const hasLoneSurrogate = (s: string): boolean => LONE_SURROGATE.test(s);
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');
const replaceLoneSurrogates = (s: string): string => s.replace(LONE_SURROGATES, '\ufffd');

const codePoints = (s: string): number => {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
};

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A UUID in its canonical 8-4-4-4-12 hex form (event_id, correlacao_id, causation_id). */
export const isUuid = (v: unknown): v is string => typeof v === 'string' && UUID_RE.test(v);
