import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { isStorableTimestamp } from '../wire/storable';

/**
 * The one Ajv configuration of the project: JSON Schema draft 2020-12 with formats, strict
 * (unknown keywords and formats are errors, so a typo in a schema fails the catalog check),
 * every error collected. Each schema version carries its own `$id`, so versions never collide.
 */
export function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
  addFormats(ajv);
  // The date-time PostgreSQL stores unchanged (storable.ts), for inputs that become query
  // parameters or columns: the audit API's filters.
  ajv.addFormat('feromonios-instante', { type: 'string', validate: isStorableTimestamp });
  return ajv;
}
