import { workflowSearchAttributes } from '../../workflows/searchAttributes.ts';
import semver from 'semver';
import YAML from 'yaml';
import type { ToolDef, ToolContext } from './tool.ts';
import { str, obj, uuid, sha256Hex, id } from '../schemas/common.ts';
import { ApiError, errors } from '../errors.ts';
import { getRevision, getWorkspace } from '../../storage/db/workspaces.ts';
import { blobKey } from '../../storage/objects.ts';
import { createPlan, consumePlan, type Finding } from '../../storage/db/plans.ts';
import { approvedPlan, grantablePlan, planUnavailable, planUsed, planView, PLAN_TTL_SECONDS, resultOf } from '../plans.ts';
import { countGrantUse, grantRefusal, lockGrant } from '../../storage/db/publicationGrants.ts';
import type { Db } from '../../storage/db/knex.ts';
import { namingFindings } from '../workspaces/naming.ts';
import { unstorableProblem } from '../validation.ts';
import { checkInputs, contractOf } from '../contract.ts';
import { newId } from '../../storage/ids.ts';
import { getLabById } from '../../storage/db/labs.ts';
import { insertPublication, takenVersions } from '../../storage/db/publications.ts';
import { publicationWorkflowId, CONTROL_TASK_QUEUE } from '../../workflows/constants.ts';
import type { Tree } from '../../storage/trees.ts';
import { declaredIdentity } from '../../storage/labIdentity.ts';
import { readLabManifests } from '../../storage/labManifests.ts';
import { runtimePinFindings } from '../../storage/runtimePins.ts';

interface Proposal { [k: string]: unknown; workspace_id: string; revision_id: string; lab_id: string; namespace: string; name: string; version: string; release_notes: string; tree_sha256: string }

/**
 * A workflow grant stands in for the digest approval when it belongs to the caller's
 * account, is neither revoked nor expired, and covers this lab and version; its use is
 * counted in the publication's own transaction.
 */
async function useGrant(trx: Db, accountId: string, grantId: string, p: Proposal): Promise<void> {
  const grant = await lockGrant(trx, grantId, accountId);
  if (!grant) throw errors.notFound('grant_not_found', 'workflow grant', 'grant_id');
  const refusal = grantRefusal(grant, p.name, p.version);
  if (refusal) {
    throw new ApiError(409, refusal.code, `Workflow grant ${grant.id} cannot publish ${p.name}@${p.version}: ${refusal.reason}.`, 'grant_id', {
      lab_name: grant.lab_name, version_range: grant.version_range, reason: refusal.reason,
    });
  }
  await countGrantUse(trx, grant.id);
}


/**
 * A declared `package`/`version` against this release (the naming skill: releases are
 * `<namespace>/<lab>@<version>`, and the runtime's packer refuses an identity other than
 * the declared one): a package naming another lab or namespace, or another version, blocks.
 */
function identityFindings(manifest: unknown, release: { namespace: string; name: string; version: string }): Finding[] {
  const declared = declaredIdentity(manifest);
  const findings: Finding[] = [];
  if (declared.package) {
    const ns = declared.package.includes('/') ? declared.package.split('/')[0] : undefined;
    if (ns && ns !== release.namespace) {
      findings.push({ severity: 'blocking', code: 'package_namespace_mismatch', message: `lab.yaml declares package ${declared.package}, in namespace ${ns}; this release is published in ${release.namespace}. Declare ${release.name} (or ${release.namespace}/${release.name}).`, path: 'lab.yaml#/package' });
    } else if (declared.name !== release.name) {
      findings.push({ severity: 'blocking', code: 'package_mismatch', message: `lab.yaml declares package ${declared.package}, but this lab is ${release.namespace}/${release.name} and its releases are addressed by that name. Declare package ${release.name}, or remove it.`, path: 'lab.yaml#/package' });
    } else {
      findings.push({ severity: 'info', code: 'package_declared', message: `Packed under the declared package ${declared.package}.`, path: 'lab.yaml#/package' });
    }
  }
  if (declared.version && declared.version !== release.version) {
    findings.push({ severity: 'blocking', code: 'version_mismatch', message: `lab.yaml declares version ${declared.version}; publish it as ${declared.version}, or change the version in lab.yaml first.`, path: 'version' });
  }
  return findings;
}

