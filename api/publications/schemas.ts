import { arr, endingError, finding, id, nullableTime, obj, planRecord, record, sha256Hex, str, time, uuid, VISIBILITIES, type JsonSchema } from '../schemas/common.ts';

/** A publication's life (storage/db/publications.ts, migration 010): a failed one frees its version again. */
export const PUBLICATION_STATUSES = ['publishing', 'published', 'failed'] as const;

/** How a publication was approved: the plan's exact digest, or an operator's standing workflow grant. */
export const APPROVAL_KINDS = ['plan_digest', 'workflow_grant'] as const;

const reference: JsonSchema = { ...str(300), description: 'The release it makes: `<namespace>/<name>@<version>`.' };

/** POST /publication-plans: a checked, digested release candidate (nothing is published yet). */
export const publicationPlan: JsonSchema = planRecord('publication_plan', {
  reference,
  visibility: {
    enum: [...VISIBILITIES],
    description: 'Who will see the release: the lab\'s visibility as it is when the release is recorded (private: this account; team: also its team\'s members; public: anyone). lab_visibility_set changes it for the lab and all its releases, before or after publishing.',
  },
});

/** The approval a publication records, as publish_execute answers it. */
export const publicationApproval: JsonSchema = {
  description: 'How it was approved: `plan_digest` with the approved digest, or `workflow_grant` with the grant used.',
  oneOf: [
    obj({ kind: { const: 'plan_digest' }, plan_sha256: sha256Hex }, ['kind', 'plan_sha256']),
    obj({ kind: { const: 'workflow_grant' }, grant_id: id('grant') }, ['kind', 'grant_id']),
  ],
};

/**
 * A publication as POST /publications answers it when accepted and GET
 * /publications/{publication_id} while it is followed (an MCP task of publish_execute
 * answers the same object at its end). The release exists only once packing and the smoke
 * run pass.
 */
export const publication: JsonSchema = record({
  object: { const: 'publication' },
  publication_id: id('pub'),
  status: { enum: [...PUBLICATION_STATUSES], description: '`publishing` while it is packed and smoke-run (follow it with publication_get); `published` once the release is recorded; `failed`: nothing was released, `error` says why and the version is free again.' },
  reference,
  release_id: { type: ['string', 'null'], description: 'The release it recorded (hub_inspect `reference` reads it); null unless `published`.' },
  workspace_id: { ...uuid, description: 'The workspace of the revision it publishes.' },
  revision_id: uuid,
  approval: publicationApproval,
  error: { oneOf: [{ type: 'null' }, endingError], description: 'Why it failed (the first blocking finding\'s code, every finding\'s message); null unless `failed`.' },
  findings: arr(finding, { description: 'What failed, with where to fix it (empty unless `failed`).' }),
  created_at: time,
  finished_at: { ...nullableTime, description: 'When it was published or failed; null while publishing.' },
});
