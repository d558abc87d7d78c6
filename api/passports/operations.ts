import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import { WorkflowFailedError } from '@temporalio/client';
import type { ToolContext, ToolDef, ToolResult } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import { nullableStr, obj, arr } from '../schemas/common.ts';
import { passport, passportKey } from '../schemas/passport.ts';
import { ownedSubject, passportRequest } from './request.ts';
import { getPassport, listPassportKeys, type PassportRow } from '../../storage/db/passports.ts';
import { isoTime, newId } from '../../storage/ids.ts';
import { CONTROL_TASK_QUEUE, passportWorkflowId } from '../../kernel/workflowNames.ts';
import type { PassportSubject } from '../../storage/passportDocument.ts';
import { passportWorkflow } from '../../workflows/passport.ts';

const NOT_A_SCORE = {
  code: 'not_validation',
  message: 'A passport reviews evidence check by check, each with its own status; it has no overall score and is not scientific validation.',
};

/** The stored passport exactly as signed (its text parsed, nothing added inside it). */
function passportResult(row: PassportRow): ToolResult {
  return {
    body: JSON.parse(row.document),
    warnings: [NOT_A_SCORE],
    next_actions: [{ tool: 'passport_keys_list', description: 'The public keys to verify the signature offline (RFC 8785 canonical JSON of the passport without `signature`).', arguments: {} }],
  };
}

/**
 * Builds a new passport of an owned subject: the passport workflow re-derives every
 * check's evidence now, signs and stores it; this waits for it within the configured
 * deadline (then 503: the build goes on and is stored, a retry builds another).
 */
async function buildPassport(ctx: ToolContext, subject: PassportSubject): Promise<PassportRow> {
  const { ref } = await ownedSubject(ctx, subject);
  const passportId = newId('pp');
  const accountId = ctx.caller.account.id;
  try {
    await ctx.deps.temporal.executeWorkflow(passportWorkflow, {
      taskQueue: CONTROL_TASK_QUEUE, workflowId: passportWorkflowId(passportId), args: [{ passportId, accountId, subject }],
      ...workflowMetadata(ctx.deps.config.baseUrl, {
        attributes: { account: accountId, kind: 'passport', ref },
        summary: `passport of ${subject.kind === 'run' ? `run ${subject.run_id}` : subject.kind === 'experiment' ? `experiment ${subject.experiment_id}` : `revision ${subject.revision_id}`} (${ref}) for ${accountId}`,
        facts: [`Passport ${passportId}: every check's evidence derived again, then signed and stored.`],
        resource: `/passports?passport_id=${passportId}`,
      }),
    }, ctx.deps.config.passports.buildTimeoutMs);
  } catch (err) {
    if (err instanceof WorkflowFailedError) throw errors.internal('passport_build_failed', 'The passport could not be built and signed; nothing was stored.');
    throw err;
  }
  return (await getPassport(ctx.deps.db, passportId, accountId))!;
}

export const passportTools: ToolDef[] = [
  {
    name: 'passport_get', scope: 'passports:read', readOnly: true,
    description: 'Return a signed per-check evidence passport for exactly one owned subject (not a validity score). With run_id, experiment_id (a study: its design, dataset version, every run and the analysis libraries), or workspace_id and revision_id, a new passport is built from evidence re-derived now (artifacts re-hashed from the store); with passport_id, a stored one is returned exactly as signed.',
    input: {
      query: {
        passport_id: nullableStr(64), run_id: { type: ['string', 'null'], format: 'uuid' }, experiment_id: nullableStr(64),
        workspace_id: { type: ['string', 'null'], format: 'uuid' }, revision_id: { type: ['string', 'null'], format: 'uuid' },
      },
    },
    output: passport,
    async handler(input, ctx) {
      const asked = passportRequest(input);
      if ('subject' in asked) return passportResult(await buildPassport(ctx, asked.subject));
      const row = await getPassport(ctx.deps.db, asked.passportId, ctx.caller.account.id);
      if (!row) throw errors.notFound('passport_not_found', 'passport', 'passport_id');
      return passportResult(row);
    },
  },
  {
    name: 'passport_keys_list', scope: 'passports:read', readOnly: true,
    description: 'List the public keys that sign passports (Ed25519, PEM), with when each was created and retired: a retired key signs nothing new, and what it signed stays verifiable offline.',
    input: {},
    output: obj({ items: arr(passportKey) }, ['items']),
    async handler(_input, ctx) {
      const keys = await listPassportKeys(ctx.deps.db);
      return {
        body: { items: keys.map((k) => ({ key_id: k.key_id, alg: k.alg, public_key_pem: k.public_key_pem, created_at: isoTime(k.created_at), retired_at: isoTime(k.retired_at) })) },
      };
    },
  },
];
