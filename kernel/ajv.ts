import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS with a default export.
const addFormats = (addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule;

/** An ajv 2020 instance with formats; `coerce` for query strings only. */
export function makeAjv(coerce: boolean): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: false, strict: false, coerceTypes: coerce ? 'array' : false, useDefaults: false });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  // A digest sent as `sha256:<hex>` reaches the operation as the bare hex it compares.
  ajv.addKeyword({
    keyword: 'x-digest',
    modifying: true,
    schemaType: 'boolean',
    validate: (_on: boolean, data: unknown, _schema?: unknown, at?: { parentData: Record<string | number, unknown>; parentDataProperty: string | number }) => {
      if (typeof data === 'string' && data.startsWith('sha256:') && at) at.parentData[at.parentDataProperty] = data.slice('sha256:'.length);
      return true;
    },
  });
  return ajv;
}