/** Findings a release candidate gets without running anything: manifest, identity, entrypoints, runtime pins, version, smoke inputs. */
async function staticFindings(ctx: ToolContext, tree: Tree, release: { namespace: string; name: string; version: string }, taken: string[]): Promise<Finding[]> {
  const { version } = release;
  const text = async (p: string) => (tree[p] ? (await ctx.deps.objects.getBytes(blobKey(tree[p]!.sha256))).toString('utf8') : undefined);
  const labYaml = await text('lab.yaml');
  const findings = namingFindings(undefined, labYaml);
  if (!semver.valid(version)) findings.push({ severity: 'blocking', code: 'version_invalid', message: `${version} is not a semantic version (e.g. 1.0.0).`, path: 'version' });
  else if (taken.includes(version)) findings.push({ severity: 'blocking', code: 'version_exists', message: `${version} is already released (releases are immutable).`, path: 'version' });
  else {
    const last = taken.filter((v) => semver.valid(v)).sort(semver.rcompare)[0];
    if (last && !semver.gt(version, last)) findings.push({ severity: 'blocking', code: 'version_not_greater', message: `${version} must be greater than the last release, ${last}.`, path: 'version' });
  }
  let manifest: any;
  try {
    manifest = labYaml ? YAML.parse(labYaml) : undefined;
  } catch {
    manifest = undefined;
  }
  // namingFindings has reported a manifest Postgres could not store; nothing of it is quoted further.
  if (!manifest || unstorableProblem(manifest)) return findings;
  findings.push(...identityFindings(manifest, release));
  // Publishing packs with the runtime and smoke-runs it: what the runtime cannot satisfy blocks here already.
  findings.push(...runtimePinFindings(ctx.deps.runtimeLock, await readLabManifests(ctx.deps.objects, tree, manifest)));
  for (const [i, m] of ((manifest.models ?? []) as Array<{ path?: string }>).entries()) {
    const dir = String(m?.path ?? '').replace(/\/+$/, '');
    const modelYaml = await text(`${dir}/model.yaml`);
    if (!modelYaml) {
      findings.push({ severity: 'blocking', code: 'model_missing', message: `No ${dir}/model.yaml for models[${i}].`, path: `lab.yaml#/models/${i}/path` });
      continue;
    }
    let entry: string | undefined;
    try {
      entry = YAML.parse(modelYaml)?.biosim?.entrypoint;
    } catch {
      entry = undefined;
    }
    const module = typeof entry === 'string' ? entry.split(':')[0]! : '';
    if (!module || !/^[A-Za-z_][\w.]*:[A-Za-z_]\w*$/.test(entry!)) {
      findings.push({ severity: 'blocking', code: 'entrypoint_invalid', message: `${dir}/model.yaml needs biosim.entrypoint "module.path:Class".`, path: `${dir}/model.yaml#/biosim/entrypoint` });
    } else if (!tree[`${dir}/${module.replaceAll('.', '/')}.py`]) {
      findings.push({ severity: 'blocking', code: 'entrypoint_missing', message: `${dir}/${module.replaceAll('.', '/')}.py (entrypoint ${entry}) is not in the revision.`, path: `${dir}/model.yaml#/biosim/entrypoint` });
    }
  }
  const smoke = manifest.smoke?.inputs;
  if (smoke) {
    const { unknown, findings: bad } = checkInputs({ inputs: contractOf(manifest).inputs, manifest }, smoke);
    for (const u of unknown) findings.push({ severity: 'blocking', code: 'unknown_inputs', message: `smoke.inputs.${u} is not a declared input.`, path: `lab.yaml#/smoke/inputs/${u}` });
    findings.push(...bad.map((f) => ({ ...f, path: `lab.yaml#/smoke/${f.path}` })));
    findings.push({ severity: 'info', code: 'smoke_run_at_publication', message: 'The smoke inputs run when publishing (no charge); a failure publishes nothing.', path: 'lab.yaml#/smoke' });
  } else {
    findings.push({ severity: 'warning', code: 'smoke_not_declared', message: 'No smoke inputs: the release will be unqualified.', path: 'lab.yaml#/smoke' });
  }
  findings.push({ severity: 'info', code: 'package_checked_at_publication', message: 'Publishing packs the revision twice with the runtime and requires the same digest.', path: null });
  return findings;
}

