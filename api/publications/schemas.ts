import { arr, finding, id, obj, planRecord, sha256Hex, str, type JsonSchema } from '../schemas/common.ts';

/** A publication's life (storage/db/publications.ts, migration 010): a failed one frees its version again. */
export const PUBLICATION_STATUSES = ['publishing', 'published', 'failed'] as const;

/** How a publication was approved: the plan's exact digest, or an operator's standing workflow grant. */
export const APPROVAL_KINDS = ['plan_digest', 'workflow_grant'] as const;

const reference: JsonSchema = { ...str(300), description: 'The release it makes: `<namespace>/<name>@<version>`.' };

/** POST /publication-plans: a checked, digested release candidate (nothing is published yet). */
export const publicationPlan: JsonSchema = planRecord('publication_plan', { reference });

/** The approval a publication records, as publish_execute answers it. */
export const publicationApproval: JsonSchema = {
  description: 'How it was approved: `plan_digest` with the approved digest, or `workflow_grant` with the grant used.',
  oneOf: [
    obj({ kind: { const: 'plan_digest' }, plan_sha256: sha256Hex }, ['kind', 'plan_sha256']),
    obj({ kind: { const: 'workflow_grant' }, grant_id: id('grant') }, ['kind', 'grant_id']),
  ],
};

/**
 * POST /publications: accepted and on its way; the release exists only once packing and
 * the smoke run pass. An MCP task of publish_execute answers the same object at its end.
 */
export const publicationStarted: JsonSchema = obj({
  object: { const: 'publication' },
  publication_id: id('pub'),
  status: { enum: [...PUBLICATION_STATUSES], description: '`publishing` when POST /publications answers: follow the lab (lab_list) or hub_inspect for the outcome. An MCP task of publish_execute answers `published` or `failed` at its end.' },
  reference,
  approval: publicationApproval,
  findings: arr(finding, { description: 'Why a failed publication failed (only when `failed`).' }),
}, ['object', 'publication_id', 'status', 'reference', 'approval']);
