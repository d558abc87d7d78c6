import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { outcomeError, runLabProcess, type LabError } from '../execution/labProcess.ts';
import { labEnv } from '../execution/labSpec.ts';
import type { Sandbox, SandboxLimits } from '../execution/sandbox.ts';

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
  const outcome = await runLabProcess(sandbox, {
    python: call.python, script: ENGINE, input: call.problemDir, scratch: call.scratch,
    args: (p) => [path.join(p.input, call.yaml)], limits: call.limits, env: labEnv(call.vcpus),
  }, JSON.stringify(call.request), { wallSeconds: call.wallSeconds, signal: call.signal, stallSeconds: 10 }, {
    onMessage: async (msg) => {
      if (msg.type === 'heartbeat') return;
      if (msg.type === 'versions') versions = msg.versions as Record<string, string>;
      else if (msg.type === 'problem') problem = msg as unknown as ProblemDescription;
      await call.onMessage?.(msg);
    },
    onAlive: call.onAlive,
  });
  return {
    error: outcomeError(outcome), versions, problem, cpuSeconds: outcome.result?.cpu_seconds ?? 0,
    wallSeconds: outcome.wallSeconds, cancelled: outcome.cancelled,
  };
}
