import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import { listOf } from '../../storage/labContract.ts';
import path from 'node:path';
import { runtimeFormatFindings } from '../workspaces/formatFindings.ts';
import { parseManifestText } from '../../storage/labManifests.ts';
import semver from 'semver';
import { choose, type ToolDef, type ToolContext } from '../tools/tool.ts';
import { str, obj, uuid, digestInput, id } from '../schemas/common.ts';
import { publication, publicationPlan } from './schemas.ts';
import { publicationNextSteps, publicationView, type PublicationOf } from './view.ts';
import { ApiError, errors } from '../errors.ts';
import { getRevision, getRevisionById, getWorkspace } from '../../storage/db/workspaces.ts';
import { blobKey } from '../../storage/objects.ts';
import { createPlan, consumePlan, type Finding } from '../../storage/db/plans.ts';
import { approvedPlan, grantablePlan, planUnavailable, planUsed, planView, PLAN_TTL_SECONDS, resultOf } from '../plans.ts';
import { countGrantUse, grantRefusal, lockGrant } from '../../storage/db/publicationGrants.ts';
import type { Db } from '../../storage/db/knex.ts';
import { namingFindings, parseLabYaml } from '../workspaces/naming.ts';
import { adoptDeclaredName, declaredName, declaredNameFindings } from '../workspaces/identity.ts';
import { labYamlOf } from '../../storage/labManifests.ts';
import { checkInputs, contractOf, listDeclaredInputs } from '../../storage/inputChecks.ts';
import { newId } from '../../storage/ids.ts';
import { getLabById, type LabRow } from '../../storage/db/labs.ts';
import { getPublication, insertPublication, takenVersions } from '../../storage/db/publications.ts';
import { publicationWorkflowId, CONTROL_TASK_QUEUE } from '../../kernel/workflowNames.ts';
import type { Tree } from '../../storage/trees.ts';
import { declaredIdentity } from '../../storage/labIdentity.ts';
import { readLabManifests } from '../../storage/labManifests.ts';
import { pastDay, planEnvironment } from '../runs/environment.ts';
import { environmentAsOf } from '../runs/schemas.ts';
import { publicationWorkflow } from '../../workflows/publication.ts';

interface Proposal {
  [k: string]: unknown; workspace_id: string; revision_id: string; lab_id: string; namespace: string; name: string; version: string; release_notes: string; tree_sha256: string;
  /** The lab's own environment it is packed and smoke-run in (absent: the default runtime). */
  environment_lock_sha256?: string;
}

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


/** A declared `version` must be the release's (the runtime's packer refuses another). */
function versionFindings(manifest: unknown, version: string): Finding[] {
  const declared = declaredIdentity(manifest).version;
  if (!declared || declared === version) return [];
  return [{ severity: 'blocking', code: 'version_mismatch', message: `lab.yaml declares version ${declared}; publish it as ${declared}, or change the version in lab.yaml first.`, path: 'version' }];
}

const textOf = async (ctx: ToolContext, tree: Tree, p: string) => (tree[p] ? (await ctx.deps.objects.getBytes(blobKey(tree[p]!.sha256))).toString('utf8') : undefined);

