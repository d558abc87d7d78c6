import type { ToolDef } from './tool.ts';
import { str, obj, sha256Hex, planExecute, id } from '../schemas/common.ts';

export const hostingTools: ToolDef[] = [
  {
    name: 'hosting_get', scope: 'runs:read', readOnly: true,
    description: "Read an owned lab's hosting approval, exact release, deployment checks and status.",
    input: { path: { lab_id: id('lab') } },
  },
  {
    name: 'hosting_update', scope: 'runs:write', readOnly: false, destructive: true,
    description: 'Record an authorized hosting lifecycle change (pause, resume, retire); workers apply it asynchronously.',
    input: { path: { lab_id: id('lab') }, body: obj({ revision: { type: 'integer', minimum: 0 }, action: { enum: ['pause', 'resume', 'retire'] } }, ['revision', 'action']) },
  },
  {
    name: 'hosting_prepare', scope: 'runs:write', readOnly: true,
    description: 'Validate and digest an exact hosting request; no hosting compute starts.',
    input: {
      path: { lab_id: id('lab') },
      body: obj({
        release: obj({ reference: str(300), sha256: sha256Hex }, ['reference', 'sha256']),
        compute_profile_id: str(64), min_instances: { type: 'integer', minimum: 0, maximum: 10 },
        max_instances: { type: 'integer', minimum: 1, maximum: 10 }, visibility: { enum: ['private', 'team', 'public'] },
      }, ['release']),
    },
  },
  {
    name: 'hosting_execute', scope: 'runs:write', readOnly: false, idempotent: true,
    description: 'Execute an approved hosting plan through the existing hosted-lab lifecycle.',
    input: { body: planExecute },
  },
  {
    name: 'hosted_release_get', scope: 'runs:read', readOnly: true,
    description: 'Read accessible hosting inputs and bounds without exposing private smoke fixtures.',
    input: { path: { reference: str(300) }, query: { sha256: sha256Hex }, requiredQuery: ['sha256'] },
  },
  {
    name: 'hosted_invocation_prepare', scope: 'runs:write', readOnly: true,
    description: 'Bind input identities, deployment, account, expiry and compute bounds; no execution starts.',
    input: { body: obj({ reference: str(300), sha256: sha256Hex, inputs: { type: 'object' } }, ['reference', 'sha256']) },
  },
  {
    name: 'hosted_invocation_execute', scope: 'runs:write', readOnly: false, idempotent: true,
    description: 'Recheck permissions and inputs, then enqueue once in the hosted worker.',
    input: { body: planExecute },
  },
  {
    name: 'hosted_invocation_get', scope: 'runs:read', readOnly: true,
    description: 'Read status, release and input identity, bounded result values; artifacts are retrieved separately.',
    input: { path: { invocation_id: id('inv') } },
  },
  {
    name: 'hosted_invocation_cancel', scope: 'runs:write', readOnly: false, idempotent: true, destructive: true,
    description: 'Record cancellation and revoke the lease; terminal invocations stay unchanged.',
    input: { path: { invocation_id: id('inv') } },
  },
  {
    name: 'hosted_invocation_artifact_get', scope: 'runs:read', readOnly: true,
    description: 'Retrieve immutable output identities and bytes; hash independently before interpreting.',
    input: { path: { invocation_id: id('inv'), port: str(100) }, query: { include_content: { type: 'boolean' } } },
  },
];
