/**
 * The route table is data: the router, /v1/openapi.json, /docs and the MCP tool list are
 * all generated from it. Scope and schemas live on the operation (api/<domain>/operations.ts); a route
 * says how HTTP reaches that operation.
 */
export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface RouteDef {
  method: Method;
  /** OpenAPI-style path relative to /v1, e.g. `/runs/{run_id}`. */
  path: string;
  tool: string;
  /** Spec route group (OpenAPI tag). */
  group: string;
  success: 200 | 201;
  /** The route may answer 404 for a record the caller does not own. */
  notFound?: boolean;
  /** Starts compute, publishes, changes a lab or reaches external sources: needs the gateway. */
  gateway?: boolean;
  idempotency?: 'required' | 'optional';
  /**
   * Honours `Prefer: wait=N` (RFC 7240): the answer waits up to N seconds (at most
   * PREFER_WAIT_MAX_SECONDS) for the work it started to end, and says so in
   * `Preference-Applied`.
   */
  preferWait?: boolean;
  /** Run-creation routes draw from the tighter rate bucket. */
  bucket?: 'runs';
  /** Plain body (capability objects), not the envelope. */
  plain?: boolean;
  /** Not exposed as an MCP tool (multipart upload, raw byte stream). */
  restOnly?: boolean;
  /** No 422 for this route (the spec lists three). */
  no422?: boolean;
  /** Not in the spec's route table: a route of ours (OpenAPI marks it `x-spec-addition`). */
  addition?: boolean;
  /**
   * Called by the payment provider, not with an API key: the operation authenticates the
   * request by the provider's signature over the raw body, which it reads itself.
   */
  signed?: boolean;
}

const r = (method: Method, path: string, tool: string, group: string, extra: Partial<RouteDef> = {}): RouteDef =>
  ({ method, path, tool, group, success: 200, ...extra });

/** Where the OpenAPI document drawn from this table is served (ops.ts), beside the /v1 routes. */
export const OPENAPI_PATH = '/v1/openapi.json';

