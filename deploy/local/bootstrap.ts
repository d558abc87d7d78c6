import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Client, Connection, ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import type { Db } from '../../storage/db/knex.ts';
import { migrate } from '../../storage/db/knex.ts';
import { analyseNeverAnalysed } from '../../storage/db/plannerStatistics.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import { createAccount, findAccountByNamespace, ownerPrincipal } from '../../storage/db/accounts.ts';
import { createKey, findKeyBySecret, KEY_SCOPES } from '../../storage/db/apiKeys.ts';
import { grantCompute, usdToMicros } from '../../storage/ledger.ts';
import { publishSkills } from '../../storage/skills.ts';
import { publishBuiltinLabs } from './builtinLabs.ts';
import { ensureKeyring } from '../../storage/passportKeys.ts';
import { workflowSearchAttributes } from '../../kernel/searchAttributes.ts';
import { CONTROL_TASK_QUEUE, MAINTENANCE_SCHEDULE_ID, RUN_SWEEP_SCHEDULE_ID } from '../../kernel/workflowNames.ts';
import type * as workflows from '../../workflows/index.ts';
import type { Sandbox } from '../../activities/execution/sandbox.ts';

export const OPERATOR_NAMESPACE = 'local';
/** The workflows Temporal starts on a schedule: housekeeping each hour, the run sweeper each minute. */
const SCHEDULES: Array<{ id: string; every: Duration; workflowType: keyof typeof workflows; workflowId: string; summary: string; details: string }> = [
  {
    id: MAINTENANCE_SCHEDULE_ID, every: '1 hour', workflowType: 'maintenanceWorkflow', workflowId: 'maintenance',
    summary: 'hourly maintenance: expired idempotency keys and rate limits purged, orphaned records reconciled, unnamed objects swept',
    details: `Started by the schedule ${MAINTENANCE_SCHEDULE_ID}; its result counts what each step removed or ended.`,
  },
  {
    id: RUN_SWEEP_SCHEDULE_ID, every: '1 minute', workflowType: 'runSweepWorkflow', workflowId: 'run-sweep',
    summary: 'run sweep: runs whose workflow is gone are ended truthfully, their reservations settled',
    details: `Started by the schedule ${RUN_SWEEP_SCHEDULE_ID} each minute; its result lists the runs it ended.`,
  },
];

export const SKILLS_DIR = fileURLToPath(new URL('../skills', import.meta.url));

/**
 * Everything a fresh data dir needs before the api and worker start: the schema, the
 * bucket, the built-in skills, the operator account `local` (team, $100, gateway on)
 * with an all-scopes key, a passport signing key, and the hourly maintenance schedule. Idempotent: a second
 * start keeps the data and reuses the key written to local.json when it still works.
 */
export async function bootstrap(opts: {
  db: Db; objects: ObjectStore; temporalAddress: string; namespace: string; stateFile: string; python: string; sandbox: Sandbox; passportKeysDir: string; log: (l: string) => void;
}): Promise<{ apiKey: string; keyId: string; accountId: string; created: boolean }> {
  const { db, objects, log } = opts;
  const applied = await migrate(db);
  if (applied.length) log(`migrations applied: ${applied.join(', ')}`);
  await objects.ensureBucket();
  const skills = await publishSkills(db, objects, SKILLS_DIR);
  log(`skills published: ${skills.join(', ')}`);
  await publishBuiltinLabs(db, objects, { python: opts.python, sandbox: opts.sandbox }, log);
  const keys = await ensureKeyring(db, opts.passportKeysDir);
  if (keys.length) log(`passport signing key recorded: ${keys.join(', ')} (keyring ${opts.passportKeysDir})`);

  let account = await findAccountByNamespace(db, OPERATOR_NAMESPACE);
  let created = false;
  if (!account) {
    account = (await createAccount(db, { namespace: OPERATOR_NAMESPACE, kind: 'team', displayName: 'Local operator', gatewayEnabled: true })).account;
    await grantCompute(db, account.id, usdToMicros(100), `bootstrap:${account.id}`, 'first start of the local stack');
    created = true;
  }
  let apiKey: string | undefined;
  let keyId: string | undefined;
  try {
    const saved = JSON.parse(await readFile(opts.stateFile, 'utf8')) as { api_key?: string };
    const found = saved.api_key ? await findKeyBySecret(db, saved.api_key) : undefined;
    if (found && !found.key.revoked_at && found.account.id === account.id && (!found.key.expires_at || new Date(found.key.expires_at) > new Date())) {
      apiKey = saved.api_key;
      keyId = found.key.id;
    }
  } catch {
    // no usable state file: issue a key below
  }
  if (!apiKey) {
    const issued = await createKey(db, { accountId: account.id, principalId: await ownerPrincipal(db, account.id), scopes: KEY_SCOPES, name: 'local operator' });
    apiKey = issued.secret;
    keyId = issued.key.id;
  }

  const connection = await Connection.connect({ address: opts.temporalAddress });
  try {
    const client = new Client({ connection, namespace: opts.namespace });
    for (const s of SCHEDULES) {
      const action = {
        type: 'startWorkflow', workflowType: s.workflowType, taskQueue: CONTROL_TASK_QUEUE, workflowId: s.workflowId,
        staticSummary: s.summary, staticDetails: s.details, typedSearchAttributes: workflowSearchAttributes({ kind: 'housekeeping', summary: s.summary }),
      } as const;
      try {
        await client.schedule.create({ scheduleId: s.id, spec: { intervals: [{ every: s.every }] }, action, policies: { overlap: ScheduleOverlapPolicy.SKIP } });
      } catch (err) {
        if (!(err instanceof ScheduleAlreadyRunning)) throw err;
        // A schedule made by an earlier version starts its workflows as this one says.
        await client.schedule.getHandle(s.id).update((prev) => ({ ...prev, action }));
      }
    }
  } finally {
    await connection.close();
  }
  // Last, once its rows are written, and before the api and workers open their connections.
  const analysed = await analyseNeverAnalysed(db);
  if (analysed.length) log(`planner statistics gathered for ${analysed.length} tables that had none`);
  return { apiKey, keyId: keyId!, accountId: account.id, created };
}

export { REPO_ROOT } from './paths.ts';
