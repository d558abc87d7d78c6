import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import getPort, { portNumbers } from 'get-port';
import { startStack } from '../../deploy/local/stack.ts';
import { createDb } from '../../storage/db/knex.ts';
import { createObjectStore } from '../../storage/objects.ts';
import { loadConfig } from '../../kernel/config.ts';
import { auditLedger, auditPlanEffects, auditWebhooks, openWork, runsByMetadata } from '../../storage/db/audit.ts';
import { auditObjects } from '../../storage/objectAudit.ts';
import { createObjectSweepActivities } from '../../activities/objectSweep.ts';
import { Recorder, SoakClient } from './client.ts';
import { FULL, SHORT, inject, schedule, watchCrashes } from './faults.ts';
import { WebhookReceiver } from './receiver.ts';
import { setUp } from './setup.ts';
import { drive, newEffects } from './traffic.ts';
import { auditTable, latencyTable, outcomesTable, type Check } from './report.ts';

/**
 * `npm run soak`: the production topology (`npm run start:cluster`'s: a Temporal cluster
 * on Postgres, erasure-coded MinIO, two api replicas behind HAProxy, two workers) under a
 * steady mix of real traffic for SOAK_SECONDS (default 600), while a printed schedule of
 * faults is injected: kill -9 of workers and api replicas, a rolling restart, and
 * Postgres, MinIO and Temporal's frontend each down and paused. Then the traffic stops,
 * the open work drains, and an audit read from Postgres and the object store decides:
 * exit 1 on any loss, double charge, gap, orphan or 5xx other than 503 with Retry-After.
 * `--short` (CI, after npm test): at most 3 minutes, one fault of each kind, 10-second outages.
 */
const short = process.argv.includes('--short');
const seconds = Number(process.env.SOAK_SECONDS ?? (short ? 100 : 600));
const quietSeconds = short ? 8 : 20;
/** The 4xx answers faults may cause: a key still held by a request a killed replica never finished, and a retried plan-bound write whose plan its first attempt used (the answer names the result). */
const EXPECTED_4XX = ['4xx 409 idempotency_in_progress', '4xx 409 plan_unavailable'];
const say = (line: string) => process.stdout.write(`[soak] ${line}\n`);

