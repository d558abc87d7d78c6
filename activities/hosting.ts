import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import type { Db } from '../storage/db/knex.ts';
import type { ObjectStore } from '../storage/objects.ts';
import { sha256Hex } from '../storage/digest.ts';
import { getReleaseById } from '../storage/db/releases.ts';
import { chargeStandingCost, getHosting, recordHosting, type HostingChange, type HostingCheck } from '../storage/db/hosting.ts';
import { environmentPython, EnvironmentUnavailable } from './environments/python.ts';
import type { EnvironmentSettings } from '../kernel/environments.ts';
import { smokeRun } from './execution/smokeRun.ts';
import { smokeInputsOf } from '../storage/labContract.ts';
import type { Sandbox } from './execution/sandbox.ts';

export type { HostingAction, HostingStatus } from '../storage/db/hosting.ts';

export interface ChecksResult { ok: boolean; checks: HostingCheck[] }

/** How long the smoke run of a hosting's checks may take. */
const SMOKE_SECONDS = 600;

/**
 * Activities of a hosting lifecycle: the record of each decision (control queue) and the
 * deployment checks (on a worker of the hosting's profile: the release's bytes against
 * their address, the runtime environment, and a sandboxed smoke run of the private
 * fixtures).
 */
export function createHostingActivities(deps: { db: Db; objects: ObjectStore; python: string; environments: EnvironmentSettings; sandbox: Sandbox }) {
  return {
    async recordHosting(labId: string, generation: number, change: HostingChange, event: { kind: string; actor?: string | null; message: string }): Promise<void> {
      await recordHosting(deps.db, labId, generation, change, event);
    },

    /** The standing cost of the period that ended at `periodEnd` (once per period). */
    async accrueStandingCost(labId: string, generation: number, periodEnd: string, seconds: number): Promise<{ charged_micros: number; short: boolean }> {
      return chargeStandingCost(deps.db, labId, generation, periodEnd, seconds);
    },

    async hostingChecks(labId: string, generation: number): Promise<ChecksResult> {
      const hosting = await getHosting(deps.db, labId);
      if (!hosting || hosting.generation !== generation) throw new Error(`no hosting ${labId} generation ${generation}`);
      const release = (await getReleaseById(deps.db, hosting.release_id))!;
      const at = () => new Date().toISOString();
      const checks: HostingCheck[] = [];
      const dir = await mkdtemp(path.join(tmpdir(), 'silico-hosting-'));
      const beat = setInterval(() => Context.current().heartbeat(), 5000);
      try {
        const bytes = release.archive_key ? await deps.objects.getBytes(release.archive_key) : null;
        const address = bytes ? `blobs/sha256/${sha256Hex(bytes)}` : null;
        const intact = Boolean(bytes) && address === release.archive_key;
        checks.push({
          check: 'release_bytes', status: intact ? 'passed' : 'failed', checked_at: at(),
          detail: intact ? `The package archive re-hashed to its address (${release.archive_key!.split('/').pop()}).` : 'The stored package archive is missing or does not match its address.',
        });
        const problems = release.runtime_problems ?? [];
        // The release's own environment, built on this worker when it has none yet.
        let python: string | null = null;
        let built = '';
        try {
          python = problems.length ? null : await environmentPython(deps, release.environment_lock_sha256);
        } catch (err) {
          if (!(err instanceof EnvironmentUnavailable)) throw err;
          built = err.message;
        }
        checks.push({
          check: 'environment', status: python ? 'passed' : 'failed', checked_at: at(),
          detail: problems.length ? `The platform runtime cannot satisfy this release: ${problems.join('; ')}.`
            : built ? `Its environment could not be built: ${built}`
            : release.environment_lock_sha256 ? `A worker of ${hosting.compute_profile} serves it, in the release's own environment (lock sha256:${release.environment_lock_sha256}).`
            : `A worker of ${hosting.compute_profile} serves it and the runtime satisfies the lab's pins.`,
        });
        if (!intact || !python) {
          checks.push({ check: 'smoke_run', status: 'failed', detail: `Not run: ${!intact ? 'the release bytes are not intact' : 'it has no environment'}.`, checked_at: at() });
        } else {
          await mkdir(path.join(dir, 'lab'));
          await writeFile(path.join(dir, 'lab', 'lab.bsilab'), bytes!);
          const inputs = smokeInputsOf(release.manifest);
          const smoke = await smokeRun(deps.sandbox, python, dir, { inputs, seed: 0, package_sha256: release.package_sha256 }, SMOKE_SECONDS, 'lab.bsilab');
          checks.push({ check: 'smoke_run', status: smoke.ok ? 'passed' : 'failed', detail: `${Object.keys(inputs).length ? 'Private smoke fixtures' : 'Default inputs (the release declares no smoke inputs)'}: ${smoke.message}`, checked_at: at() });
        }
        return { ok: checks.every((c) => c.status === 'passed'), checks };
      } finally {
        clearInterval(beat);
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

export type HostingActivities = ReturnType<typeof createHostingActivities>;
