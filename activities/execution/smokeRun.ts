import path from 'node:path';
import { DRIVER, labEnv, oneShotLimits } from './labSpec.ts';
import { outcomeError, runLabProcess } from './labProcess.ts';
import { SandboxUnavailable, type Sandbox } from './sandbox.ts';

/** The profile a smoke run is held to: the smallest one's. */
const SMOKE_PROFILE = { memory_mib: 1024, vcpus: 1 };

/**
 * Runs the lab in `<dir>/lab` (the folder itself, or the package file `entry` in it) to
 * its end with the driver, sandboxed like any run, with no events and no artifacts: the
 * smoke test of publication and of a hosting's deployment checks. Resolves with whether
 * it completed and, when not, the run error it would have had.
 */
export async function smokeRun(sandbox: Sandbox, python: string, dir: string, request: Record<string, unknown>, timeoutSeconds: number, entry?: string): Promise<{ ok: boolean; message: string }> {
  try {
    const outcome = await runLabProcess(sandbox, {
      python, script: DRIVER, input: path.join(dir, 'lab'), scratch: path.join(dir, 'scratch'),
      args: (p) => [entry ? path.join(p.input, entry) : p.input, p.scratch], limits: oneShotLimits(SMOKE_PROFILE, timeoutSeconds), env: labEnv(1),
    }, JSON.stringify(request), { wallSeconds: timeoutSeconds }, { onMessage: () => undefined });
    const error = outcomeError(outcome);
    return error ? { ok: false, message: `${error.code}: ${error.message}`.slice(0, 1000) } : { ok: true, message: 'The smoke inputs ran to completion.' };
  } catch (err) {
    if (err instanceof SandboxUnavailable) return { ok: false, message: `${err.code}: ${err.message}` };
    throw err;
  }
}
