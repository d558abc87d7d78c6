import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { Silico } from '../../sdk/src/index.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import type { Db } from '../../storage/db/knex.ts';
import { makeAccount } from '../accounts.ts';
import { ADDED_SCOPES, SCOPES } from '../../storage/db/apiKeys.ts';
import { labFileOperations } from '../labFiles.ts';
import { WEBHOOK_EVENT_TYPES } from '../../storage/db/webhooks.ts';
import type { WebhookReceiver } from './receiver.ts';

export interface SoakAccount { id: string; key: string }

/** What the traffic needs: its accounts, and the hosted lab (also the studies' workspace). */
export interface SoakSetup {
  runner: SoakAccount;
  /** Owns the noisy-growth workspace its studies run, and its private hosting it invokes. */
  owner: SoakAccount;
  filer: SoakAccount;
  reader: SoakAccount;
  /** Buys compute (its key holds compute:buy); the provider's events are signed with `paymentsSecret`. */
  buyer: SoakAccount;
  paymentsSecret: string;
  lab: { workspaceId: string; revisionId: string; labId: string; reference: string; sha256: string };
}

const LAB = path.join(REPO_ROOT, 'test/fixtures/labs/noisy-growth');

/** A soak account: a key of every scope of the spec (and `extra` ones) and `usd` of compute. */
async function account(db: Db, name: string, usd: number, extra: readonly string[] = []): Promise<SoakAccount> {
  const made = await makeAccount(db, { namespace: `soak-${name}-${Date.now().toString(36)}`, usd, scopes: [...SCOPES, ...extra] });
  return { id: made.account.id, key: made.key };
}

/**
 * The soak's accounts and fixtures, made through the SDK as a customer would: the lab
 * authored in a workspace, published, hosted privately (one warm instance) and ready;
 * a webhook endpoint of every event type for each account that causes events.
 */
export async function setUp(db: Db, baseUrl: string, receiver: WebhookReceiver, receiverUrl: string, paymentsSecret: string): Promise<SoakSetup> {
  const [runner, owner, filer, reader, buyer] = await Promise.all([
    account(db, 'runner', 100_000), account(db, 'owner', 100_000), account(db, 'filer', 0), account(db, 'reader', 0), account(db, 'buyer', 0, ADDED_SCOPES),
  ]);
  const sdk = new Silico({ apiKey: owner.key, baseUrl });
  const ws = await sdk.workspaces.create({ title: 'Noisy growth (soak)' });
  const change = await sdk.workspaces.prepareChange(ws.workspace_id, { base_revision_id: ws.head_revision_id, operations: labFileOperations(LAB) });
  if (change.status !== 'ready') throw new Error(`the soak's lab does not change cleanly: ${JSON.stringify(change.findings)}`);
  const revision = await sdk.workspaces.applyChange({ plan_id: change.plan_id, plan_sha256: change.plan_sha256 });
  const pub = await sdk.publications.prepare({ workspace_id: ws.workspace_id, revision_id: revision.revision_id, version: '1.0.0' });
  if (pub.status !== 'ready') throw new Error(`the soak's lab does not publish: ${JSON.stringify(pub.findings)}`);
  await sdk.publications.execute({ plan_id: pub.plan_id, plan_sha256: pub.plan_sha256 });
  let sha256 = '';
  for (const deadline = Date.now() + 180_000; !sha256; await sleep(500)) {
    const res = await fetch(`${baseUrl}/hub/releases/${encodeURIComponent(pub.reference)}`, { headers: { Authorization: `Bearer ${owner.key}` } });
    if (res.ok) sha256 = String(((await res.json()) as { package_sha256: string }).package_sha256).replace(/^sha256:/, '');
    else if (Date.now() > deadline) throw new Error(`the soak's release ${pub.reference} was not published within 3 minutes`);
  }
  await sdk.hosting.request(ws.lab_id, { release: { reference: pub.reference, sha256 }, visibility: 'private', min_instances: 1, max_instances: 2 });
  await sdk.hosting.waitFor(ws.lab_id, ['ready'], { timeoutMs: 300_000 });
  for (const a of [runner, owner]) {
    const made = await new Silico({ apiKey: a.key, baseUrl }).webhooks.createEndpoint({ url: `${receiverUrl}/${a.id}`, events: [...WEBHOOK_EVENT_TYPES] });
    receiver.endpoint(a.id, made.secret);
  }
  return { runner, owner, filer, reader, buyer, paymentsSecret, lab: { workspaceId: ws.workspace_id, revisionId: revision.revision_id, labId: ws.lab_id, reference: pub.reference, sha256 } };
}
