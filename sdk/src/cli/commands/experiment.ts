import { readFileSync } from 'node:fs';
import cliProgress from 'cli-progress';
import type { Silico } from '../../client.ts';
import type { Comparison, Experiment, ExperimentPlan, PetabCalibrationAnalysis, RunTotals, StudyRun } from '../../models.ts';
import { EXIT, UsageError, table, type Out } from '../output.ts';
import { studyFromYaml } from '../studyFile.ts';
import { approvePlan } from './run.ts';

export interface ExperimentRunFlags {
  yes?: boolean;
  wait?: boolean;
  progress?: boolean;
  pollMs?: number;
}

const STATUSES = ['queued', 'running', 'cancelling', 'completed', 'failed', 'cancelled', 'timed_out'] as const;

const usd = (x: number) => `$${x.toFixed(6)}`;
const num = (x: number | null | undefined) => (x === null || x === undefined ? '-' : String(Number(x.toPrecision(6))));

function seedsText(seeds: number[]): string {
  if (seeds.length > 1 && seeds.every((s, i) => s === seeds[0]! + i)) return `${seeds[0]}..${seeds.at(-1)}`;
  return seeds.join(',');
}

/** What a sensitivity, calibration or PEtab calibration plan varies and how, for people. */
function designText(d: NonNullable<ExperimentPlan['design']>): string[] {
  if (d.kind === 'petab_calibration') {
    return [
      `question  PEtab calibration of import ${d.import_id}: ${d.starts} ${d.optimizer} starts uniform within the bounds (seed ${d.seed}), ${d.starts_per_run} a run, at most ${d.max_evaluations} evaluations each`,
      table(d.parameters.map((p) => ({ parameter: p.id, scale: p.scale, lb: num(p.lb), ub: num(p.ub), nominal: num(p.nominal) })), ['parameter', 'scale', 'lb', 'ub', 'nominal']),
      `profiles  ${d.profile.parameters.length ? d.profile.parameters.join(', ') : 'none'} from the best end point, with the Gauss-Newton view and the fit`,
    ];
  }
  const params = table(d.parameters.map((p) => ({
    parameter: p.name, low: num(p.low), high: num(p.high), distribution: p.distribution === 'normal' ? `normal(${num(p.mean)}, ${num(p.sd)}) in bounds` : 'uniform',
  })), ['parameter', 'low', 'high', 'distribution']);
  if (d.kind === 'sensitivity') {
    return [
      `question  sensitivity: ${d.method === 'sobol' ? 'Sobol\' indices (Saltelli sample)' : 'Morris elementary effects'}, base sample ${d.base_sample}, seed ${d.seed}`,
      params,
      `outputs   ${d.outputs.map((o) => (o.summary === 'value' ? o.output : `${o.output} (${o.summary})`)).join(', ')}`,
    ];
  }
  return [
    `question  calibration: ${d.optimizer === 'cmaes' ? 'CMA-ES (cmaes)' : 'TPE (Optuna)'}, seed ${d.seed}, ${d.loss}${d.noise_sd ? ` (σ ${num(d.noise_sd)})` : ''}, batches of ${d.batch_size}, at most ${d.budget} runs`,
    params,
    `data      ${d.dataset.name} version ${d.dataset.version} (${d.dataset.dataset_id}): ${d.observations.map((o) => `${o.output} at ${o.t.length} times`).join(', ')}`,
  ];
}

/** What a finished PEtab calibration found, for people: the best point, the waterfall's share, each parameter's profile beside its Gauss-Newton view. */
function petabText(a: PetabCalibrationAnalysis): string[] {
  const lines = [`analysis  PEtab calibration (descriptive): ${a.starts_told} of ${a.starts_asked} starts told, stopped: ${a.stopped}`];
  if (!a.best) return lines;
  lines.push(
    `best      NLL ${num(a.best.nll)} (start ${a.best.start}, run ${a.best.run_id})`,
    `waterfall ${a.within_best.starts} of ${a.starts_told} starts within ${a.within_best.threshold} of the best (${num(100 * a.within_best.fraction)}%)`,
  );
  const interval = (low: number | null, high: number | null) => `[${low === null ? '-inf' : num(low)}, ${high === null ? '+inf' : num(high)}]`;
  lines.push(table(a.parameters.map((p) => ({
    parameter: p.id, scale: p.scale, best: num(p.best),
    profile95: p.profile ? interval(p.profile.low, p.profile.high) : '-', flag: p.profile?.identifiability ?? '-',
    gauss_newton95: !p.gauss_newton ? '-' : p.gauss_newton.status === 'interval' ? interval(p.gauss_newton.low, p.gauss_newton.high) : p.gauss_newton.status === 'at_bound' ? `at ${p.gauss_newton.bound} bound` : 'flat',
  })), ['parameter', 'scale', 'best', 'profile95', 'flag', 'gauss_newton95']));
  for (const d of a.disagreements) lines.push(`disagree  ${d}`);
  for (const w of a.warnings) lines.push(`warning   ${w}`);
  return lines;
}