export const ROUTES: readonly RouteDef[] = [
  r('GET', '/capabilities', 'capability_list', 'capabilities', { plain: true }),
  r('GET', '/capabilities/{namespace}/{name}', 'capability_get', 'capabilities', { plain: true, notFound: true }),
  r('GET', '/hub/search', 'hub_search', 'hub'),
  r('GET', '/hub/releases/{reference}', 'hub_inspect', 'hub', { notFound: true }),
  r('POST', '/biology/search', 'biology_search', 'biology', { gateway: true }),
  r('POST', '/biology/fetch', 'biology_fetch', 'biology', { gateway: true, idempotency: 'optional', notFound: true }),
  r('GET', '/labs', 'lab_list', 'labs'),
  r('PATCH', '/labs/{lab_id}', 'lab_update', 'labs', { notFound: true, gateway: true }),
  r('PUT', '/labs/{lab_id}/visibility', 'lab_visibility_set', 'labs', { notFound: true, gateway: true }),
  r('GET', '/workspaces', 'workspace_list', 'workspaces'),
  r('POST', '/workspaces', 'workspace_create', 'workspaces', { idempotency: 'optional', notFound: true }),
  r('GET', '/workspaces/{workspace_id}', 'workspace_get', 'workspaces', { notFound: true }),
  r('POST', '/workspaces/{workspace_id}/change-plans', 'workspace_change_prepare', 'workspaces', { notFound: true, idempotency: 'optional' }),
  r('POST', '/workspace-revisions', 'workspace_change_apply', 'workspaces', { gateway: true, notFound: true }),
  r('GET', '/compute-profiles', 'compute_profile_list', 'compute-profiles', { no422: true }),
  r('GET', '/experiments', 'experiment_list', 'experiments'),
  r('POST', '/experiments', 'experiment_create', 'experiments', { gateway: true, bucket: 'runs', idempotency: 'optional', notFound: true }),
  r('POST', '/experiment-plans', 'experiment_prepare', 'experiments', { idempotency: 'optional', notFound: true }),
  r('GET', '/experiments/{experiment_id}', 'experiment_get', 'experiments', { notFound: true }),
  r('GET', '/experiments/{experiment_id}/runs', 'experiment_run_list', 'experiments', { notFound: true, addition: true }),
  r('PATCH', '/experiments/{experiment_id}', 'experiment_update', 'experiments', { notFound: true }),
  r('GET', '/passports', 'passport_get', 'passports', { notFound: true }),
  r('GET', '/passports/keys', 'passport_keys_list', 'passports', { addition: true }),
  r('POST', '/publication-plans', 'publish_prepare', 'publication', { idempotency: 'optional', notFound: true }),
  r('POST', '/publications', 'publish_execute', 'publication', { gateway: true, notFound: true }),
  r('GET', '/publications/{publication_id}', 'publication_get', 'publication', { notFound: true, addition: true }),
  r('GET', '/labs/{lab_id}/hosting', 'hosting_get', 'hosting', { notFound: true }),
  r('PATCH', '/labs/{lab_id}/hosting', 'hosting_update', 'hosting', { notFound: true, gateway: true }),
  r('POST', '/labs/{lab_id}/hosting-plans', 'hosting_prepare', 'hosting', { success: 201, notFound: true, idempotency: 'required' }),
  r('POST', '/hosting-requests', 'hosting_execute', 'hosting', { success: 201, gateway: true, notFound: true }),
  r('POST', '/files/from-run', 'file_import_from_run', 'files', { success: 201, notFound: true }),
  r('GET', '/files', 'file_list', 'files'),
  r('POST', '/files', 'file_upload', 'files', { restOnly: true }),
  r('GET', '/files/{file_id}', 'file_get', 'files', { notFound: true }),
  r('GET', '/files/{file_id}/content', 'file_content', 'files', { notFound: true, restOnly: true }),
  r('GET', '/account', 'account_get', 'account', { no422: true }),
  r('GET', '/skills', 'skill_list', 'skills', { no422: true }),
  r('GET', '/skills/{name}', 'skill_get', 'skills', { notFound: true }),
  r('GET', '/datasets', 'dataset_list', 'datasets'),
  r('POST', '/datasets', 'dataset_register', 'datasets', { success: 201 }),
  r('GET', '/datasets/{dataset_id}', 'dataset_get', 'datasets', { notFound: true }),
  r('POST', '/petab-import-plans', 'petab_import_prepare', 'petab', { notFound: true, idempotency: 'optional', addition: true }),
  r('POST', '/petab-imports', 'petab_import_execute', 'petab', { success: 201, gateway: true, notFound: true, idempotency: 'optional', addition: true }),
  r('GET', '/petab-imports/{import_id}', 'petab_import_get', 'petab', { notFound: true, addition: true }),
  r('GET', '/hosted-releases/{reference}', 'hosted_release_get', 'hosted invocations', { notFound: true }),
  r('POST', '/hosted-invocation-plans', 'hosted_invocation_prepare', 'hosted invocations', { success: 201, notFound: true, idempotency: 'required' }),
  r('POST', '/hosted-invocations', 'hosted_invocation_execute', 'hosted invocations', { success: 201, gateway: true, bucket: 'runs', notFound: true, preferWait: true }),
  r('GET', '/hosted-invocations/{invocation_id}', 'hosted_invocation_get', 'hosted invocations', { notFound: true }),
  r('POST', '/hosted-invocations/{invocation_id}/cancel', 'hosted_invocation_cancel', 'hosted invocations', { notFound: true }),
  r('GET', '/hosted-invocations/{invocation_id}/artifacts/{port}/metadata', 'hosted_invocation_artifact_get', 'hosted invocations', { notFound: true }),
  r('POST', '/runs', 'run_create', 'runs', { gateway: true, idempotency: 'required', bucket: 'runs', notFound: true, preferWait: true }),
  r('GET', '/runs', 'run_list', 'runs'),
  r('POST', '/runs/{run_id}/cancel', 'run_cancel', 'runs', { notFound: true }),
  r('GET', '/runs/{run_id}/results', 'run_results', 'runs', { notFound: true }),
  r('GET', '/runs/{run_id}/artifacts/{artifact_id}', 'run_artifact_download', 'runs', { notFound: true, restOnly: true }),
  r('POST', '/run-plans', 'run_prepare', 'run-plans', { notFound: true }),
  r('GET', '/runs/{run_id}', 'run_get', 'runs', { notFound: true }),
  r('GET', '/runs/{run_id}/events', 'run_events', 'runs', { notFound: true }),
  r('GET', '/runs/{run_id}/artifacts/{artifact_id}/metadata', 'run_artifact_get', 'runs', { notFound: true }),
  r('POST', '/webhook-endpoints', 'webhook_endpoint_create', 'webhooks', { addition: true, idempotency: 'optional', success: 201 }),
  r('GET', '/webhook-endpoints', 'webhook_endpoint_list', 'webhooks', { addition: true }),
  r('DELETE', '/webhook-endpoints/{endpoint_id}', 'webhook_endpoint_remove', 'webhooks', { addition: true, notFound: true }),
  r('POST', '/webhook-endpoints/{endpoint_id}/secret-rotations', 'webhook_endpoint_secret_rotate', 'webhooks', { addition: true, notFound: true, idempotency: 'optional' }),
  r('GET', '/webhook-events', 'webhook_event_list', 'webhooks', { addition: true }),
  r('GET', '/webhook-deliveries', 'webhook_delivery_list', 'webhooks', { addition: true }),
  r('POST', '/webhook-deliveries/{delivery_id}/replay', 'webhook_delivery_replay', 'webhooks', { addition: true, notFound: true }),
  r('POST', '/purchases', 'purchase_create', 'purchases', { addition: true, restOnly: true, idempotency: 'required', success: 201 }),
  r('GET', '/purchases', 'purchase_list', 'purchases', { addition: true, restOnly: true }),
  r('GET', '/purchases/{purchase_id}', 'purchase_get', 'purchases', { addition: true, restOnly: true, notFound: true }),
  r('POST', '/payment-events/stripe', 'payment_event_receive', 'purchases', { addition: true, restOnly: true, signed: true }),
  r('POST', '/sessions', 'session_create', 'sessions', { idempotency: 'optional' }),
  r('GET', '/sessions', 'session_list', 'sessions'),
  r('GET', '/sessions/{session_id}', 'session_get', 'sessions', { notFound: true }),
  r('POST', '/sessions/{session_id}/external-sessions', 'session_external_attach', 'sessions', { notFound: true }),
  r('POST', '/sessions/{session_id}/contract-plans', 'session_contract_prepare', 'sessions', { notFound: true }),
  r('POST', '/sessions/{session_id}/execution-plans', 'session_execution_prepare', 'sessions', { notFound: true }),
  r('POST', '/session-changes', 'session_change_apply', 'sessions'),
  r('POST', '/sessions/{session_id}/progress', 'session_progress_record', 'sessions', { notFound: true, idempotency: 'optional' }),
  r('POST', '/sessions/{session_id}/validation', 'session_validate', 'sessions', { notFound: true }),
  r('POST', '/sessions/{session_id}/completion', 'session_completion_check', 'sessions', { notFound: true }),
  r('POST', '/sessions/{session_id}/workspace', 'session_workspace_create', 'sessions', { notFound: true, gateway: true }),
];

/** The route of a tool (for next_actions' http hints). */
export function routeOfTool(tool: string): RouteDef | undefined {
  return ROUTES.find((x) => x.tool === tool);
}

/** Fills `{param}` segments from arguments. */
export function fillPath(path: string, args: Record<string, unknown>): string {
  return path.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(String(args[k] ?? `{${k}}`)));
}