/** Findings a release candidate gets without running anything: manifest, identity, entrypoints, runtime pins, version, smoke inputs. */
async function staticFindings(ctx: ToolContext, tree: Tree, labYaml: { text?: string; manifest?: any }, version: string, identity: Finding[], taken: string[], asOf?: string): Promise<{ findings: Finding[]; environmentLock?: string }> {
  const manifest = labYaml.manifest;
  const findings = namingFindings(undefined, labYaml.text);
  if (!semver.valid(version)) findings.push({ severity: 'blocking', code: 'version_invalid', message: `${version} is not a semantic version (e.g. 1.0.0).`, path: 'version' });
  else if (taken.includes(version)) findings.push({ severity: 'blocking', code: 'version_exists', message: `${version} is already released (releases are immutable).`, path: 'version' });
  else {
    const last = taken.filter((v) => semver.valid(v)).sort(semver.rcompare)[0];
    if (last && !semver.gt(version, last)) findings.push({ severity: 'blocking', code: 'version_not_greater', message: `${version} must be greater than the last release, ${last}.`, path: 'version' });
  }
  // namingFindings has reported a manifest that does not parse or that Postgres could not store; nothing of it is quoted further.
  if (!manifest) return { findings };
  findings.push(...identity, ...versionFindings(manifest, version), ...await runtimeFormatFindings(ctx.deps, tree, 'blocking'));
  // Publishing packs with the runtime and smoke-runs it: what the runtime cannot satisfy blocks here already.
  // Publishing packs and smoke-runs it in the environment its runs get: what none can give blocks here already.
  const runtime = await planEnvironment(ctx.deps, await readLabManifests(ctx.deps.objects, tree, manifest), asOf);
  findings.push(...runtime.findings);
  const environmentLock = runtime.environment && runtime.environment.lock_sha256 !== ctx.deps.runtimeLock.sha256 ? runtime.environment.lock_sha256 : undefined;
  // The runtime judged the manifests above; what it cannot see from them is whether the
  // module an entrypoint names is in the revision (it would fail only when the smoke run loads it).
  for (const m of listOf((manifest.models ?? []) as Array<{ path?: unknown }>)) {
    if (typeof m?.path !== 'string') continue;
    const dir = path.posix.normalize(m.path).replace(/^\.\/|\/+$/g, '');
    const modelYaml = await textOf(ctx, tree, `${dir}/model.yaml`);
    let entry: unknown;
    try {
      entry = modelYaml === undefined ? undefined : parseManifestText(modelYaml)?.biosim?.entrypoint;
    } catch {
      entry = undefined;
    }
    if (typeof entry !== 'string' || !entry.trim()) continue;
    // As the runtime splits it: `module:attr`, else `module.attr`.
    const module = entry.includes(':') ? entry.split(':')[0]! : entry.slice(0, Math.max(0, entry.lastIndexOf('.')));
    const file = `${dir}/${module.replaceAll('.', '/')}`;
    if (module && !tree[`${file}.py`] && !tree[`${file}/__init__.py`]) {
      findings.push({ severity: 'blocking', code: 'entrypoint_missing', message: `${file}.py (entrypoint ${entry}) is not in the revision.`, path: `${dir}/model.yaml#/biosim/entrypoint` });
    }
  }
  const smoke = manifest.smoke?.inputs;
  if (smoke) {
    const contracted = { inputs: contractOf(manifest).inputs, manifest };
    const { unknown, findings: bad } = checkInputs(contracted, smoke);
    const { sentence } = listDeclaredInputs(contracted);
    for (const u of unknown) findings.push({ severity: 'blocking', code: 'unknown_inputs', message: `smoke.inputs.${u} is not a declared input. ${sentence}`, path: `lab.yaml#/smoke/inputs/${u}` });
    findings.push(...bad.map((f) => ({ ...f, path: `lab.yaml#/smoke/${f.path}` })));
    findings.push({ severity: 'info', code: 'smoke_run_at_publication', message: 'The smoke inputs run when publishing (no charge); a failure publishes nothing.', path: 'lab.yaml#/smoke' });
  } else {
    findings.push({ severity: 'warning', code: 'smoke_not_declared', message: 'No smoke inputs: the release will be unqualified.', path: 'lab.yaml#/smoke' });
  }
  findings.push({ severity: 'info', code: 'package_checked_at_publication', message: 'Publishing packs the revision twice with the runtime and requires the same digest.', path: null });
  return { findings, environmentLock };
}

/**
 * The release takes the lab's visibility when it is recorded (activities/publication.ts),
 * so the plan states it and says how to change it; it is not part of what is approved.
 */
