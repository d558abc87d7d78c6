import { chmod, cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { outcomeError, runLabProcess, signalError, timedOutMessage, type LabError, type LabProcessHooks, type LabProcessOutcome } from '../execution/labProcess.ts';
import { labEnv } from '../execution/labSpec.ts';
import type { Sandbox, SandboxLimits } from '../execution/sandbox.ts';
import { startServing, WarmInstanceFailed, type WarmInstance } from '../execution/warmInstance.ts';
import type { WarmParents } from '../execution/warmParents.ts';
import { whileAlive } from '../execution/supervision.ts';

/** The PEtab engine (engine.py), the trusted script every PEtab evaluation runs. */
export const ENGINE = fileURLToPath(new URL('./engine.py', import.meta.url));

/** What the engine says of a problem before any command's answer (its `problem` message). */
export interface ProblemDescription {
  /** The estimated parameters, with their scales, bounds and nominal values on their scales. */
  parameters: string[]; scales: string[]; lb: number[]; ub: number[]; nominal: number[];
  /** The parameter table's every row as written (linear values), estimated or fixed. */
  parameter_table: ParameterRow[];
  observables: string[]; conditions: string[]; measurements: number; preequilibration: boolean;
  /** The SBML model: its global parameters with their values, and the entities the observable formulas read. */
  model: { id: string | null; name: string | null; parameters: Record<string, number>; observed: string[]; species: string[] };
  /** The last finite measurement time. */
  max_time: number;
}

/** One row of a PEtab parameter table. */
export interface ParameterRow {
  id: string; name: string | null; scale: string;
  lower_bound: number | null; upper_bound: number | null; nominal_value: number | null; estimate: boolean;
}

/** One finding of the petab library's lint, located where its message says. */
export interface LintFinding { level: 'error' | 'warning'; message: string; file: string | null; row: number | null; column: string | null }

export type EngineRequest =
  | { command: 'describe' | 'lint' | 'inspect' }
  | { command: 'evaluate'; sets: Array<Record<string, number>>; petab_llh?: boolean; simulations?: boolean }
  | { command: 'optimize'; optimizer: 'fides' | 'lbfgsb'; starts: Array<{ index: number; x0: number[]; x?: number[]; n_fval?: number }>; max_evaluations?: number; max_iterations?: number }
  | { command: 'profile'; x: number[]; parameters: string[]; options?: Record<string, number>; hessian?: boolean }
  | { command: 'hessian' | 'fit'; x: number[] };

export interface EngineCall {
  /** The interpreter of the problem's environment. */
  python: string;
  /** A host folder holding the problem's files (shown read-only to the engine). */
  problemDir: string;
  /** The problem's YAML, relative to that folder. */
  yaml: string;
  /** Where the engine's scratch lives on the host (nothing is read back from it). */
  scratch: string;
  request: EngineRequest;
  limits: SandboxLimits;
  vcpus: number;
  wallSeconds: number;
  signal?: AbortSignal;
  /** Each message after `hello` other than heartbeats, in order. */
  onMessage?(msg: Record<string, unknown>): void | Promise<void>;
  /** Each second the engine's liveness holds: the moment to heartbeat. */
  onAlive?(): void;
  /** The engine's process group once it runs, and the warm instance it was forked from (null: a cold process). */
  onStart?(pid: number, warmInstance: number | null): void;
  /**
   * Warm instances to fork the command from (the toolkit imported once: seconds of every
   * cold start), and whose command it is: an owner's instances serve its commands and no
   * one else's. Without them, or when none can be had, the command runs cold.
   */
  warm?: { parents: WarmParents; owner: string };
}

export interface EngineOutcome {
  error: LabError | null;
  versions: Record<string, string>;
  problem: ProblemDescription | null;
  cpuSeconds: number;
  wallSeconds: number;
  cancelled: boolean;
}

/**
 * Runs one command of the engine on one problem, sandboxed like a lab (its own user, no
 * network, the problem read-only, bounded, under the system-call filter): a PEtab problem
 * is a stranger's, and its formulas are parsed by sympy, which evaluates what it parses.
 * Never throws for the engine's behaviour (the outcome's error says it); throws
 * SandboxUnavailable when the sandbox cannot be made.
 */
export async function runEngine(sandbox: Sandbox, call: EngineCall): Promise<EngineOutcome> {
  let versions: Record<string, string> = {};
  let problem: ProblemDescription | null = null;
  const hooks: LabProcessHooks = {
    onMessage: async (msg) => {
      if (msg.type === 'heartbeat') return;
      if (msg.type === 'versions') versions = msg.versions as Record<string, string>;
      else if (msg.type === 'problem') problem = msg as unknown as ProblemDescription;
      await call.onMessage?.(msg);
    },
    onAlive: call.onAlive,
    onStart: (pid) => call.onStart?.(pid, null),
  };
  const outcome = await runWarm(sandbox, call, hooks) ?? await runLabProcess(sandbox, {
    python: call.python, script: ENGINE, input: call.problemDir, scratch: call.scratch,
    args: (p) => [path.join(p.input, call.yaml)], limits: call.limits, env: labEnv(call.vcpus),
  }, JSON.stringify(call.request), { wallSeconds: call.wallSeconds, signal: call.signal, stallSeconds: STALL_SECONDS }, hooks);
  // A command whose warm instance died under it ends as a cold one whose sandbox was killed.
  const lost = outcome.error?.code === 'instance_lost' ? signalError(outcome.exitCode) : null;
  return {
    error: lost ?? outcomeError(outcome), versions, problem, cpuSeconds: outcome.result?.cpu_seconds ?? 0,
    wallSeconds: outcome.wallSeconds, cancelled: outcome.cancelled,
  };
}

/** An engine silent this long with no CPU used is ended `lab_unresponsive` (it heartbeats every 2 s). */
const STALL_SECONDS = 10;
/** How long a warm instance gets to import the toolkit before its commands go cold. */
const READY_SECONDS = 120;

/**
 * The command forked from a warm instance of the engine for its owner, environment and
 * limits, its problem staged in that instance's scratch for this command alone; null when
 * it must run cold (no instances given, none within their bounds, or one that could not
 * start or was gone).
 */
async function runWarm(sandbox: Sandbox, call: EngineCall, hooks: LabProcessHooks): Promise<LabProcessOutcome | null> {
  if (!call.warm) return null;
  const key = ['petab-engine', call.warm.owner, call.python, call.vcpus, JSON.stringify(call.limits)].join('|');
  const starting = call.warm.parents.lease(key, () => startEngineInstance(sandbox, call), call.signal).catch(() => null);
  // Alive while an instance starts (it imports the toolkit) as while a command runs.
  const lease = call.onAlive ? await whileAlive(call.onAlive, starting) : await starting;
  if (!lease) return null;
  try {
    return await lease.instance.invoke(async (staging) => {
      await cp(call.problemDir, staging.host, { recursive: true });
      // Readable by the sandbox's user, as the folder a cold command is shown is.
      await chmod(staging.host, 0o755);
      return { ...call.request, yaml: path.join(staging.inside, call.yaml), cpu_seconds: call.limits.cpuSeconds };
    }, {
      wallSeconds: call.wallSeconds, signal: call.signal, timedOut: timedOutMessage(call.wallSeconds),
      watch: { memoryBytes: call.limits.labMemoryBytes ?? null, stallSeconds: STALL_SECONDS },
    }, { ...hooks, onStart: (pid) => call.onStart?.(pid, lease.instance.pid) });
  } catch (err) {
    if (err instanceof WarmInstanceFailed) return null;
    throw err;
  } finally {
    lease.release();
  }
}

/** A warm instance of the engine (engine.py --serve): sandboxed as a cold command is, with nothing of any problem in it until a command stages one. */
async function startEngineInstance(sandbox: Sandbox, call: EngineCall): Promise<WarmInstance> {
  const dir = await mkdtemp(path.join(tmpdir(), 'silico-engine-'));
  const removeDir = () => void rm(dir, { recursive: true, force: true }).catch(() => undefined);
  try {
    await mkdir(path.join(dir, 'input'));
    return await startServing(sandbox, {
      python: call.python, script: ENGINE, input: path.join(dir, 'input'), scratch: path.join(dir, 'scratch'),
      limits: call.limits, env: labEnv(call.vcpus),
    }, (p, socket) => ['--serve', p.scratch, socket], {}, { readySeconds: READY_SECONDS, onExit: removeDir });
  } catch (err) {
    removeDir();
    throw err;
  }
}