async function main(): Promise<number> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'silico-soak-'));
  const log = createWriteStream(path.join(dataDir, 'stack.log'));
  say(`starting the cluster topology in ${dataDir} (its log: stack.log)`);
  const stack = await startStack({
    dataDir, mode: short ? 'test' : 'dev', topology: 'cluster', exitOnSignal: true,
    sink: (source, line) => log.write(`${new Date().toISOString()} ${source.padEnd(10)}| ${line}\n`),
    ports: { api: await getPort(), postgres: await getPort(), temporal: await getPort({ port: portNumbers(20000, 32767) }), temporalUi: null, minio: await getPort(), minioConsole: await getPort() },
    serviceEnv: {
      LOG_LEVEL: 'warn', SILICO_RATE_READS_PER_MIN: '100000', SILICO_RATE_RUNS_PER_MIN: '100000', SILICO_RATE_DAILY: '10000000',
      // The receiver is a local server; deliveries retry at most 5 s apart so that the drain sees them through.
      SILICO_WEBHOOK_ALLOW_PRIVATE: '1', SILICO_WEBHOOK_MAX_RETRY_MS: '5000',
      // Sandbox uids of its own, apart from a test stack's on the same machine.
      SILICO_SANDBOX_UID_BASE: '80000', SILICO_SANDBOX_UID_COUNT: '1000',
    },
  });
  const db = createDb(stack.info.database_url, { poolMax: 4 });
  const objects = createObjectStore(loadConfig({ ...process.env, ...stack.env }).s3);
  const receiver = new WebhookReceiver();
  let failed = true;
  let stopCrashWatch = () => undefined as void;
  try {
    const s = await setUp(db, stack.info.base_url, receiver, await receiver.listen(), stack.env.SILICO_STRIPE_WEBHOOK_SECRET!);
    const accounts = [s.runner.id, s.owner.id, s.filer.id, s.reader.id, s.buyer.id];
    const faults = schedule({ seconds, quietSeconds, ...(short ? SHORT : FULL) });
    say(`the schedule (${seconds} s of traffic, faults at the planned second or once the one before has ended):`);
    for (const f of faults) say(`  t=${String(Math.round(f.plannedAt)).padStart(4)} s  ${f.name}`);

    const recorder = new Recorder();
    const effects = newEffects();
    const stop = { set: false };
    const began = Date.now();
    const crashWatch = watchCrashes(stack, say);
    stopCrashWatch = crashWatch.stop;
    const traffic = drive(new SoakClient(stack.info.base_url, recorder), s, effects, stop);
    await inject(stack, faults, began, say);
    const rest = began + seconds * 1000 - Date.now();
    await sleep(Math.max(rest, quietSeconds * 1000));
    stop.set = true;
    say('traffic stopping; waiting for the flows in flight and the open work to end');
    await traffic;
    let open = await openWork(db, accounts);
    for (const deadline = Date.now() + 300_000; Object.values(open).some((n) => n > 0) && Date.now() < deadline; await sleep(1000)) open = await openWork(db, accounts);

    const ledger = await auditLedger(db, accounts);
    const webhooks = await auditWebhooks(db, accounts);
    const planTwice = await auditPlanEffects(db, accounts);
    const byOp = await runsByMetadata(db, s.runner.id, 'soak_op');
    const orphansLeft = (await auditObjects(db, objects)).orphans;
    const swept = await createObjectSweepActivities({ db, objects }).sweepUnnamedObjects(0);
    const bytes = await auditObjects(db, objects);
    const recorded = new Set(await db('runs').whereIn('account_id', accounts).pluck('id'));
    // Each purchase the provider's route took: credited its amount once, and the refund sent taken back.
    const bought = new Map((await db('purchases').whereIn('id', effects.purchases.map((p) => p.id)).select('id', 'status', 'credited_micros', 'refunded_micros', 'recovered_micros')).map((p) => [p.id, p]));
    const purchasesWrong = effects.purchases.filter((p) => {
      const row = bought.get(p.id);
      return !row || row.status !== 'paid' || Number(row.credited_micros) !== p.cents * 10_000 || Number(row.refunded_micros) !== p.refundedCents * 10_000 || Number(row.recovered_micros) !== p.refundedCents * 10_000;
    }).map((p) => p.id);
    const acceptedRuns = [...effects.runs.values()];
    const outcomes = recorder.attempts;
    const count = (p: (o: string) => boolean) => outcomes.filter((a) => p(a.outcome)).length;
    const checks: Check[] = [
      { what: 'runs accepted (answered to the client)', value: acceptedRuns.length, fails: false },
      { what: 'runs recorded / in a terminal state', value: `${ledger.runs.accepted} / ${ledger.runs.terminal}`, fails: ledger.runs.open > 0 },
      { what: 'runs answered but never recorded (lost)', value: acceptedRuns.filter((id) => !recorded.has(id)).length, fails: acceptedRuns.some((id) => !recorded.has(id)) },
      { what: 'keyed run writes with more than one run', value: [...byOp.values()].filter((n) => n > 1).length, fails: [...byOp.values()].some((n) => n > 1) },
      { what: 'plans made twice (runs, studies, invocations)', value: `${planTwice.runs}, ${planTwice.experiments}, ${planTwice.hosted_invocations}`, fails: planTwice.runs + planTwice.experiments + planTwice.hosted_invocations > 0 },
      { what: 'studies / hosted invocations accepted', value: `${effects.studies.length} / ${effects.invocations.length}`, fails: false },
      { what: 'work still open after the drain (runs, studies, invocations, deliveries)', value: Object.values(open).join(', '), fails: Object.values(open).some((n) => n > 0) },
      { what: 'reservations / settlements', value: `${ledger.reservations} / ${ledger.settlements}`, fails: false },
      { what: 'purchases confirmed to the provider\'s route / not credited and refunded as sent', value: `${effects.purchases.length} / ${purchasesWrong.length}`, fails: purchasesWrong.length > 0 },
      { what: 'grants / purchases paid (credited) / refunds taken back', value: `${ledger.grants} / ${ledger.purchases.paid} (${ledger.purchases.credited}) / ${ledger.purchases.refunds}`, fails: ledger.purchases.paid !== ledger.purchases.credited },
      ...Object.entries(ledger.problems).map(([k, v]) => ({ what: k.replaceAll('_', ' '), value: v, fails: v > 0 })),
      { what: 'webhook events / deliveries (delivered, pending, dead)', value: `${webhooks.events} / ${webhooks.deliveries} (${webhooks.delivered}, ${webhooks.pending}, ${webhooks.dead})`, fails: webhooks.pending + webhooks.dead > 0 },
      { what: 'webhook events without a delivery', value: webhooks.problems.events_without_delivery, fails: webhooks.problems.events_without_delivery > 0 },
      { what: 'delivered events the receiver never got', value: webhooks.deliveredEventIds.filter((id) => !receiver.received.has(id)).length, fails: webhooks.deliveredEventIds.some((id) => !receiver.received.has(id)) },
      { what: 'deliveries received more than once (at least once: allowed)', value: [...receiver.received.values()].filter((n) => n > 1).length, fails: false },
      { what: 'deliveries with a bad signature', value: receiver.badSignatures, fails: receiver.badSignatures > 0 },
      { what: 'artifacts and files re-hashed', value: bytes.artifacts + effects.files.length, fails: false },
      { what: 'stored bytes differing from their record', value: bytes.bytes_differ, fails: bytes.bytes_differ > 0 },
      { what: 'downloads differing from their record', value: effects.downloadsDiffer.length, fails: effects.downloadsDiffer.length > 0 },
      { what: 'records whose object is gone', value: bytes.objects_missing, fails: bytes.objects_missing > 0 },
      { what: 'unnamed objects left by cut writes (swept)', value: `${orphansLeft} (${swept.removed})`, fails: false },
      { what: 'orphans the sweep could not remove', value: bytes.orphans, fails: bytes.orphans > 0 },
      { what: 'requests cut: no answer before the connection closed (retried)', value: count((o) => o === 'cut'), fails: false },
      { what: '4xx the traffic does not cause (its own mistakes or the service\'s)', value: count((o) => o.startsWith('4xx') && !EXPECTED_4XX.includes(o)), fails: count((o) => o.startsWith('4xx') && !EXPECTED_4XX.includes(o)) > 0 },
      { what: 'requests with no answer in 30 s', value: count((o) => o === 'no answer'), fails: count((o) => o === 'no answer') > 0 },
      { what: '5xx other than 503 with Retry-After', value: count((o) => o.startsWith('other')), fails: count((o) => o.startsWith('other')) > 0 },
      { what: 'requests given up after 5 minutes of retries', value: recorder.abandoned.length, fails: recorder.abandoned.length > 0 },
      { what: 'faults that failed to inject or recover', value: faults.filter((f) => f.error).length, fails: faults.some((f) => f.error) },
      { what: 'api and worker processes that ended on their own (started again)', value: crashWatch.crashes.map((c) => `${c.name} t=${Math.round((c.at - began) / 1000)} s`).join(', ') || 0, fails: crashWatch.crashes.length > 0 },
    ];
    process.stdout.write(`\nRequests by outcome (every attempt; a retry is another request)\n${outcomesTable(recorder)}\n`);
    process.stdout.write(`\nLatency of successful requests (ms), 10 s before, during, and 10 s after each fault\n${latencyTable(recorder, faults)}\n`);
    if (effects.refused.length) process.stdout.write(`\nWrites refused with a 4xx the flow did not expect: ${[...new Set(effects.refused)].join('; ')}\n`);
    process.stdout.write(`\nAudit, from Postgres and the object store\n${auditTable(checks)}\n`);
    await writeFile(path.join(dataDir, 'soak.json'), JSON.stringify({ seconds, short, faults: faults.map(({ inject: _, ...f }) => f), crashes: crashWatch.crashes, checks, attempts: outcomes.length,
      // Every attempt that was not a success, with its second in the soak, for the logs.
      notOk: outcomes.filter((a) => a.outcome !== '2xx').map((a) => ({ ...a, at: (a.at - began) / 1000 })) }, null, 2));
    failed = checks.some((c) => c.fails);
    process.stdout.write(`\nsoak ${failed ? 'FAILED' : 'passed'}: ${checks.filter((c) => c.fails).map((c) => c.what).join('; ') || 'nothing lost, charged twice, left open or orphaned'}\n`);
  } finally {
    stopCrashWatch();
    await receiver.close();
    await db.destroy();
    await stack.stop();
    // Kept when the soak failed, for its logs.
    if (failed) say(`data and logs kept in ${dataDir}`);
    else await rm(dataDir, { recursive: true, force: true });
  }
  return failed ? 1 : 0;
}

main().then((code) => process.exit(code), (err) => {
  process.stderr.write(`soak: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
