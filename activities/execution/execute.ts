import { teachMissingModule } from './missingModule.ts';
import { readLabManifests } from '../../storage/labManifests.ts';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import pLimit from 'p-limit';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure, Context, CancelledFailure } from '@temporalio/activity';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import { appendEvent, getRun, markRunStarted, setRunOutputs, touchRunAlive, type RunRow } from '../../storage/db/runs.ts';
import { getComputeProfile } from '../../storage/db/computeProfiles.ts';
import { WORKER_SHUTDOWN } from '../../kernel/workflowNames.ts';
import { listOf } from '../../storage/labContract.ts';
import { seriesSvg } from './artifacts.ts';
import { stageInputs } from './stagedInputs.ts';
import { createEventBatcher } from './eventBatcher.ts';
import { createOutputSink, MAX_INLINE_OUTPUT_BYTES, textArtifact, type ArtifactFile, type OutputSink } from './outputs.ts';
import { outcomeError, runLabProcess, signalError, spendCapReached, timedOutMessage, type LabProcessHooks, type StreamLimits } from './labProcess.ts';
import { SandboxUnavailable, type Sandbox } from './sandbox.ts';
import { DRIVER, labEnv, oneShotLimits } from './labSpec.ts';
import { whileAlive } from './supervision.ts';
import { materialize } from './materialize.ts';
import { parentKey, startRunParent, type RunParent } from './runParents.ts';
import { WarmInstanceFailed } from './warmInstance.ts';
import type { WarmParents } from './warmParents.ts';
import type { WarmLease } from './warmPool.ts';
import { environmentPython, EnvironmentUnavailable } from '../environments/python.ts';
import type { EnvironmentSettings } from '../../kernel/environments.ts';
import type { CancelWatch } from '../../storage/db/cancelWatch.ts';
import { createWriteChain } from './writeChain.ts';
import { storeRunArtifact } from './artifactBytes.ts';
import { executePetabTask, petabOutputs } from './petabTask.ts';

const MAX_LOG_EVENTS = 500;
/** How often a live execution records so in its run (the sweeper ends runs silent for a minute). */
const ALIVE_TOUCH_MS = 5000;


export interface ExecutionResult {
  status: 'completed' | 'failed' | 'timed_out' | 'cancelled' | 'skipped';
  error?: { code: string; message: string } | null;
  computeSeconds?: number;
}

/**
 * An execution's result where it was made: a completed run's outputs record too, which its
 * ending records (a lone run's activity records it first, so it never travels through its
 * workflow; a study's batch gives it to the ending, one round trip fewer).
 */
export interface ExecutedRun extends ExecutionResult { outputs?: Record<string, unknown> }

export interface ExecutionDeps {
  db: Db;
  objects: ObjectStore;
  /** The default runtime's interpreter; a run whose lock is another's runs in that lock's environment. */
  python: string;
  environments: EnvironmentSettings;
  sandbox: Sandbox;
  streamLimits?: StreamLimits;
  /** A lab silent and stopped (or idle) this long is ended `lab_unresponsive` (labProcess.ts). */
  stallSeconds?: number;
  /** Tells of a run's cancellation as it is made (without it, only Temporal's reaches the run). */
  runCancels?: CancelWatch;
  /** The worker's warm parents of runs; without them, every run executes cold. */
  warm?: WarmParents;
}

/** A run's file or dataset input is no longer its owner's, or its bytes changed: nothing runs. */
class InputsUnavailable extends Error {
  readonly error: { code: string; message: string };
  constructor(error: { code: string; message: string }) {
    super(error.message);
    this.error = error;
  }
}


/**
 * The lab execution activity, run on the task queue of the run's compute profile. The
 * driver runs sandboxed (sandbox.ts) with limits from the profile; its messages become
 * run events and heartbeats, its series stream to files, and what it leaves is stored
 * as hashed artifacts by this activity: the workflow gets a status and a few numbers.
 * Cancellation stops the sandbox's process group (SIGTERM, SIGKILL 2 s later).
 */