function visibilityFinding(lab: LabRow): Finding {
  return {
    severity: 'info', code: 'release_visibility',
    message: `The release will be ${lab.visibility}: it takes the lab's visibility when it is recorded. lab_visibility_set changes it for the lab and all its releases, before or after publishing.`,
    path: null,
  };
}

/** The caller's publication with its revision's workspace; another account's is as missing as none. */
async function ownedPublication(ctx: ToolContext, id: string): Promise<PublicationOf> {
  const p = await getPublication(ctx.deps.db, id);
  if (!p || p.account_id !== ctx.caller.account.id) throw errors.notFound('publication_not_found', 'publication', 'publication_id');
  return { ...p, workspace_id: (await getRevisionById(ctx.deps.db, p.revision_id))!.workspace_id };
}

export const publicationTools: ToolDef[] = [
  {
    name: 'publish_prepare', scope: 'packages:publish', readOnly: true,
    description: 'Validate and digest a release candidate; never publishes.',
    input: { body: obj({ workspace_id: uuid, revision_id: uuid, version: str(64, { minLength: 1 }), release_notes: str(10000), environment_as_of: environmentAsOf }, ['workspace_id', 'revision_id', 'version']) },
    output: publicationPlan,
    async handler(input, ctx) {
      const ws = await getWorkspace(ctx.deps.db, input.workspace_id, ctx.caller.account.id);
      if (!ws) throw errors.notFound('workspace_not_found', 'workspace', 'workspace_id');
      const rev = await getRevision(ctx.deps.db, ws.id, input.revision_id);
      if (!rev) throw errors.notFound('revision_not_found', 'revision', 'revision_id');
      const lab = (await getLabById(ctx.deps.db, ws.lab_id))!;
      const namespace = ctx.caller.account.namespace;
      const text = await textOf(ctx, rev.tree, 'lab.yaml');
      const { manifest } = parseLabYaml(text);
      // The release's name: the lab's, or the package it declares while it has no release.
      const declared = await declaredName(ctx.deps.db, lab, namespace, manifest);
      const name = declared.kind === 'adopt' ? declared.name : lab.name;
      const identity = [
        ...declaredNameFindings(declared, { name: lab.name, namespace }, 'publication'),
        ...(declared.kind === 'same' && declaredIdentity(manifest).package ? [{ severity: 'info' as const, code: 'package_declared', message: `Packed under the declared package ${declaredIdentity(manifest).package}.`, path: 'lab.yaml#/package' }] : []),
      ];
      const { findings, environmentLock } = await staticFindings(ctx, rev.tree, { text, manifest }, input.version, identity, await takenVersions(ctx.deps.db, namespace, name), pastDay(input.environment_as_of, 'environment_as_of'));
      findings.push(visibilityFinding(lab));
      const proposal: Proposal = {
        workspace_id: ws.id, revision_id: rev.id, lab_id: lab.id, namespace, name, version: input.version, release_notes: input.release_notes ?? '', tree_sha256: rev.tree_sha256,
        ...(environmentLock ? { environment_lock_sha256: environmentLock } : {}),
      };
      const plan = await createPlan(ctx.deps.db, { accountId: ctx.caller.account.id, kind: 'publication', proposal, findings, ttlSeconds: PLAN_TTL_SECONDS });
      return {
        body: { object: 'publication_plan', ...planView(plan), reference: `${namespace}/${name}@${input.version}`, visibility: lab.visibility },
        next_actions: [
          ...(plan.status === 'ready' ? [{ tool: 'publish_execute', description: 'After the user approves, publish exactly this release.', arguments: { plan_id: plan.id, plan_sha256: plan.plan_sha256 } }] : []),
          { tool: 'lab_visibility_set', description: `The release will be ${lab.visibility}, as the lab is; to release it otherwise, change the lab's visibility (its releases follow).`, arguments: { lab_id: lab.id, visibility: choose('private, team or public') } },
        ],
      };
    },
  },
  {
    name: 'publish_execute', scope: 'packages:publish', readOnly: false, idempotent: true,
    description: 'Publish a plan: approved by its exact digest {plan_id, plan_sha256}, or by a matching workflow grant {plan_id, grant_id} that an operator issued for an automated pipeline. Packs and smoke-tests it, then records the immutable release; answers `publishing` at once (follow it with publication_get).',
    input: {
      body: obj({ plan_id: uuid, plan_sha256: digestInput, grant_id: id('grant') }, ['plan_id'], {
        oneOf: [{ required: ['plan_sha256'] }, { required: ['grant_id'] }],
      }),
    },
    output: publication,
    async handler(input, ctx) {
      const plan = input.grant_id
        ? await grantablePlan(ctx.deps.db, ctx.caller.account.id, 'publication', input.plan_id)
        : await approvedPlan(ctx.deps.db, ctx.caller.account.id, 'publication', input.plan_id, input.plan_sha256);
      const p = plan.proposal as Proposal;
      const id = newId('pub');
      const approval = input.grant_id ? { kind: 'workflow_grant', grant_id: input.grant_id } : { kind: 'plan_digest', plan_sha256: plan.plan_sha256 };
      const rev = await getRevision(ctx.deps.db, p.workspace_id, p.revision_id);
      const manifest = rev ? await labYamlOf(ctx.deps.objects, rev.tree) : undefined;
      await ctx.deps.db.transaction(async (trx) => {
        if (input.grant_id) await useGrant(trx, ctx.caller.account.id, input.grant_id, p);
        if (!(await consumePlan(trx, plan.id, `publication:${id}`))) throw planUsed(await resultOf(ctx.deps.db, ctx.caller.account.id, plan.id));
        // The lab's name now (a change may have renamed it since): a plan for another name is stale.
        const now = await adoptDeclaredName(trx, p.lab_id, p.namespace, manifest);
        if (now !== p.name) throw planUnavailable(`The lab is named ${now} since this plan was prepared for ${p.name}; prepare it again.`, null);
        if ((await takenVersions(trx, p.namespace, p.name)).includes(p.version)) {
          throw planUnavailable(`${p.version} was released since this plan was prepared.`, null);
        }
        await insertPublication(trx, {
          id, account_id: ctx.caller.account.id, plan_id: plan.id, lab_id: p.lab_id, revision_id: p.revision_id,
          namespace: p.namespace, name: p.name, version: p.version, release_notes: p.release_notes, approval, environment_lock_sha256: p.environment_lock_sha256 ?? null,
        });
        // Started before the transaction commits: if Temporal cannot take it, the plan is
        // not consumed, the version not taken, the answer is 503 and a retry publishes.
        await ctx.deps.temporal.startWorkflow(publicationWorkflow, {
          taskQueue: CONTROL_TASK_QUEUE, workflowId: publicationWorkflowId(id), args: [{ publicationId: id }],
          ...workflowMetadata(ctx.deps.config.baseUrl, {
            attributes: { account: ctx.caller.account.id, kind: 'publication', ref: `${p.namespace}/${p.name}@${p.version}` },
            summary: `publication of ${p.namespace}/${p.name}@${p.version} for ${ctx.caller.account.id}`,
            facts: [`Publication ${id} of lab ${p.lab_id}, revision ${p.revision_id}: packed, smoke-run, then released.`],
            resource: `/hub/releases/${p.namespace}/${p.name}@${p.version}`,
            page: `hub/${p.namespace}/${p.name}/${p.version}`,
          }),
        });
      });
      const accepted = await ownedPublication(ctx, id);
      return { body: publicationView(accepted), next_actions: publicationNextSteps(accepted) };
    },
  },
  {
    name: 'publication_get', scope: 'packages:publish', readOnly: true,
    description: 'Follow a publication publish_execute started: publishing, then published (with its release) or failed (with why).',
    input: { path: { publication_id: id('pub') } },
    output: publication,
    async handler(input, ctx) {
      const p = await ownedPublication(ctx, input.publication_id);
      return { body: publicationView(p), next_actions: publicationNextSteps(p) };
    },
  },
];