/** What a finished sensitivity or calibration study found, for people. */
/** The fields of the two methods whose analyses were stored before an analysis listed its `fields`. */
const STORED_BEFORE_FIELDS: Record<string, string[]> = { sobol: ['S1', 'S1_conf', 'ST', 'ST_conf'], morris: ['mu', 'mu_star', 'sigma', 'mu_star_conf'] };

export function analysisText(a: NonNullable<Experiment['analysis']>): string {
  const lines: string[] = [];
  if (a.kind === 'petab_calibration') lines.push(...petabText(a));
  else if (a.kind === 'sensitivity') {
    lines.push(`analysis  sensitivity (${a.method}, descriptive): ${a.runs_completed} runs completed`);
    for (const o of a.outputs) {
      lines.push('', `${o.output}${o.units ? ` (${o.units})` : ''}  ranked: ${o.ranking.join(' > ')}`);
      if (o.over_time) {
        // Over time the answer is who dominates when; every time's indices are in the study's indices.csv.
        const t = o.over_time;
        lines.push(`over time (${t.times.length} times, by ${t.rank}): ${t.leaders.map((l) => `${l.parameter} ${l.from === l.to ? `at ${num(l.from)}` : `from ${num(l.from)} to ${num(l.to)}`}`).join('; ') || 'no index stated'}`);
        if (t.undefined.length) lines.push(`undefined at ${t.undefined.length} time${t.undefined.length === 1 ? '' : 's'} (${[...new Set(t.undefined.map((u) => u.reason))].join(', ')}), e.g. t = ${num(t.undefined[0]!.time)}: ${t.undefined[0]!.message}`);
        continue;
      }
      // The method's own fields in its order (Postgres keeps an object's keys in an order of its own).
      const columns = ['parameter', ...(a.fields ?? STORED_BEFORE_FIELDS[a.method] ?? [])];
      lines.push(table(o.indices.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'number' ? num(v) : v ?? '-']))), columns));
    }
  } else {
    lines.push(`analysis  calibration (descriptive): ${a.runs_told} runs told, stopped: ${a.stopped}`);
    if (a.best) {
      const iv = a.uncertainty.intervals;
      lines.push(`best      loss ${num(a.best.loss)} (run ${a.best.run_id})`);
      // The interval is centred at its estimate, not at the best evaluated set: both are shown, each named.
      lines.push(table(Object.entries(a.best.parameters).map(([name, v]) => ({
        parameter: name, estimate: iv?.[name] ? num(iv[name].estimate) : '-', interval95: iv?.[name] ? `[${num(iv[name].low)}, ${num(iv[name].high)}]` : '-', best_evaluated: num(v),
      })), ['parameter', 'estimate', 'interval95', 'best_evaluated']));
      lines.push(`intervals ${a.uncertainty.note}`);
    }
  }
  lines.push('', `note: ${a.note}`);
  return lines.join('\n');
}

function planText(plan: ExperimentPlan): string {
  const arms = plan.arms.map((a) => ({
    label: a.label, runs: a.replicates, seeds: seedsText(a.seeds), lab: a.resolved_ref, profile: a.compute_profile,
    max_s: a.max_runtime_seconds, max_usd_per_run: a.estimated_max_usd_per_run,
  }));
  const lines = [
    `study     ${plan.name} (${plan.status})${plan.goal ? `\ngoal      ${plan.goal}` : ''}`,
    `plan      ${plan.plan_id}`,
    ...(plan.design
      ? [`lab       ${plan.arms[0]!.resolved_ref} on ${plan.arms[0]!.compute_profile}, at most ${plan.arms[0]!.max_runtime_seconds} s and ${usd(plan.arms[0]!.estimated_max_usd_per_run)} a run`, ...designText(plan.design)]
      : [table(arms, ['label', 'runs', 'seeds', 'lab', 'profile', 'max_s', 'max_usd_per_run'])]),
  ];
  for (const f of plan.findings) lines.push(`${f.severity.padEnd(9)} ${f.code}: ${f.message}${f.path ? ` (${f.path})` : ''}`);
  lines.push(
    `price     at most ${usd(plan.estimated_max_usd)} for ${plan.run_count} runs (reserved when the study opens, unused compute returned run by run)`,
    `digest    ${plan.plan_sha256}`,
  );
  return lines.join('\n');
}

