import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline/promises';
import cliProgress from 'cli-progress';
import type { Silico } from '../../client.ts';
import type { RunEvent, RunPlan } from '../../models.ts';
import type { RunHandle } from '../../runHandle.ts';
import { EXIT, UsageError, parsePairs, type Out } from '../output.ts';

export interface RunFlags {
  input: string[];
  inputsFile?: string;
  profile?: string;
  maxRuntime?: number;
  seed?: number;
  reuse?: boolean;
  yes?: boolean;
  download?: string;
  /** With download: the bytes straight from the object store, where offered. */
  direct?: boolean;
  progress?: boolean;
}

function planText(plan: RunPlan): string {
  const lines = [
    `plan      ${plan.plan_id} (${plan.status})`,
    `lab       ${plan.resolved_ref}  ${plan.package_sha256}`,
    `compute   ${plan.compute_profile}, at most ${plan.max_runtime_seconds} s`,
    `price     at most $${plan.estimated_max_usd.toFixed(6)} (reserved now, unused compute returned)`,
    `digest    ${plan.plan_sha256}`,
  ];
  for (const f of plan.findings) lines.push(`${f.severity.padEnd(9)} ${f.code}: ${f.message}${f.path ? ` (${f.path})` : ''}`);
  return lines.join('\n');
}

async function confirmed(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim());
  } finally {
    rl.close();
  }
}

/**
 * Shows a prepared plan and asks for its approval: a blocked plan, or anything but yes
 * at the terminal, starts nothing. Without a terminal only --yes approves (a usage
 * error otherwise). Returns the exit code to end with, or null to go ahead.
 */
export async function approvePlan(plan: { status: string }, text: string, question: string, yes: boolean | undefined, out: Out): Promise<number | null> {
  out.note(text);
  if (plan.status !== 'ready') {
    if (out.json) out.result({ plan }, () => '');
    process.stderr.write('The plan is blocked; nothing was started.\n');
    return EXIT.api;
  }
  if (yes) return null;
  if (!process.stdin.isTTY) throw new UsageError('confirmation needed: review the plan above and pass --yes to run it non-interactively');
  if (await confirmed(question)) return null;
  process.stderr.write('Not started.\n');
  return EXIT.runFailed;
}

/** Follows a run's events to its end: a progress bar on a terminal, state lines otherwise. */
async function follow(handle: RunHandle, out: Out, showBar: boolean): Promise<void> {
  const bar = showBar ? new cliProgress.SingleBar({
    format: '{bar} {percentage}% | {status} | t={t}', stream: process.stderr, hideCursor: true, clearOnComplete: false,
  }, cliProgress.Presets.shades_classic) : undefined;
  bar?.start(100, 0, { status: 'queued', t: '-' });
  let status = 'queued';
  const onEvent = (e: RunEvent) => {
    if (e.type === 'state_changed' && typeof e.data.status === 'string') {
      status = e.data.status;
      if (bar) bar.update({ status });
      else out.note(`${e.at}  ${status}`);
    } else if (e.type === 'progress' && typeof e.data.fraction === 'number') {
      bar?.update(Math.round(e.data.fraction * 100), { status, t: e.data.t ?? '-' });
    } else if (e.type === 'warning' && !bar) out.note(`${e.at}  warning: ${e.message}`);
  };
  try {
    for await (const e of handle.events({ follow: true, pollIntervalMs: 500 })) onEvent(e);
  } finally {
    if (bar) {
      if (status === 'completed') bar.update(100);
      bar.stop();
    }
  }
}

function outputsText(outputs: Record<string, unknown>): string {
  return Object.entries(outputs).map(([k, v]) => {
    const shown = Array.isArray(v) ? `[${v.length} values]` : typeof v === 'object' && v !== null ? JSON.stringify(v).slice(0, 120) : String(v);
    return `  ${k} = ${shown}`;
  }).join('\n');
}

/**
 * `silico run <ref>`: prepare → show findings and price → confirm (or --yes) → execute
 * exactly that plan → follow it → print results → optionally download the artifacts,
 * each verified against its sha256. Ctrl-C while it runs asks the service to cancel it.
 */
export async function runCommand(client: Silico, ref: string, flags: RunFlags, out: Out): Promise<number> {
  const fromFile = flags.inputsFile ? JSON.parse(readFileSync(flags.inputsFile, 'utf8')) as Record<string, unknown> : {};
  const inputs = { ...fromFile, ...parsePairs(flags.input, '--input', true) };
  const plan = await client.runs.prepare({
    capability_ref: ref, inputs,
    ...(flags.profile ? { compute_profile_id: flags.profile } : {}),
    ...(flags.maxRuntime ? { max_runtime_seconds: flags.maxRuntime } : {}),
    ...(flags.seed !== undefined ? { seed: flags.seed } : {}),
    ...(flags.reuse ? { reuse: true } : {}),
  });
  const refused = await approvePlan(plan, planText(plan), 'Run this plan? [y/N] ', flags.yes, out);
  if (refused !== null) return refused;
  const run = await client.runs.create({ plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 });
  const handle = client.runs.handle(run.id);
  let interrupted = false;
  const onSigint = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    out.note('\ncancelling (Ctrl-C again to stop watching)...');
    handle.cancel().catch((err: Error) => process.stderr.write(`cancel failed: ${err.message}\n`));
  };
  // Before the run is shown: a Ctrl-C as soon as its line appears cancels it.
  process.on('SIGINT', onSigint);
  out.note(`run       ${run.id} (${run.status})`);
  try {
    await follow(handle, out, flags.progress !== false && !out.json && Boolean(process.stderr.isTTY));
    const finished = await handle.wait({ pollIntervalMs: 500 });
    const results = await handle.results();
    const downloads = flags.download ? await handle.downloadArtifacts(flags.download, { direct: flags.direct }) : [];
    out.result({ run: finished, results, downloads }, () => [
      `run ${finished.id} completed; charged $${finished.credits_settled}`,
      'outputs:', outputsText(results.outputs as Record<string, unknown>),
      ...(downloads.length ? ['downloaded (sha256 verified):', ...downloads.map((d) => `  ${d.path}  ${d.sha256}`)] : []),
    ].join('\n'));
    return EXIT.ok;
  } finally {
    process.off('SIGINT', onSigint);
  }
}
