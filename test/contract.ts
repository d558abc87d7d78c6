import { readFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../deploy/local/paths.ts';

/**
 * The service contract the tests hold the code to: `docs/contract/`, the repository's own
 * copy (the spec's route table and the answers to its gaps, as data). Tests compare the
 * code with this, never the code with itself.
 */
export const CONTRACT_DIR = path.join(REPO_ROOT, 'docs/contract');

export interface ContractRoute {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  path: string;
  group: string;
  /** A scope of `rules.json`, or `any` (any valid key). */
  scope: string;
  tool: string;
  success: 200 | 201;
  not_found: boolean;
  /** The spec names no tool for this route; the name is ours. */
  tool_named_here?: boolean;
  /** The spec's table has no 404 here; the route can answer one for an id in its body or query. */
  not_found_decided_here?: boolean;
  idempotency?: 'required' | 'optional';
  gateway?: boolean;
  rate_bucket?: 'runs';
  rest_only?: boolean;
  plain_body?: boolean;
  no_422?: boolean;
  /** Called by the payment provider with its signature, not with an API key (an addition). */
  signed?: boolean;
  /** `spec`: the spec's route table; `spec_index`: listed by the spec with a purpose only; `addition`: ours. */
  source: 'spec' | 'spec_index' | 'addition';
  purpose: string;
}

export interface ContractRules {
  scopes: string[];
  /** Scopes of ours beyond the spec's (`compute:buy`), held by the routes we added alone. */
  added_scopes: string[];
  envelope: { schema_version: string; success_fields: string[]; next_action_fields: string[]; request_id_headers: string[]; error_fields: string[]; managed_lab_error_details: string[] };
  error_types: Record<string, string>;
  error_codes: Array<{ status: number; code: string; when: string }>;
  unauthenticated_codes: string[];
  limits: Record<string, number | string[]> & {
    reads_per_minute: number; run_creation_per_minute: number; daily_requests: number; concurrent_runs_per_account: number;
    page_default: number; page_max: number; bounded_content_bytes: number; upload_bytes: number;
    plan_expiry_seconds: number; idempotency_key_ttl_seconds: number; idempotency_key_max_length: number;
  };
}

const read = <T>(file: string): T => JSON.parse(readFileSync(path.join(CONTRACT_DIR, file), 'utf8')) as T;

export const CONTRACT_ROUTES: readonly ContractRoute[] = read<ContractRoute[]>('routes.json');
export const CONTRACT_RULES: ContractRules = read<ContractRules>('rules.json');

/** `METHOD /path` of a route. */
export const routeKey = (r: { method: string; path: string }): string => `${r.method} ${r.path}`;

/** The contract's error `type` for an HTTP status. */
export function contractErrorType(status: number): string | undefined {
  return CONTRACT_RULES.error_types[String(status)];
}