/** `queued 2, running 3, completed 1 (of 6)`: the statuses that have runs. */
export function totalsText(t: RunTotals): string {
  const parts = STATUSES.filter((s) => t[s] > 0).map((s) => `${s} ${t[s]}`);
  return `${parts.join(', ') || 'no runs'} (of ${t.total})`;
}

/** Per output, a row per arm with its statistics; then the two-arm tests and the note. */
export function comparisonText(c: Comparison): string {
  const lines = ['comparison (descriptive: completed runs only; 95% interval of the mean, Student t)'];
  if (!c.outputs.length) lines.push('  no numeric outputs from completed runs');
  for (const output of c.outputs) {
    lines.push('', output);
    lines.push(table(c.arms.map((a) => {
      const m = a.metrics?.[output];
      return m
        ? { arm: a.label, n: m.n, mean: num(m.mean), sd: num(m.stddev), min: num(m.min), max: num(m.max), ci95: m.ci95 ? `[${num(m.ci95[0])}, ${num(m.ci95[1])}]` : '-' }
        : { arm: a.label, n: 0, mean: a.completed_runs ? '-' : 'no completed run' };
    }), ['arm', 'n', 'mean', 'sd', 'min', 'max', 'ci95']));
  }
  if (c.tests.length) {
    lines.push('', `Welch t-test, ${c.arms[0]?.label} vs ${c.arms[1]?.label} (descriptive, uncorrected):`);
    for (const t of c.tests) {
      lines.push(`  ${t.output}: ${t.p_value === null ? `no p-value (${t.note ?? 'undefined'})` : `t=${num(t.statistic)} df=${num(t.df)} p=${num(t.p_value)}`}`);
    }
  }
  lines.push('', `note: ${c.note}`);
  return lines.join('\n');
}

/** A study for people: status, run totals, money, comparison, stored files. */
export function studyText(e: Experiment): string {
  const failed = e.arms.flatMap((a) => (a.runs ?? []).filter((r) => r.error).map((r) => `  ${a.label} #${r.replicate} ${r.run_id}: ${r.error!.code}: ${r.error!.message}`));
  return [
    `study     ${e.id}  ${e.name} (${e.status}${e.completed_at ? `, every run ended ${e.completed_at}` : ''})`,
    ...(e.goal ? [`goal      ${e.goal}`] : []),
    `runs      ${totalsText(e.run_totals)}`,
    `credits   ${usd(e.credits_reserved)} reserved, ${usd(e.credits_settled)} settled`,
    ...(failed.length ? ['runs that did not complete:', ...failed] : []),
    '',
    e.analysis ? analysisText(e.analysis) : comparisonText(e.comparison),
    ...(e.artifacts.length ? ['', 'files:', ...e.artifacts.map((a) => `  ${a.file_name}  ${a.size_bytes} bytes  sha256 ${a.sha256}  file ${a.file_id}  ${a.download_url}`)] : []),
  ].join('\n');
}

/** Waits for the study, showing its run totals: a bar of ended runs on a terminal, a line per change otherwise. */
async function follow(client: Silico, id: string, out: Out, showBar: boolean, pollMs: number): Promise<Experiment> {
  const bar = showBar ? new cliProgress.SingleBar({
    format: '{bar} {value}/{total} runs ended | {summary}', stream: process.stderr, hideCursor: true, clearOnComplete: false,
  }, cliProgress.Presets.shades_classic) : undefined;
  let started = false;
  try {
    return await client.experiments.wait(id, {
      pollMs,
      onProgress: (t) => {
        const ended = t.completed + t.failed + t.cancelled + t.timed_out;
        if (!bar) out.note(`${new Date().toISOString()}  ${totalsText(t)}`);
        else if (started) bar.update(ended, { summary: totalsText(t) });
        else {
          started = true;
          bar.start(t.total, ended, { summary: totalsText(t) });
        }
      },
    });
  } finally {
    bar?.stop();
  }
}

