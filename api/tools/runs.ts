import type { ToolDef } from './tool.ts';
import { str, uuid, sha256Hex, limit, cursor, nullableStr, id } from '../schemas/common.ts';

/** Inputs of a run: an object keyed by the capability's declared input names. */
const inputs = { type: 'object', maxProperties: 256 };
const metadata = { type: 'object', maxProperties: 32, additionalProperties: { type: 'string', maxLength: 500 }, propertyNames: { maxLength: 40 } };
const runStatus = { enum: ['queued', 'running', 'cancelling', 'completed', 'failed', 'cancelled', 'timed_out'] };
const runPath = { run_id: uuid };

export const runTools: ToolDef[] = [
  {
    name: 'run_prepare', scope: 'runs:write', readOnly: true,
    description: 'Check a simulation before running: resolve the capability or workspace revision, validate inputs against its contract, price it, and return findings and a plan digest. No compute starts and nothing is reserved.',
    input: {
      body: {
        type: 'object', additionalProperties: false,
        properties: {
          capability_ref: str(200), workspace_id: uuid, revision_id: uuid, inputs,
          compute_profile_id: str(64), max_runtime_seconds: { type: 'integer', minimum: 1 },
        },
        oneOf: [{ required: ['capability_ref'] }, { required: ['workspace_id', 'revision_id'] }],
      },
    },
  },
  {
    name: 'run_create', scope: 'runs:write', readOnly: false,
    description: 'Start an approved simulation: an approved plan {plan_id, plan_sha256}, or a direct request {ref, inputs, compute_profile, metadata} prepared and executed in one step. Requires Idempotency-Key.',
    input: {
      body: {
        type: 'object', additionalProperties: false,
        properties: {
          plan_id: uuid, plan_sha256: sha256Hex, ref: str(200), inputs, compute_profile: str(64), metadata,
          max_runtime_seconds: { type: 'integer', minimum: 1 },
        },
        oneOf: [{ required: ['plan_id', 'plan_sha256'] }, { required: ['ref'] }],
      },
    },
  },
  {
    name: 'run_list', scope: 'runs:read', readOnly: true,
    description: 'List my simulations, newest first, filtered by status, capability, experiment or metadata.',
    input: { query: { status: runStatus, capability: nullableStr(200), experiment_id: nullableStr(64), limit, cursor } },
  },
  { name: 'run_get', scope: 'runs:read', readOnly: true, description: 'Check simulation progress and results.', input: { path: runPath } },
  { name: 'run_cancel', scope: 'runs:write', readOnly: false, description: 'Cancel a simulation; only elapsed compute is charged. Terminal runs are unchanged.', input: { path: runPath } },
  {
    name: 'run_events', scope: 'runs:read', readOnly: true,
    description: "Read a simulation's log as ordered events (or stream them as server-sent events).",
    input: { path: runPath, query: { after: { type: 'integer', minimum: 0 }, limit: { type: 'integer', minimum: 1, maximum: 1000 } } },
  },
  { name: 'run_results', scope: 'runs:read', readOnly: true, description: 'Get the public results of a run: outputs, hashed artifacts and provenance.', input: { path: runPath } },
  {
    name: 'run_artifact_download', scope: 'runs:read', readOnly: true,
    description: 'Download a public artifact of a run; hash the bytes before interpreting them.',
    input: { path: { ...runPath, artifact_id: id('art') } },
  },
  {
    name: 'run_artifact_get', scope: 'runs:read', readOnly: true,
    description: 'Read simulation result metadata of one artifact.',
    input: { path: { ...runPath, artifact_id: id('art') } },
  },
];
