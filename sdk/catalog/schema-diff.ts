/**
 * What changes between two JSON Schemas of one event type, field by field, for humans and CI
 * gates (`feromonios schemas diff`). Whether a change *breaks* compatibility is the registry's
 * answer (its compatibility check under the subject's rule); this lists what changed so the
 * answer can be read. Pure: no I/O.
 */
export interface SchemaChange {
  /** JSON-pointer-like path of the field (`/endereco/cep`), `` for the root. */
  path: string;
  kind:
    | 'property-added'
    | 'property-removed'
    | 'required-added'
    | 'required-removed'
    | 'type-changed'
    | 'enum-changed'
    | 'additional-properties-changed'
    | 'constraint-changed';
  /** One line: what was, what is. */
  detail: string;
}

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);
const CONSTRAINTS = [
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'pattern',
  'format',
  'minItems',
  'maxItems',
  'const',
];

/** Every difference between `before` and `after`, in a stable order (depth-first, names sorted). */
export function diffSchemas(before: unknown, after: unknown, path = ''): SchemaChange[] {
  const out: SchemaChange[] = [];
  if (!isObject(before) || !isObject(after)) {
    if (JSON.stringify(before) !== JSON.stringify(after))
      out.push({ path, kind: 'constraint-changed', detail: `${show(before)} → ${show(after)}` });
    return out;
  }
  if (show(before.type) !== show(after.type))
    out.push({ path, kind: 'type-changed', detail: `type ${show(before.type)} → ${show(after.type)}` });
  if (show(before.enum) !== show(after.enum))
    out.push({ path, kind: 'enum-changed', detail: `enum ${show(before.enum)} → ${show(after.enum)}` });
  if (
    show(before.additionalProperties) !== show(after.additionalProperties) &&
    !(isObject(before.additionalProperties) && isObject(after.additionalProperties))
  )
    out.push({
      path,
      kind: 'additional-properties-changed',
      detail: `additionalProperties ${show(before.additionalProperties)} → ${show(after.additionalProperties)}`,
    });
  for (const c of CONSTRAINTS)
    if (show(before[c]) !== show(after[c]))
      out.push({ path, kind: 'constraint-changed', detail: `${c} ${show(before[c])} → ${show(after[c])}` });

  const req = (s: Schema) => new Set(Array.isArray(s.required) ? (s.required as unknown[]).map(String) : []);
  const rb = req(before);
  const ra = req(after);
  for (const name of [...ra].filter((n) => !rb.has(n)).sort())
    out.push({ path: `${path}/${name}`, kind: 'required-added', detail: `'${name}' is now required` });
  for (const name of [...rb].filter((n) => !ra.has(n)).sort())
    out.push({ path: `${path}/${name}`, kind: 'required-removed', detail: `'${name}' is no longer required` });

  const pb = isObject(before.properties) ? before.properties : {};
  const pa = isObject(after.properties) ? after.properties : {};
  for (const name of [...new Set([...Object.keys(pb), ...Object.keys(pa)])].sort()) {
    const p = `${path}/${name}`;
    if (!(name in pb))
      out.push({ path: p, kind: 'property-added', detail: `'${name}' added (${show(typeOf(pa[name]))})` });
    else if (!(name in pa)) out.push({ path: p, kind: 'property-removed', detail: `'${name}' removed` });
    else out.push(...diffSchemas(pb[name], pa[name], p));
  }
  if (isObject(before.items) || isObject(after.items))
    out.push(...diffSchemas(before.items ?? {}, after.items ?? {}, `${path}/[]`));
  if (isObject(before.additionalProperties) && isObject(after.additionalProperties))
    out.push(...diffSchemas(before.additionalProperties, after.additionalProperties, `${path}/*`));
  return out;
}

const typeOf = (s: unknown): unknown => (isObject(s) ? s.type : undefined);

function show(v: unknown): string {
  return v === undefined ? '(none)' : JSON.stringify(v);
}
