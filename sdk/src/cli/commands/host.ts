import type { Silico } from '../../client.ts';
import type { HostingView } from '../../resources/hosting.ts';
import { EXIT, UsageError, table, type Out } from '../output.ts';

/** `silico host plan|request|status|pause|resume|retire`: a lab's standing deployment. */

export interface HostPlanFlags { release: string; sha256?: string; profile?: string; min?: number; max?: number; visibility?: 'private' | 'team' | 'public' }

/** The hosting plan's body from the flags; the digest bound from the Hub when not given. */
async function planBody(client: Silico, f: HostPlanFlags) {
  if (!f.release.includes('@')) throw new UsageError('--release takes the exact release: <namespace>/<name>@<version>');
  if (f.visibility && !['private', 'team', 'public'].includes(f.visibility)) throw new UsageError('--visibility is private, team or public');
  const sha256 = f.sha256 ?? (await client.hub.inspect(f.release)).package_sha256.replace(/^sha256:/, '');
  return {
    release: { reference: f.release, sha256 },
    ...(f.profile ? { compute_profile_id: f.profile } : {}),
    ...(f.min === undefined ? {} : { min_instances: f.min }),
    ...(f.max === undefined ? {} : { max_instances: f.max }),
    ...(f.visibility ? { visibility: f.visibility } : {}),
  };
}

/** A hosting as people read it: status, revision, release, approval and each check. */
function hostingText(h: HostingView): string {
  return [
    `hosting of ${h.lab_id}  ${h.status}  revision ${h.revision}${h.pending_action ? `  (${h.pending_action} pending)` : ''}`,
    `release ${h.release.reference}  sha256:${h.release.sha256}`,
    `approval ${h.approval.required ? `required: ${h.approval.decision ?? 'awaiting the operator'}` : 'not required'}`,
    table(h.checks.map((c) => ({ check: c.check, status: c.status, detail: c.detail })), ['check', 'status', 'detail']),
  ].join('\n');
}

export async function hostPlan(client: Silico, labId: string, flags: HostPlanFlags, out: Out): Promise<number> {
  const plan = await client.hosting.prepare(labId, await planBody(client, flags) as never) as unknown as Record<string, any>;
  out.result(plan, () => [
    `hosting plan ${plan.plan_id}  ${plan.status}  sha256 ${plan.plan_sha256}  expires ${plan.expires_at}`,
    `release ${plan.release.reference}  instances ${plan.compute.min_instances}-${plan.compute.max_instances} of ${plan.compute.profile}  visibility ${plan.visibility}`,
    `cost: ${plan.cost.caveat}`,
    `approval: ${plan.approval.required ? `an operator reviews it (${plan.approval.reasons.join(', ')})` : 'not required'}`,
    plan.findings?.length ? table(plan.findings, ['severity', 'code', 'message']) : '',
  ].filter(Boolean).join('\n'));
  return plan.status === 'ready' ? EXIT.ok : EXIT.usage;
}

export async function hostRequest(client: Silico, labId: string, flags: HostPlanFlags & { wait?: boolean; timeoutMs?: number }, out: Out): Promise<number> {
  let h = await client.hosting.request(labId, await planBody(client, flags) as never);
  out.note(`hosting requested: ${h.status} (a recorded request is not a ready deployment)`);
  if (flags.wait) h = await client.hosting.waitFor(labId, ['ready', 'awaiting_review'], { timeoutMs: flags.timeoutMs });
  out.result(h, () => hostingText(h));
  return EXIT.ok;
}

export async function hostStatus(client: Silico, labId: string, out: Out): Promise<number> {
  const h = await client.hosting.get(labId) as unknown as HostingView;
  out.result(h, () => hostingText(h));
  return ['failed', 'rejected'].includes(h.status) ? EXIT.runFailed : EXIT.ok;
}

const SETTLED = { pause: 'paused', resume: 'ready', retire: 'retired' } as const;

export async function hostChange(client: Silico, labId: string, action: 'pause' | 'resume' | 'retire', flags: { revision?: number; wait?: boolean; timeoutMs?: number }, out: Out): Promise<number> {
  let h = await client.hosting[action](labId, { revision: flags.revision });
  out.note(`${action} recorded at revision ${h.revision}; the deployment applies it shortly`);
  if (flags.wait) h = await client.hosting.waitFor(labId, action === 'retire' ? ['retired'] : [SETTLED[action]], { timeoutMs: flags.timeoutMs });
  out.result(h, () => hostingText(h));
  return EXIT.ok;
}
