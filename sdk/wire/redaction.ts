import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

/**
 * LGPD redaction of payloads before they reach PostgreSQL (docs/redaction.md). A policy is
 * an allowlist: a field without a rule is dropped. Rules:
 * - `manter`: keep a scalar (or an array of scalars) as is; objects need a nested policy;
 * - `hash`: replace by a keyed hash, `hmac-sha256:<hex>` of the JSON value (HMAC with the
 *   bridge's secret, so a dictionary of known texts cannot reverse it);
 * - `remover`: drop (personal identifiers; said explicitly so reviews see the decision);
 * - `arredondar`: round a coordinate (a number, or an object's `lat`/`lng`) to N decimals;
 * - `{ "campos": { … } }`: a nested object with its own allowlist;
 * - `{ "itens": <rule> }`: an array whose every item follows the rule.
 */
export type RedactionRule =
  'manter' | 'hash' | 'remover' | 'arredondar' | { campos: Record<string, RedactionRule> } | { itens: RedactionRule };

export interface RedactionPolicy {
  campos: Record<string, RedactionRule>;
}

export interface OpcoesRedacao {
  /** HMAC key (at least 32 characters). */
  key: string;
  /** Decimals kept by `arredondar` (2 ≈ 1.1 km). */
  coordinateDecimals: number;
}

const SCALAR_RULES = new Set(['manter', 'hash', 'remover', 'arredondar']);

/** Problems with a policy's shape, e.g. `campos.localizacao.campos.lat: unknown rule 'keep'`. */
export function policyProblems(policy: unknown, path = 'campos'): string[] {
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) return [`${path}: expected an object`];
  const campos = (policy as { campos?: unknown }).campos;
  if (typeof campos !== 'object' || campos === null || Array.isArray(campos))
    return [`${path}: expected { "campos": { … } }`];
  return Object.entries(campos as Record<string, unknown>).flatMap(([k, r]) => ruleProblems(r, `${path}.${k}`));
}

function ruleProblems(rule: unknown, path: string): string[] {
  if (typeof rule === 'string') return SCALAR_RULES.has(rule) ? [] : [`${path}: unknown rule '${rule}'`];
  if (typeof rule === 'object' && rule !== null && 'campos' in rule) return policyProblems(rule, `${path}.campos`);
  if (typeof rule === 'object' && rule !== null && 'itens' in rule) return ruleProblems(rule.itens, `${path}.itens`);
  return [`${path}: unknown rule ${JSON.stringify(rule)}`];
}

/**
 * Fields of a JSON Schema (recursively, through objects and arrays) that the policy does not
 * cover: a schema field without a rule would silently vanish from the audit log.
 */
export function uncoveredFields(schema: Record<string, unknown>, policy: RedactionPolicy, path = ''): string[] {
  const props = (schema.properties as Record<string, Record<string, unknown>> | undefined) ?? {};
  const out: string[] = [];
  for (const [name, sub] of Object.entries(props)) {
    const rule = policy.campos[name];
    const here = path ? `${path}.${name}` : name;
    if (rule === undefined) out.push(here);
    else out.push(...uncoveredByRule(sub, rule, here));
  }
  return out;
}

function uncoveredByRule(schema: Record<string, unknown>, rule: RedactionRule, path: string): string[] {
  if (typeof rule === 'object' && 'campos' in rule) return uncoveredFields(schema, rule, path);
  if (typeof rule === 'object' && 'itens' in rule) {
    const items = schema.items as Record<string, unknown> | undefined;
    return items ? uncoveredByRule(items, rule.itens, `${path}[]`) : [];
  }
  if (
    rule === 'manter' &&
    (schema.type === 'object' ||
      (schema.type === 'array' && (schema.items as { type?: string } | undefined)?.type === 'object'))
  ) {
    return [`${path} (an object cannot be kept whole: give it a nested policy)`];
  }
  return [];
}

/**
 * The key as a `KeyObject`, made once per key: `createHmac` given a string converts it on every
 * call, a quarter of a redacted field's cost in the bridge's profile. One key per process in
 * practice (`BRIDGE_REDACTION_KEY`); a few more in tests.
 */
const secretKeys = new Map<string, KeyObject>();
function secretKey(key: string): KeyObject {
  let k = secretKeys.get(key);
  if (!k) {
    if (secretKeys.size >= 16) secretKeys.clear();
    k = createSecretKey(key, 'utf8');
    secretKeys.set(key, k);
  }
  return k;
}

/**
 * `hmac-sha256:` and the hex HMAC-SHA-256 of the value's JSON under the key's UTF-8 bytes. A value
 * with no JSON (undefined, a function, a symbol: a payload parsed from JSON holds none) is a
 * `TypeError` naming its type. (Computing RFC 2104 by hand over pads made once per key measured no
 * faster than `createHmac` with a cached `KeyObject`, ~1.9 µs a call either way: not kept.)
 */
export const keyedHash = (key: string, value: unknown): string => {
  const json = JSON.stringify(value);
  if (json === undefined) throw new TypeError(`keyedHash: a value of type ${typeof value} has no JSON to hash`);
  return `hmac-sha256:${createHmac('sha256', secretKey(key)).update(json).digest('hex')}`;
};

const isScalar = (v: unknown): boolean => v === null || ['string', 'number', 'boolean'].includes(typeof v);

function round(value: unknown, decimals: number): unknown {
  if (typeof value === 'number') return Number(value.toFixed(decimals));
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const v = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const k of ['lat', 'lng'] as const) if (typeof v[k] === 'number') out[k] = Number(v[k].toFixed(decimals));
    return out;
  }
  return undefined; // anything else cannot be rounded safely: drop it
}

function applyRule(value: unknown, rule: RedactionRule, opts: OpcoesRedacao): unknown {
  if (rule === 'remover') return undefined;
  if (rule === 'hash') return keyedHash(opts.key, value);
  if (rule === 'arredondar') return round(value, opts.coordinateDecimals);
  if (rule === 'manter') {
    if (isScalar(value)) return value;
    if (Array.isArray(value) && value.every(isScalar)) return value;
    return undefined; // an object or nested array under `manter` is not trusted: dropped
  }
  if ('campos' in rule) {
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? redactPayload(value as Record<string, unknown>, rule, opts)
      : undefined;
  }
  return Array.isArray(value)
    ? value.map((item) => applyRule(item, rule.itens, opts)).filter((v) => v !== undefined)
    : undefined;
}

/** The persisted form of a payload: only fields the policy allows, each treated by its rule. */
export function redactPayload(
  payload: Record<string, unknown>,
  policy: RedactionPolicy,
  opts: OpcoesRedacao,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const campos = policy.campos;
  // `for…in` over own keys visits what `Object.entries` lists, in its order, without an array of pairs per payload
  for (const name in campos) {
    if (!Object.prototype.hasOwnProperty.call(campos, name)) continue;
    if (!Object.prototype.hasOwnProperty.call(payload, name)) continue;
    const v = applyRule(payload[name], campos[name] as RedactionRule, opts);
    if (v !== undefined) out[name] = v;
  }
  return out;
}
