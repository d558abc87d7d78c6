import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ObjectStore } from '../../storage/objects.ts';
import type { EnvironmentSettings } from '../../kernel/environments.ts';
import type { Tree } from '../../storage/trees.ts';
import { writeTree } from '../execution/labFiles.ts';
import { oneShotLimits } from '../execution/labSpec.ts';
import { SandboxUnavailable, type Sandbox } from '../execution/sandbox.ts';
import type { WarmParents } from '../execution/warmParents.ts';
import { runEngine, type LintFinding, type ProblemDescription } from './engine.ts';

/** What an import's inspection is held to: the smallest profile's share of a core, more memory (pyPESTO and sympy load heavy). */
const INSPECT_PROFILE = { memory_mib: 2048, vcpus: 1 };
const INSPECT_SECONDS = 120;

/** What the engine said of a problem an import brings: the lint's findings, and, when it found no error, the problem and its value at nominal. */
export interface PetabInspection {
  versions: Record<string, string>;
  findings: LintFinding[];
  problem: ProblemDescription | null;
  /** At the nominal parameters: pyPESTO's NLL, the petab library's own llh and χ², and the digest of the simulations. */
  nominal: { nll: number | null; petab_llh: number | null; petab_chi2: number | null; simulation_sha256: string } | null;
  /** The engine's own failure after a clean lint (a problem the simulator's importer refuses), in its words. */
  error: { code: string; message: string } | null;
}

/** PEtab problems a worker looks at, sandboxed in the PEtab toolkit. */
export function createPetabActivities(deps: {
  objects: ObjectStore; sandbox: Sandbox; environments: EnvironmentSettings;
  /** Warm instances of the engine (the worker's warm parents): an account's inspections fork from its own. */
  warm?: WarmParents;
}) {
  return {
    /**
     * Lints a problem (its files a content-addressed tree, its YAML one of them) with the
     * petab library and, when the lint finds no error, describes it and evaluates it at its
     * nominal parameters, in one sandboxed process (forked from a warm instance of the
     * engine of the `account` asking, when the worker has one). A deployment without the
     * toolkit, or without a sandbox, fails it without retrying: the import answers that,
     * not a finding made up.
     */
    async inspectPetabProblem(args: { tree: Tree; yaml: string; account?: string }): Promise<PetabInspection> {
      const python = deps.environments.toolkitPython;
      if (!python) throw ApplicationFailure.nonRetryable('This deployment has no PEtab toolkit (SILICO_PETAB_PYTHON).', 'toolkit_unavailable');
      const root = await mkdtemp(path.join(tmpdir(), 'silico-petab-inspect-'));
      try {
        const problemDir = path.join(root, 'problem');
        if (!await writeTree(deps.objects, args.tree, problemDir)) throw new Error('a file of the problem does not match its digest in the store');
        // The sandbox's user reads the problem; mkdtemp made the folder for this one alone.
        await chmod(root, 0o755);
        const findings: LintFinding[] = [];
        let nominal: PetabInspection['nominal'] = null;
        const outcome = await runEngine(deps.sandbox, {
          python, problemDir, yaml: args.yaml, scratch: path.join(root, 'scratch'), request: { command: 'inspect' },
          limits: oneShotLimits(INSPECT_PROFILE, INSPECT_SECONDS), vcpus: 1, wallSeconds: INSPECT_SECONDS,
          signal: Context.current().cancellationSignal,
          onAlive: () => Context.current().heartbeat(),
          warm: deps.warm && args.account ? { parents: deps.warm, owner: args.account } : undefined,
          onMessage: (m) => {
            if (m.type === 'findings') findings.push(...(m.findings as LintFinding[]));
            if (m.type === 'evaluation') {
              nominal = { nll: m.fval as number | null, petab_llh: m.petab_llh as number | null, petab_chi2: m.petab_chi2 as number | null, simulation_sha256: m.simulation_sha256 as string };
            }
          },
        });
        if (outcome.cancelled) throw ApplicationFailure.nonRetryable('The inspection was cancelled.', 'cancelled');
        return { versions: outcome.versions, findings, problem: outcome.problem, nominal, error: outcome.error && { code: outcome.error.code, message: outcome.error.message } };
      } catch (err) {
        if (err instanceof SandboxUnavailable) throw ApplicationFailure.nonRetryable(err.message, 'sandbox_unavailable');
        throw err;
      } finally {
        await rm(root, { recursive: true, force: true });
      }
    },
  };
}

export type PetabActivities = ReturnType<typeof createPetabActivities>;