export const publicationTools: ToolDef[] = [
  {
    name: 'publish_prepare', scope: 'packages:publish', readOnly: true,
    description: 'Validate and digest a release candidate; never publishes.',
    input: { body: obj({ workspace_id: uuid, revision_id: uuid, version: str(64, { minLength: 1 }), release_notes: str(10000) }, ['workspace_id', 'revision_id', 'version']) },
    async handler(input, ctx) {
      const ws = await getWorkspace(ctx.deps.db, input.workspace_id, ctx.caller.account.id);
      if (!ws) throw errors.notFound('workspace_not_found', 'workspace', 'workspace_id');
      const rev = await getRevision(ctx.deps.db, ws.id, input.revision_id);
      if (!rev) throw errors.notFound('revision_not_found', 'revision', 'revision_id');
      const lab = (await getLabById(ctx.deps.db, ws.lab_id))!;
      const namespace = ctx.caller.account.namespace;
      const findings = await staticFindings(ctx, rev.tree, { namespace, name: lab.name, version: input.version }, await takenVersions(ctx.deps.db, namespace, lab.name));
      const proposal: Proposal = { workspace_id: ws.id, revision_id: rev.id, lab_id: lab.id, namespace, name: lab.name, version: input.version, release_notes: input.release_notes ?? '', tree_sha256: rev.tree_sha256 };
      const plan = await createPlan(ctx.deps.db, { accountId: ctx.caller.account.id, kind: 'publication', proposal, findings, ttlSeconds: PLAN_TTL_SECONDS });
      return {
        body: { object: 'publication_plan', ...planView(plan), reference: `${namespace}/${lab.name}@${input.version}` },
        next_actions: plan.status === 'ready' ? [{ tool: 'publish_execute', description: 'After the user approves, publish exactly this release.', arguments: { plan_id: plan.id, plan_sha256: plan.plan_sha256 } }] : [],
      };
    },
  },
  {
    name: 'publish_execute', scope: 'packages:publish', readOnly: false, idempotent: true,
    description: 'Publish a plan: approved by its exact digest {plan_id, plan_sha256}, or by a matching workflow grant {plan_id, grant_id} that an operator issued for an automated pipeline. Packs and smoke-tests it, then records the immutable release.',
    input: {
      body: obj({ plan_id: uuid, plan_sha256: sha256Hex, grant_id: id('grant') }, ['plan_id'], {
        oneOf: [{ required: ['plan_sha256'] }, { required: ['grant_id'] }],
      }),
    },
    async handler(input, ctx) {
      const plan = input.grant_id
        ? await grantablePlan(ctx.deps.db, ctx.caller.account.id, 'publication', input.plan_id)
        : await approvedPlan(ctx.deps.db, ctx.caller.account.id, 'publication', input.plan_id, input.plan_sha256);
      const p = plan.proposal as Proposal;
      const id = newId('pub');
      const approval = input.grant_id ? { kind: 'workflow_grant', grant_id: input.grant_id } : { kind: 'plan_digest', plan_sha256: plan.plan_sha256 };
      await ctx.deps.db.transaction(async (trx) => {
        if (input.grant_id) await useGrant(trx, ctx.caller.account.id, input.grant_id, p);
        if (!(await consumePlan(trx, plan.id, `publication:${id}`))) throw planUsed(await resultOf(ctx.deps.db, ctx.caller.account.id, plan.id));
        if ((await takenVersions(trx, p.namespace, p.name)).includes(p.version)) {
          throw planUnavailable(`${p.version} was released since this plan was prepared.`, null);
        }
        await insertPublication(trx, {
          id, account_id: ctx.caller.account.id, plan_id: plan.id, lab_id: p.lab_id, revision_id: p.revision_id,
          namespace: p.namespace, name: p.name, version: p.version, release_notes: p.release_notes, approval,
        });
        // Started before the transaction commits: if Temporal cannot take it, the plan is
        // not consumed, the version not taken, the answer is 503 and a retry publishes.
        await ctx.deps.temporal.startWorkflow('publicationWorkflow', {
          taskQueue: CONTROL_TASK_QUEUE, workflowId: publicationWorkflowId(id), args: [{ publicationId: id }],
          typedSearchAttributes: workflowSearchAttributes({ account: ctx.caller.account.id, kind: 'publication', ref: `${p.namespace}/${p.name}@${p.version}` }),
        });
      });
      const reference = `${p.namespace}/${p.name}@${p.version}`;
      return {
        body: { object: 'publication', publication_id: id, status: 'publishing', reference, approval },
        next_actions: [{ tool: 'hub_inspect', description: 'The release appears here once packing and the smoke run pass.', arguments: { reference } }],
      };
    },
  },
];