export function createExecutionActivities(deps: ExecutionDeps) {
  return {
    async executeLab(input: { runId: string }): Promise<ExecutionResult> {
      const { outputs, ...result } = await executeRun(deps, input.runId);
      if (outputs) await setRunOutputs(deps.db, input.runId, outputs);
      return result;
    },
  };
}

/**
 * Runs `work` with a signal that stops it on Temporal's cancellation of the activity (its
 * next heartbeat) or, sooner, on the run's own cancel notice: watched before the run is
 * read, so no cancel falls in between.
 */
async function stoppable<T>(deps: Pick<ExecutionDeps, 'runCancels'>, runId: string, work: (stop: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const stop = new AbortController();
  const stopNow = () => stop.abort();
  ctx.cancellationSignal.addEventListener('abort', stopNow);
  const unwatch = deps.runCancels?.watch(runId, stopNow);
  try {
    return await work(stop.signal);
  } finally {
    unwatch?.();
    ctx.cancellationSignal.removeEventListener('abort', stopNow);
  }
}

/**
 * Executes one run that holds its slot, in the activity of the current context (a lone
 * run's executeLab, or a study's batch): everything but its ending, which its caller
 * records. A run already ended is skipped; one cancelled before it began ends cancelled.
 * `labDone` is called once its lab's process has ended, before its results are stored
 * (not for a run that never started one, nor for a PEtab calibration's).
 */
export async function executeRun(deps: ExecutionDeps, runId: string, labDone?: () => void): Promise<ExecutedRun> {
  return stoppable(deps, runId, (stop) => execute(deps, runId, stop, labDone));
}

async function execute(deps: ExecutionDeps, runId: string, stopSignal: AbortSignal, labDone?: () => void): Promise<ExecutedRun> {
  const ctx = Context.current();
  const run = await getRun(deps.db, runId);
  // Cancelled between taking its slot and starting here: the run still has to end,
  // as cancelled with nothing charged (execution never began). A run that has already
  // ended (a retry after the fact) is skipped and left as it is.
  if (run?.status === 'cancelling') return { status: 'cancelled', error: null };
  if (!run || run.status !== 'running') return { status: 'skipped' };
  const profile = (await getComputeProfile(deps.db, run.compute_profile))!;
  // A spend cap below the run's maximum price stops it once it has cost the cap: compute
  // is charged by wall time when a run is stopped, so the cap is a wall-time budget.
  const capSeconds = run.cap_micros !== null && profile.price_per_second_micros > 0 ? Math.max(1, Math.floor(Number(run.cap_micros) / profile.price_per_second_micros)) : null;
  const capStops = capSeconds !== null && capSeconds < run.max_runtime_seconds;
  const wallSeconds = capStops ? capSeconds : run.max_runtime_seconds;
  // Alive, to Temporal (each call) and to the sweeper (the run's alive_at, every few seconds).
  let pid = 0;
  let touched = 0;
  const alive = () => {
    ctx.heartbeat({ pid });
    if (Date.now() - touched < ALIVE_TOUCH_MS) return;
    touched = Date.now();
    touchRunAlive(deps.db, run.id).catch(() => undefined);
  };
  alive();
  const dir = await mkdtemp(path.join(tmpdir(), `silico-run-${run.id.slice(0, 8)}-`));
  let opened: OutputSink | undefined;
  let lease: WarmLease<RunParent> | null = null;
  try {
    // Built before compute is charged: a build is never billed to the run.
    const python = await runPython(deps, run, alive);
    if (typeof python !== 'string') return { status: 'failed', error: python.error, computeSeconds: 0 };
    // A warm parent of the run's key forks it when this worker keeps them; a run without
    // one (none within the bounds, or its lab cannot start warm) executes cold, and says why.
    // A PEtab calibration's run is the engine's process, not the lab's driver: it forks from
    // a warm instance of the engine instead (petab/engine.ts).
    const petab = run.metadata.study === 'petab_calibration';
    lease = deps.warm && !petab ? await whileAlive(alive, deps.warm.lease(parentKey(run), () => startRunParent(deps, run, profile, python), stopSignal).catch(() => null)) : null;
    const source = lease ? lease.instance.source : await materialize(deps, run, path.join(dir, 'input'));
    if ('error' in source) return { status: 'failed', error: source.error, computeSeconds: 0 };
    const staged = lease ? null : await stageInputs(deps, run, source.manifest, path.join(dir, 'input'));
    if (staged && 'error' in staged) return { status: 'failed', error: staged.error, computeSeconds: 0 };
    // Compute is charged from here: waiting for a slot or a worker costs nothing.
    const begin = async () => {
      await markRunStarted(deps.db, run.id);
      await appendEvent(deps.db, run.id, 'log', `Executing ${run.resolved_ref} on ${profile.id}.`, { stream: 'worker' });
    };
    const results = path.join(dir, 'results');
    await mkdir(results);
    if (petab) return await petabRun(deps, { run, profile, python, dir, entry: source.entry, results, wallSeconds, capStops, stopSignal, alive, begin });
    const declared = listOf(source.manifest?.io?.outputs as Array<{ name?: unknown; public?: unknown; units?: unknown }> | undefined)
      .filter((o) => o && typeof o.name === 'string')
      .map((o) => ({ name: o.name as string, public: o.public !== false, units: typeof o.units === 'string' ? o.units : null }));
    const sink = createOutputSink(results, declared);
    opened = sink;
    let visuals: unknown = null;
    let logs = 0;
    let lastProgressWrite = 0;
    // Events are appended in the order the driver wrote them, in batches.
    const events = createEventBatcher(deps.db, run.id);
    // Its first event goes with the lab's own first ones, in one write.
    const beginLab = async () => {
      await markRunStarted(deps.db, run.id);
      events.add('log', `Executing ${run.resolved_ref} on ${profile.id}.`, { stream: 'worker' });
    };
    const log = (message: string, data: Record<string, unknown>) => {
      if (logs >= MAX_LOG_EVENTS) return;
      logs += 1;
      events.add('log', message.slice(0, 2000), data);
    };
    const hooks: LabProcessHooks = {
      // Temporal hears the run is alive only while its lab is (supervision.ts).
      onAlive: alive,
      onStart: (p) => {
        pid = p;
        events.add('log', `Lab process started (process group ${p}${lease ? `, forked from warm instance ${lease.instance.pid}` : ''}).`, { stream: 'worker', pid: p, ...(lease ? { warm_instance: lease.instance.pid } : {}) });
      },
      onLog: (stream, line) => log(line, { level: stream === 'stderr' ? 'warning' : 'info', stream }),
      onMessage: async (msg) => {
        if (msg.type === 'progress') {
          const fraction = Number(msg.fraction) || 0;
          const now = Date.now();
          if (now - lastProgressWrite >= 1000 || fraction >= 1) {
            lastProgressWrite = now;
            // The run's progress is written with its event (silico_append_run_events).
            events.add('progress', `${Math.round(fraction * 100)}%`, { fraction, t: Number(msg.t) || 0 });
          }
        } else if (msg.type === 'log') log(String(msg.message), { level: String(msg.level ?? 'info'), stream: 'driver' });
        else if (msg.type === 'series') await sink.addSeries(String(msg.name), msg.points);
        else if (msg.type === 'output') sink.setFinal(String(msg.name), msg.value);
        else if (msg.type === 'visual') visuals = msg.visuals;
      },
    };
    const limits = oneShotLimits(profile, run.max_runtime_seconds);
    const request = { seed: run.seed, ...source.request };
    alive();
    let outcome;
    try {
      if (lease) {
        outcome = await lease.instance.invoke(async (staging) => {
          // File and dataset inputs are checked and staged for this run alone, as a cold run's.
          const inputs = await stageInputs(deps, run, source.manifest, staging.host);
          if ('error' in inputs) throw new InputsUnavailable(inputs.error);
          await beginLab();
          return { inputs: inputs.values(staging.inside), ...request, cpu_seconds: limits.cpuSeconds };
        }, {
          wallSeconds, signal: stopSignal, limits: deps.streamLimits, timedOut: timedOutMessage(wallSeconds),
          watch: { memoryBytes: limits.labMemoryBytes ?? null, stallSeconds: deps.stallSeconds ?? 10 },
        }, hooks);
      } else {
        await beginLab();
        outcome = await runLabProcess(deps.sandbox, {
          python, script: DRIVER, input: path.join(dir, 'input'), scratch: path.join(dir, 'scratch'),
          args: (p) => [path.join(p.input, source.entry), p.scratch], limits, env: labEnv(profile.vcpus),
        }, (p) => JSON.stringify({ inputs: staged!.values(p.input), ...request }), { wallSeconds, signal: stopSignal, limits: deps.streamLimits, stallSeconds: deps.stallSeconds ?? 10 }, hooks);
      }
    } catch (err) {
      if (err instanceof InputsUnavailable) return { status: 'failed', error: err.error, computeSeconds: 0 };
      if (err instanceof WarmInstanceFailed) return { status: 'failed', error: err.error, computeSeconds: 0 };
      if (err instanceof SandboxUnavailable) return { status: 'failed', error: { code: err.code, message: err.message }, computeSeconds: 0 };
      throw err;
    } finally {
      lease?.release();
      lease = null;
      labDone?.();
      await events.flushed();
    }
    const computeSeconds = outcome.result?.cpu_seconds ?? outcome.wallSeconds;
    // A run whose warm instance died under it (its whole sandbox killed) ends as a cold
    // run's whose sandbox was killed would.
    const lost = outcome.error?.code === 'instance_lost' ? signalError(outcome.exitCode) : null;
    const error = lost ?? outcomeError(outcome);
    if (!outcome.cancelled && error?.missing_module) {
      const lab = await readLabManifests(deps.objects, source.tree, source.manifest);
      return { status: 'failed', error: { code: error.code, message: await teachMissingModule(error.message, error.missing_module, lab, deps.environments.indexUrl) }, computeSeconds };
    }
    const ending = endingOf({ cancelled: outcome.cancelled, wallSeconds: outcome.wallSeconds, error }, computeSeconds, { run, profileId: profile.id, capStops, wallSeconds });
    if (ending) return ending;
    const missing = sink.missing();
    if (missing.length) {
      return { status: 'failed', error: { code: 'output_contract_violation', message: `Declared outputs missing: ${missing.join(', ')}.` }, computeSeconds };
    }
    const { files, values } = await sink.finish(seriesSvg);
    const outputs = await storeResults(deps, run.id, files, values, declared, visuals);
    return { status: 'completed', computeSeconds, outputs };
  } finally {
    lease?.release();
    opened?.discard();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * How an execution that did not complete ends, or null when it completed: cancelled (on
 * the run's cancel notice, or Temporal's), timed out or stopped by its spend cap, or failed
 * in its own words; the platform's own failure to start a sandbox costs its owner nothing.
 */
function endingOf(
  o: { cancelled: boolean; wallSeconds: number; error: { code: string; message: string } | null }, computeSeconds: number,
  c: { run: RunRow; profileId: string; capStops: boolean; wallSeconds: number },
): ExecutionResult | null {
  if (o.cancelled) {
    throwIfActivityStopped();
    // Stopped on the run's cancel notice, before Temporal's reached this activity.
    return { status: 'cancelled', error: null, computeSeconds: o.wallSeconds };
  }
  const { error } = o;
  if (error?.code === 'timed_out' && c.capStops) {
    return { status: 'cancelled', error: spendCapReached(`run on ${c.profileId}`, Number(c.run.cap_micros), c.wallSeconds), computeSeconds: o.wallSeconds };
  }
  if (error?.code === 'timed_out') return { status: 'timed_out', error, computeSeconds: o.wallSeconds };
  if (error?.code === 'sandbox_unavailable') return { status: 'failed', error, computeSeconds: 0 };
  if (error) return { status: 'failed', error, computeSeconds };
  return null;
}

/**
 * A run of a PEtab calibration, once its lab is materialized: the engine carries its
 * point's task (petabTask.ts) and its outputs record is what the task found.
 */
async function petabRun(deps: ExecutionDeps, c: {
  run: RunRow; profile: NonNullable<Awaited<ReturnType<typeof getComputeProfile>>>; python: string; dir: string; entry: string; results: string;
  wallSeconds: number; capStops: boolean; stopSignal: AbortSignal; alive(): void; begin(): Promise<void>;
}): Promise<ExecutedRun> {
  let found;
  try {
    found = await executePetabTask({
      db: deps.db, objects: deps.objects, sandbox: deps.sandbox, run: c.run, python: c.python, warm: deps.warm && { parents: deps.warm, owner: c.run.account_id },
      labDir: path.join(c.dir, 'input', c.entry), scratch: path.join(c.dir, 'scratch'), results: c.results,
      limits: oneShotLimits(c.profile, c.run.max_runtime_seconds), vcpus: c.profile.vcpus, wallSeconds: c.wallSeconds, signal: c.stopSignal, alive: c.alive, begin: c.begin,
    });
  } catch (err) {
    if (err instanceof SandboxUnavailable) return { status: 'failed', error: { code: err.code, message: err.message }, computeSeconds: 0 };
    throw err;
  }
  const { outcome, values, command } = found;
  const computeSeconds = outcome.cpuSeconds || outcome.wallSeconds;
  const ending = endingOf(outcome, computeSeconds, { run: c.run, profileId: c.profile.id, capStops: c.capStops, wallSeconds: c.wallSeconds });
  if (ending) return ending;
  const outputs = await storeResults(deps, c.run.id, [], values, petabOutputs(command), null);
  return { status: 'completed', computeSeconds, outputs };
}

/**
 * Throws what ends the current activity when Temporal stopped it: a worker shutting down
 * (not the user cancelling: the workflow schedules its runs again), or a cancellation.
 */
export function throwIfActivityStopped(): void {
  const ctx = Context.current();
  if (ctx.cancellationDetails?.workerShutdown) throw ApplicationFailure.create({ type: WORKER_SHUTDOWN, nonRetryable: true, message: 'The worker shut down during the run; it runs again on another worker.' });
  if (ctx.cancellationSignal.aborted) throw new CancelledFailure('run cancelled');
}

/**
 * The interpreter a run executes with: the default runtime's, or its own lock's
 * environment, built here first when this host has none (as `progress` events with
 * `phase: environment`, heartbeating while the build is alive).
 */
async function runPython(deps: ExecutionDeps, run: RunRow, beat: () => void): Promise<string | { error: { code: string; message: string } }> {
  // The build's start is heard synchronously; its event is written in order before the end's.
  const notes = createWriteChain();
  try {
    return await whileAlive(beat, environmentPython(deps, run.runtime_sha256, {
      started: (lock) => notes.add(() => appendEvent(deps.db, run.id, 'progress', `Building the lab's environment (Python ${lock.python}, lock sha256:${lock.sha256}); not billed to the run.`, { phase: 'environment', status: 'building', lock_sha256: lock.sha256 })),
      finished: async (lock, seconds) => {
        notes.add(() => appendEvent(deps.db, run.id, 'progress', `Environment built in ${Math.round(seconds)} s.`, { phase: 'environment', status: 'built', lock_sha256: lock.sha256, seconds }));
        await notes.settled();
      },
    }));
  } catch (err) {
    if (err instanceof EnvironmentUnavailable) return { error: { code: err.code, message: err.message } };
    throw err;
  }
}

/**
 * Stores a completed run's artifacts by content address (a series streamed from the worker's disk, a record from memory),
 * and returns its outputs record (storeOutputs), each artifact recorded as the run's.
 */
async function storeResults(
  deps: { db: Db; objects: ObjectStore }, runId: string, files: ArtifactFile[],
  values: Map<string, unknown>, declared: Array<{ name: string; public: boolean }>, visuals: unknown,
): Promise<Record<string, unknown>> {
  return storeOutputs(files, values, declared, visuals, { evidence: true }, (f) => storeRunArtifact(deps, runId, f));
}

/** Artifact files stored at once. */
const STORE_CONCURRENCY = 6;

/**
 * A completed execution's outputs record, the public outputs only: each final value
 * inline when small, else a reference to the artifact holding it; every file is given to
 * `store` (which returns its id). With `evidence` (a run's), `outputs.json` carries the
 * same, the rest go to the owner's private `private-outputs.json` and the visuals to
 * `visuals.json`; without (an invocation's, whose values are its record), only the
 * outputs' own files are stored.
 */
export async function storeOutputs(
  files: ArtifactFile[], values: Map<string, unknown>, declared: Array<{ name: string; public: boolean }>, visuals: unknown,
  opts: { evidence: boolean }, store: (f: ArtifactFile) => Promise<string>,
): Promise<Record<string, unknown>> {
  // Files go to the store side by side (a few at a time): one after another, a lab's
  // handful of small files cost a round trip each to the object store and Postgres.
  const limit = pLimit(STORE_CONCURRENCY);
  const storeAll = (fs: ArtifactFile[]) => Promise.all(fs.map((f) => limit(() => store(f))));
  const outputs: Record<string, unknown> = {};
  const refs: Array<{ name: string; file: ArtifactFile }> = [];
  for (const d of declared) {
    const value = values.get(d.name) ?? null;
    const json = JSON.stringify(value);
    if (Buffer.byteLength(json) <= MAX_INLINE_OUTPUT_BYTES) {
      outputs[d.name] = value;
      continue;
    }
    refs.push({ name: d.name, file: textArtifact({ role: d.name, file_name: `${d.name}.json`, content_type: 'application/json', format: 'json', public: d.public }, json) });
  }
  // The outputs records name the references' artifacts, so they wait for those only
  // (usually none), not for the lab's own files.
  const filesStored = storeAll(files);
  filesStored.catch(() => undefined); // awaited below; a failure meanwhile is not unhandled
  const refIds = await storeAll(refs.map((r) => r.file));
  refs.forEach(({ name, file }, i) => {
    outputs[name] = { artifact_ref: { artifact_id: refIds[i], file_name: file.file_name, sha256: file.sha256, size_bytes: file.size_bytes } };
  });
  const of = (pub: boolean) => Object.fromEntries(declared.filter((d) => d.public === pub).map((d) => [d.name, outputs[d.name]]));
  const publicOutputs = of(true);
  const last: ArtifactFile[] = [];
  if (opts.evidence) {
    last.push(textArtifact({ role: 'outputs', file_name: 'outputs.json', content_type: 'application/json', format: 'json', public: true }, `${JSON.stringify(publicOutputs, null, 2)}\n`));
    // Outputs the lab does not declare public stay with the owner's evidence, out of results.
    const privateOutputs = of(false);
    if (Object.keys(privateOutputs).length) {
      last.push(textArtifact({ role: 'private_outputs', file_name: 'private-outputs.json', content_type: 'application/json', format: 'json', public: false }, `${JSON.stringify(privateOutputs, null, 2)}\n`));
    }
    // The runtime reports an empty list for a lab without visual models: nothing to keep.
    if (visuals && !(Array.isArray(visuals) && visuals.length === 0)) last.push(textArtifact({ role: 'visuals', file_name: 'visuals.json', content_type: 'application/json', format: 'json', public: true }, JSON.stringify(visuals)));
  }
  await Promise.all([filesStored, storeAll(last)]);
  return publicOutputs;
}

export type ExecutionActivities = ReturnType<typeof createExecutionActivities>;
