import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import type { Db } from '../storage/db/knex.ts';
import type { ObjectStore } from '../storage/objects.ts';
import { sha256Hex } from '../storage/digest.ts';
import { getHosting } from '../storage/db/hosting.ts';
import { getReleaseById } from '../storage/db/releases.ts';
import { getComputeProfile } from '../storage/db/computeProfiles.ts';
import { listOf } from '../storage/labContract.ts';
import {
  finishInvocation, getInvocation, leaseInvocation, renewLease, servingQueue, setServingQueue, type InvocationEnding, type InvocationResult,
} from '../storage/db/hostedInvocations.ts';
import { storeOutputs } from './execution/execute.ts';
import { putArtifactBytes } from './execution/artifactBytes.ts';
import { labEnv, runLimits } from './execution/labSpec.ts';
import { createOutputSink, type OutputSink } from './execution/outputs.ts';
import { outcomeError, spendCapReached } from './execution/labProcess.ts';
import { startWarmInstance, WarmInstanceFailed } from './execution/warmInstance.ts';
import { createWarmPool, PoolClosed, type WarmPool } from './execution/warmPool.ts';
import type { Sandbox } from './execution/sandbox.ts';
import type { CancelWatch } from '../storage/db/cancelWatch.ts';
import { stageInputs } from './execution/stagedInputs.ts';
import { environmentPython } from './environments/python.ts';
import type { EnvironmentSettings } from '../kernel/environments.ts';

export type { InvocationEnding } from '../storage/db/hostedInvocations.ts';

/** How long a lease lasts without a renewal from the execution's heartbeats. */
export const LEASE_SECONDS = 10;
/** The failure type of an invocation sent to a worker that does not serve its deployment. */
export const NOT_SERVED_HERE = 'NotServedHere';

/** A deployment this worker serves: its warm pool and the outputs its release declares. */
export interface Served { pool: WarmPool; manifest: Record<string, unknown>; declared: Array<{ name: string; public: boolean }> }
/** The deployments whose warm instances this worker process holds, by `<lab_id>:<generation>`. */
export type Deployments = Map<string, Served>;

/** An input named by the invocation is no longer the invoker's, or its bytes changed: nothing runs. */
class InputsUnavailable extends Error {}

/** The outputs a release's lab.yaml declares, each with whether it is public. */
function declaredOutputs(manifest: Record<string, unknown>): Served['declared'] {
  return listOf((manifest as { io?: { outputs?: Array<{ name?: unknown; public?: unknown }> } }).io?.outputs)
    .filter((o) => o && typeof o.name === 'string').map((o) => ({ name: o.name as string, public: o.public !== false }));
}
const deploymentKey = (labId: string, generation: number) => `${labId}:${generation}`;

interface Deps {
  db: Db; objects: ObjectStore; python: string; environments: EnvironmentSettings; sandbox: Sandbox; deployments: Deployments; hostQueue: string;
  /** Cancellation notices (the worker's listener); without them a cancel is seen at the next lease renewal. */
  cancels?: CancelWatch;
  /** Announcements of invocations accepted for the deployments this worker serves (their ids). */
  announced?: (begin: (invocationId: string) => void) => void;
}

/** What one execution of an invocation came to, for its workflow. */
type HostedResult = { status: 'completed' | 'failed' | 'cancelled' | 'skipped'; error?: { code: string; message: string } | null; computeSeconds: number };

/** How long an ended execution is kept to answer its workflow's activity, should that come late. */
const ENDED_KEPT_MS = 60_000;

/**
 * An attempt whose lease a later one took (it was presumed lost) ends without recording:
 * the later attempt ends the invocation. Failed as a lost worker's, so a workflow that did
 * still wait for it tries again rather than take its word.
 */
const supersededFailure = () => ApplicationFailure.retryable('A later attempt holds the invocation\'s lease.', NOT_SERVED_HERE);

