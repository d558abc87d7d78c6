/** A release's contract as hub_inspect declares it, and how form text becomes input values. */
export interface DeclaredInput {
  name: string;
  value_type: string;
  required: boolean;
  description: string | null;
  units: string | null;
  default: unknown;
  schema: Record<string, unknown> | null;
}

export interface DeclaredOutput {
  name: string;
  value_type: string;
  description: string | null;
  units: string | null;
}

export interface ReleaseView {
  ref: string;
  title: string;
  description: string;
  package_sha256: string;
  qualification_state: string;
  compute_class: string;
  visibility: string;
  created_at: string;
  contract: { inputs: DeclaredInput[]; outputs: DeclaredOutput[] };
  origin: { kind: string; tree_sha256: string; approval: string | null; published_at: string } | null;
  runtime_problems?: unknown[];
}

/** The bounds a schema declares, in words (`0 ≤ x ≤ 10`, `one of a, b`). */
export function boundsText(schema: Record<string, unknown> | null): string {
  if (!schema) return '—';
  const parts: string[] = [];
  const lo = schema.minimum ?? schema.exclusiveMinimum;
  const hi = schema.maximum ?? schema.exclusiveMaximum;
  if (lo !== undefined || hi !== undefined) {
    parts.push(`${lo !== undefined ? `${String(lo)} ${schema.exclusiveMinimum !== undefined ? '<' : '≤'} ` : ''}x${hi !== undefined ? ` ${schema.exclusiveMaximum !== undefined ? '<' : '≤'} ${String(hi)}` : ''}`);
  }
  if (Array.isArray(schema.enum)) parts.push(`one of ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}`);
  if (schema.minLength !== undefined || schema.maxLength !== undefined) parts.push(`length ${String(schema.minLength ?? 0)}–${String(schema.maxLength ?? '∞')}`);
  return parts.join('; ') || '—';
}

/**
 * Form text to the value sent: numbers as numbers, JSON for structured types, text as
 * is. Text that does not parse is sent unchanged, so the API's own envelope says what is
 * wrong with it, on its field.
 */
export function parseInputText(input: DeclaredInput, text: string): unknown {
  const t = text.trim();
  switch (input.value_type) {
    case 'number':
    case 'integer':
      return t !== '' && Number.isFinite(Number(t)) ? Number(t) : t;
    case 'string':
      return text;
    case 'boolean':
      return t === 'true' ? true : t === 'false' ? false : t;
    default:
      try {
        return JSON.parse(t) as unknown;
      } catch {
        return t;
      }
  }
}

/** A Hub search result (GET /hub/search item). */
export interface HubItem {
  ref: string;
  title: string;
  description: string;
  tags: string[];
  compute_class: string;
  qualification_state: string;
  package_sha256: string;
}

/** A runnable capability (GET /capabilities item): the lean contract. */
export interface CapabilityItem {
  ref: string;
  title: string;
  inputs: { name: string; value_type: string; required: boolean }[];
  outputs: { name: string; value_type: string }[];
  package_sha256: string;
}