/**
 * `silico experiment run study.yaml`: read the study file (arms, or a sweep expanded
 * into arms), prepare it → show every arm, the findings and the whole-study price →
 * confirm (or --yes) → open exactly that plan. With --wait, follow the run totals to the
 * end and print the comparison: exit 0 when every run completed, 1 when any did not.
 */
export async function experimentRun(client: Silico, file: string, flags: ExperimentRunFlags, out: Out): Promise<number> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  const plan = await client.experiments.prepare(studyFromYaml(text, file));
  const refused = await approvePlan(plan, planText(plan), `Open this study: ${plan.run_count} runs for at most ${usd(plan.estimated_max_usd)}? [y/N] `, flags.yes, out);
  if (refused !== null) return refused;
  const study = await client.experiments.create(plan);
  out.note(`study     ${study.id} (${study.status}), ${study.run_totals.total} runs`);
  if (!flags.wait) {
    out.result({ plan, experiment: study }, () => `${study.id}\nfollow it with: silico experiment get ${study.id}`);
    return EXIT.ok;
  }
  const onSigint = () => {
    process.stderr.write(`\nstopped watching; the study goes on (silico experiment get ${study.id})\n`);
    process.exit(130);
  };
  process.on('SIGINT', onSigint);
  try {
    const done = await follow(client, study.id, out, flags.progress !== false && !out.json && Boolean(process.stderr.isTTY), flags.pollMs ?? 1000);
    out.result({ plan, experiment: done }, () => studyText(done));
    return done.run_totals.completed === done.run_totals.total ? EXIT.ok : EXIT.runFailed;
  } finally {
    process.off('SIGINT', onSigint);
  }
}

/** `silico experiment get ID`: status, run totals and the comparison as it stands. */
export async function experimentGet(client: Silico, id: string, out: Out): Promise<number> {
  const e = await client.experiments.get(id);
  out.result(e, () => studyText(e));
  return EXIT.ok;
}

export interface ExperimentRunsFlags {
  status?: string;
  sort?: string;
  order?: 'asc' | 'desc';
  limit: number;
  all?: boolean;
}

/** A study's runs as a table: place, run, status, then each parameter and what it told (outputs, or loss). */
function studyRunsText(runs: StudyRun[]): string {
  const params = [...new Set(runs.flatMap((r) => Object.keys(r.params ?? {})))];
  const outputs = [...new Set(runs.flatMap((r) => Object.keys(r.outputs ?? {})))];
  const withLoss = runs.some((r) => r.loss !== null);
  const rows = runs.map((r) => ({
    position: r.position, run_id: r.run_id, status: r.status, ...(params.length ? {} : { arm: r.arm, replicate: r.replicate }),
    ...Object.fromEntries(params.map((p) => [p, num(r.params?.[p])])),
    ...Object.fromEntries(outputs.map((k) => [k, num(r.outputs?.[k])])),
    ...(withLoss ? { loss: num(r.loss) } : {}),
  }));
  return table(rows, ['position', 'run_id', 'status', ...(params.length ? [] : ['arm', 'replicate']), ...params, ...outputs, ...(withLoss ? ['loss'] : [])]);
}

/**
 * `silico experiment runs ID`: the study's runs with their parameter sets and what each
 * told, sorted (`--sort params.beta`, `--sort outputs.recovered.final --order desc`,
 * `--sort loss`) and filtered by status; one page of `--limit`, or every run with `--all`.
 */
export async function experimentRuns(client: Silico, id: string, flags: ExperimentRunsFlags, out: Out): Promise<number> {
  const params = { limit: Math.min(flags.limit, 100), ...(flags.status ? { status: flags.status as never } : {}), ...(flags.sort ? { sort: flags.sort } : {}), ...(flags.order ? { order: flags.order } : {}) };
  const runs: StudyRun[] = [];
  if (flags.all) for await (const r of client.experiments.runs(id, params)) runs.push(r);
  else runs.push(...(await client.experiments.runs(id, params)).items);
  const shown = flags.all ? runs : runs.slice(0, flags.limit);
  out.result({ items: shown }, () => (shown.length ? studyRunsText(shown) : 'no runs'));
  return EXIT.ok;
}