/**
 * Activities of hosted execution. `serveDeployment` (on a worker of the profile) holds a
 * ready deployment's warm pool for as long as it is not cancelled and tells where it is
 * served (this worker's own task queue); `invokeHosted` (on that queue) runs one
 * invocation on a warm instance under a lease renewed every second, or joins the
 * execution its announcement began here already (one execution per invocation on a
 * worker); the control steps read the schedule and record the ending (settled once).
 */
export function createInvocationActivities(deps: Deps) {
  /** The executions this worker has begun, by invocation id, until a while after they end. */
  const executing = new Map<string, { result: Promise<HostedResult>; stop: AbortController }>();

  const begin = (invocationId: string) => {
    const stop = new AbortController();
    const entry = { result: execute(invocationId, stop), stop };
    executing.set(invocationId, entry);
    // Its failure is its joiner's to report; a late activity still finds it for a while.
    entry.result.catch(() => undefined).finally(() => setTimeout(() => {
      if (executing.get(invocationId) === entry) executing.delete(invocationId);
    }, ENDED_KEPT_MS).unref());
    return entry;
  };
  // Begun on its announcement, under its lease, an invocation is under way (or ended) when
  // its workflow's activity reaches this worker, which joins it.
  deps.announced?.((invocationId) => {
    if (!executing.has(invocationId)) begin(invocationId);
  });

  /**
   * Runs one invocation on a warm instance of its deployment under a lease renewed every
   * second (a revoked one stops it), stopped by `stop` (its activity's cancellation) or its
   * cancellation notice; the ending it comes to is settled here (a completed one with its result).
   */
  async function execute(invocationId: string, stop: AbortController): Promise<HostedResult> {
    const inv = await getInvocation(deps.db, invocationId);
    if (!inv) return { status: 'skipped', computeSeconds: 0 };
    const served = deps.deployments.get(deploymentKey(inv.lab_id, inv.hosting_generation));
    if (!served) throw ApplicationFailure.nonRetryable('This worker does not serve the deployment.', NOT_SERVED_HERE);
    const { status: leased, attempt } = await leaseInvocation(deps.db, invocationId, LEASE_SECONDS);
    if (leased === 'cancel_requested') return { status: 'cancelled', computeSeconds: 0 };
    if (leased !== 'running' || attempt === null) return { status: 'skipped', computeSeconds: 0 };
    // Made first: a failure here leaves no listener, timer or lease behind.
    const dir = await mkdtemp(path.join(tmpdir(), 'silico-invocation-'));
    // A requested cancellation stops it at once (its notice), not at the next renewal.
    const unwatch = deps.cancels?.watch(invocationId, () => stop.abort());
    // The lease is renewed with every heartbeat; one that was revoked stops the work.
    let renewing = false;
    /** A later attempt took the lease: this one was presumed lost, and records nothing. */
    let superseded = false;
    const beat = setInterval(() => {
      if (renewing) return;
      renewing = true;
      renewLease(deps.db, invocationId, LEASE_SECONDS, attempt).then((lease) => {
        if (lease === 'held') return;
        superseded = lease === 'superseded';
        stop.abort();
      }, () => undefined).finally(() => { renewing = false; });
    }, 1000);
    /**
     * An ending this execution came to, recorded here (fenced by its attempt) as soon as it
     * is known, so its invoker's answer waits on no workflow; the workflow records the
     * endings an execution cannot (a lost worker, a failure of the platform). A completed
     * one comes with its result and the storing of its bytes, which the recording waits for.
     */
    const ended = async (r: HostedResult & { status: 'completed' | 'failed' | 'cancelled' }, result?: InvocationResult, stored?: Promise<unknown>): Promise<HostedResult> => {
      stored?.catch(() => undefined); // awaited by the recording; not unhandled should it not come to that
      if (superseded) throw supersededFailure();
      const recorded = await finishInvocation(deps.db, { id: invocationId, status: r.status, error: r.error ?? null, computeSeconds: r.computeSeconds }, result, stored, attempt);
      if (recorded === 'superseded') throw supersededFailure();
      return r;
    };
    const lease = await served.pool.acquire(stop.signal).catch((err: unknown) => err instanceof Error ? err : new Error(String(err)));
    let opened: OutputSink | undefined;
    /** The artifacts' bytes on their way to the object store. */
    const puts: Array<Promise<void>> = [];
    try {
      if (lease instanceof Error) {
        if (stop.signal.aborted) return await ended({ status: 'cancelled', computeSeconds: 0 });
        if (lease instanceof PoolClosed) throw ApplicationFailure.retryable(lease.message, NOT_SERVED_HERE);
        // The platform could not give it an instance: a failure, charged nothing.
        return await ended({ status: 'failed', error: { code: 'instance_unavailable', message: `No warm instance of the deployment could start: ${lease.message}` }, computeSeconds: 0 });
      }
      const { declared } = served;
      const sink = createOutputSink(dir, declared);
      opened = sink;
      let outcome;
      try {
        // File and dataset inputs are the invoker's, checked again and staged for this invocation alone.
        outcome = await lease.instance.invoke(async (staging) => {
          const staged = await stageInputs(deps, inv, served.manifest, staging.host);
          if ('error' in staged) throw new InputsUnavailable(staged.error.message);
          return { inputs: staged.values(staging.inside), seed: inv.seed, package_sha256: inv.package_sha256 };
        }, { wallSeconds: inv.max_seconds, signal: stop.signal }, {
          onMessage: async (msg) => {
            if (msg.type === 'series') await sink.addSeries(String(msg.name), msg.points);
            else if (msg.type === 'output') sink.setFinal(String(msg.name), msg.value);
          },
        });
      } catch (err) {
        if (err instanceof InputsUnavailable) return await ended({ status: 'failed', error: { code: 'input_unavailable', message: err.message }, computeSeconds: 0 });
        if (err instanceof WarmInstanceFailed) return await ended({ status: 'failed', error: err.error, computeSeconds: 0 });
        throw err;
      } finally {
        lease.release();
      }
      const computeSeconds = outcome.result?.cpu_seconds ?? outcome.wallSeconds;
      if (superseded) throw supersededFailure();
      if (outcome.cancelled) return await ended({ status: 'cancelled', computeSeconds: outcome.wallSeconds });
      const error = outcomeError(outcome);
      if (error?.code === 'timed_out' && inv.cap_micros !== null) {
        return await ended({ status: 'cancelled', error: spendCapReached('invocation', Number(inv.cap_micros), inv.max_seconds), computeSeconds: Math.min(outcome.wallSeconds, inv.max_seconds) });
      }
      if (error) return await ended({ status: 'failed', error, computeSeconds });
      const missing = sink.missing();
      if (missing.length) return await ended({ status: 'failed', error: { code: 'output_contract_violation', message: `Declared outputs missing: ${missing.join(', ')}.` }, computeSeconds });
      // Only the public outputs are the invoker's (the owner's private ones are not
      // kept), each as its port's data: no plots or records beside them.
      const { files, values } = await sink.finish(null);
      const artifacts: InvocationResult['artifacts'] = [];
      // An artifact is named by its digest, known before its bytes are stored: they are
      // stored while the ending is recorded, which commits once they are.
      const outputs = await storeOutputs(files.filter((f) => f.public), values, declared.filter((d) => d.public), null, { evidence: false }, async (f) => {
        const put = putArtifactBytes(deps.objects, f);
        put.catch(() => undefined); // awaited by the ending; a failure meanwhile is not unhandled
        puts.push(put);
        artifacts.push({ invocation_id: invocationId, port: f.role, file_name: f.file_name, content_type: f.content_type, format: f.format, size_bytes: f.size_bytes, sha256: f.sha256 });
        return f.sha256;
      });
      return await ended({ status: 'completed', computeSeconds }, { outputs, artifacts }, Promise.all(puts));
    } finally {
      clearInterval(beat);
      unwatch?.();
      opened?.discard();
      // An ending that did not wait for its bytes (ended elsewhere, or failed) leaves none reading the folder.
      await Promise.allSettled(puts);
      await rm(dir, { recursive: true, force: true });
    }
  }

  return {
    async invocationSchedule(invocationId: string): Promise<{ labId: string; generation: number; maxSeconds: number }> {
      const inv = await getInvocation(deps.db, invocationId);
      if (!inv) throw new Error(`no invocation ${invocationId}`);
      return { labId: inv.lab_id, generation: inv.hosting_generation, maxSeconds: inv.max_seconds };
    },

    async servingQueueOf(labId: string, generation: number): Promise<{ queue: string | null; status: string | null }> {
      const s = await servingQueue(deps.db, labId, generation);
      return { queue: s?.queue ?? null, status: s?.status ?? null };
    },

    async finishInvocation(ending: InvocationEnding): Promise<string> {
      return finishInvocation(deps.db, ending);
    },

    async serveDeployment(labId: string, generation: number): Promise<void> {
      const ctx = Context.current();
      const hosting = await getHosting(deps.db, labId);
      if (!hosting || hosting.generation !== generation) return;
      const release = (await getReleaseById(deps.db, hosting.release_id))!;
      const profile = (await getComputeProfile(deps.db, hosting.compute_profile))!;
      const dir = await mkdtemp(path.join(tmpdir(), 'silico-deployment-'));
      const key = deploymentKey(labId, generation);
      let pool: WarmPool | undefined;
      try {
        const bytes = await deps.objects.getBytes(release.archive_key!);
        if (`blobs/sha256/${sha256Hex(bytes)}` !== release.archive_key) throw ApplicationFailure.nonRetryable('The stored package does not match its address.', 'artifact_store_error');
        await mkdir(path.join(dir, 'input'));
        await writeFile(path.join(dir, 'input', 'lab.bsilab'), bytes);
        // Its instances run in the release's environment (the deployment checks built it).
        const python = await environmentPython(deps, release.environment_lock_sha256);
        let n = 0;
        pool = createWarmPool({
          min: hosting.min_instances, max: hosting.max_instances, idleSeconds: 60,
          start: () => startWarmInstance(deps.sandbox, {
            python, input: path.join(dir, 'input'), scratch: path.join(dir, `instance-${++n}`),
            limits: runLimits(profile, profile.max_runtime_seconds), env: labEnv(profile.vcpus),
          }, 'lab.bsilab', { package_sha256: release.package_sha256 }, { readySeconds: 60 }),
        });
        deps.deployments.set(key, { pool, manifest: release.manifest, declared: declaredOutputs(release.manifest) });
        await setServingQueue(deps.db, labId, generation, deps.hostQueue);
        // Held until the lifecycle cancels it (pause, retire) or this worker goes away.
        await new Promise<void>((resolve) => {
          const beat = setInterval(() => ctx.heartbeat(pool!.stats()), 2000);
          ctx.cancellationSignal.addEventListener('abort', () => {
            clearInterval(beat);
            resolve();
          }, { once: true });
        });
        throw new CancelledFailure('deployment no longer served here');
      } finally {
        deps.deployments.delete(key);
        await setServingQueue(deps.db, labId, generation, null, deps.hostQueue).catch(() => undefined);
        await pool?.close();
        await rm(dir, { recursive: true, force: true });
      }
    },

    async invokeHosted(invocationId: string): Promise<HostedResult> {
      const ctx = Context.current();
      // Begun already on its announcement (or by an earlier attempt here): joined, not run twice.
      const running = executing.get(invocationId) ?? begin(invocationId);
      const onCancel = () => running.stop.abort();
      ctx.cancellationSignal.addEventListener('abort', onCancel);
      const beat = setInterval(() => ctx.heartbeat(), 1000);
      try {
        return await running.result;
      } finally {
        clearInterval(beat);
        ctx.cancellationSignal.removeEventListener('abort', onCancel);
      }
    },
  };
}

export type InvocationActivities = ReturnType<typeof createInvocationActivities>;
