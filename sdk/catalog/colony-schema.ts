import { ConfigError } from '../errors';

/** A colony's own PostgreSQL schema name (`d4`, `d1a`): a lowercase unquoted identifier. */
export const COLONY_SCHEMA_RE = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * `<schema>.<table>` for a table the SDK keeps in a colony's own schema (inbox, outbox). The
 * schema is interpolated into SQL, so anything but a plain identifier is refused, naming
 * `option` (e.g. `inbox.schema`).
 */
export function colonyTable(schema: string, table: string, option: string): string {
  if (!COLONY_SCHEMA_RE.test(schema))
    throw new ConfigError(`${option}: expected a lowercase PostgreSQL identifier, got ${JSON.stringify(schema)}`, [
      option,
    ]);
  return `${schema}.${table}`;
}
