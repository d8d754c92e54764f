/**
 * Backward compatibility between two JSON Schemas of the subset the catalog uses: a new
 * version is backward compatible when every payload valid under the previous one is still
 * valid (consumers on the new schema read old events). Returns the reasons it is not; an empty
 * list means compatible. Conservative: a keyword it cannot compare counts as a break.
 */
type Schema = Record<string, unknown>;

const TYPE_WIDER: Record<string, string[]> = { number: ['integer'] };

function typesOf(s: Schema): string[] | undefined {
  const t = s.type;
  if (t === undefined) return undefined;
  return Array.isArray(t) ? (t as string[]) : [t as string];
}

const COMPARED = new Set([
  '$schema',
  '$id',
  'title',
  'description',
  'examples',
  'default',
  '$comment',
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'enum',
  'const',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
]);

export function backwardIncompatibilities(oldS: Schema, newS: Schema, path = '$'): string[] {
  const out: string[] = [];
  for (const k of Object.keys(newS)) {
    if (!COMPARED.has(k)) out.push(`${path}: keyword '${k}' cannot be checked for compatibility`);
  }
  const oldT = typesOf(oldS);
  const newT = typesOf(newS);
  if (newT) {
    if (!oldT) out.push(`${path}: type narrowed to ${newT.join('|')}`);
    else {
      for (const t of oldT) {
        if (!newT.includes(t) && !newT.some((n) => TYPE_WIDER[n]?.includes(t)))
          out.push(`${path}: type '${t}' no longer accepted`);
      }
    }
  }
  if (newS.enum !== undefined) {
    const oldEnum = (oldS.enum as unknown[] | undefined) ?? (oldS.const !== undefined ? [oldS.const] : undefined);
    if (!oldEnum) out.push(`${path}: enum added`);
    else
      for (const v of oldEnum)
        if (!(newS.enum as unknown[]).some((n) => JSON.stringify(n) === JSON.stringify(v)))
          out.push(`${path}: enum value ${JSON.stringify(v)} removed`);
  }
  if (newS.const !== undefined && JSON.stringify(newS.const) !== JSON.stringify(oldS.const))
    out.push(`${path}: const changed`);
  if (newS.format !== undefined && newS.format !== oldS.format)
    out.push(`${path}: format ${JSON.stringify(newS.format)} added`);
  if (newS.pattern !== undefined && newS.pattern !== oldS.pattern) out.push(`${path}: pattern changed`);
  for (const k of ['minimum', 'exclusiveMinimum', 'minLength', 'minItems'] as const) {
    if (newS[k] !== undefined && (oldS[k] === undefined || (newS[k] as number) > (oldS[k] as number)))
      out.push(`${path}: ${k} raised`);
  }
  for (const k of ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems'] as const) {
    if (newS[k] !== undefined && (oldS[k] === undefined || (newS[k] as number) < (oldS[k] as number)))
      out.push(`${path}: ${k} lowered`);
  }
  const oldReq = new Set((oldS.required as string[] | undefined) ?? []);
  for (const r of (newS.required as string[] | undefined) ?? [])
    if (!oldReq.has(r)) out.push(`${path}: property '${r}' became required`);

  const oldProps = (oldS.properties as Record<string, Schema> | undefined) ?? {};
  const newProps = (newS.properties as Record<string, Schema> | undefined) ?? {};
  const oldClosed = oldS.additionalProperties === false;
  const newClosed = newS.additionalProperties === false;
  if (newClosed && !oldClosed) out.push(`${path}: additional properties no longer allowed`);
  for (const [name, oldP] of Object.entries(oldProps)) {
    const newP = newProps[name];
    if (newP) out.push(...backwardIncompatibilities(oldP, newP, `${path}.${name}`));
    else if (newClosed) out.push(`${path}: property '${name}' removed from a closed object`);
  }
  for (const name of Object.keys(newProps)) {
    if (!(name in oldProps) && !oldClosed)
      out.push(`${path}: property '${name}' added to an open object (old payloads may hold anything there)`);
  }
  if (oldS.items !== undefined && newS.items !== undefined) {
    out.push(...backwardIncompatibilities(oldS.items as Schema, newS.items as Schema, `${path}[]`));
  } else if (newS.items !== undefined) out.push(`${path}: items constrained`);
  return out;
}
