import { randomInt } from 'node:crypto';
import type { Deps, Caller } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import { getPetabImport, type PetabImportRow } from '../../storage/db/petabImports.ts';
import type { PetabCalibrationDesign, PetabParameter } from '../../storage/studyDesign.ts';
import { MAX_SEED } from './prepare.ts';
import { onScale } from '../../kernel/petabScales.ts';
import type { StudyLabRequest } from './studyPrepare.ts';

/** The most runs a PEtab calibration's starts (and, apart, its profiles) are spread over. */
const MAX_PARALLEL_RUNS = 8;
/**
 * The fewest starts a run carries (when there are that many): each run pays the engine's
 * start, its imports and the model's build, about 4 s, once, against 1 to 3 s a Boehm start
 * (bench:petab: at two starts a run the start-ups were most of a calibration's CPU).
 */
const MIN_STARTS_PER_RUN = 4;
/** A PEtab run's longest execution unless asked otherwise: profiles at pyPESTO's default steps take about a minute each. */
const DEFAULT_MAX_RUNTIME_SECONDS = 900;

export interface PetabCalibrationRequest {
  import_id: string;
  optimizer?: 'fides' | 'lbfgsb';
  starts: number;
  max_evaluations?: number;
  seed?: number;
  profile?: { parameters?: string[]; options?: Record<string, number> };
  compute_profile_id?: string;
  max_runtime_seconds?: number;
}

const AT = 'petab_calibration';

/** The import a PEtab calibration names (another account's answers as a missing one), and the lab a study of it runs. */
export async function petabStudyLab(deps: Deps, caller: Caller, req: PetabCalibrationRequest): Promise<{ row: PetabImportRow; lab: StudyLabRequest }> {
  const row = await getPetabImport(deps.db, req.import_id, caller.account.id);
  if (!row) throw errors.notFound('petab_import_not_found', 'PEtab import', `${AT}.import_id`);
  return {
    row,
    lab: {
      workspace_id: row.workspace_id, revision_id: row.revision_id, inputs: {},
      compute_profile_id: req.compute_profile_id, max_runtime_seconds: req.max_runtime_seconds ?? DEFAULT_MAX_RUNTIME_SECONDS,
    },
  };
}

/**
 * The design of a PEtab calibration: the import's estimated parameters in the engine's
 * vector order, with bounds and nominal values on their scales; the starts spread over at
 * most MAX_PARALLEL_RUNS runs of at least MIN_STARTS_PER_RUN, and the profiles (every estimated parameter unless named)
 * over as many again, at least one run (the Gauss-Newton view) whatever is profiled.
 */
export function petabCalibrationDesign(row: PetabImportRow, req: PetabCalibrationRequest): PetabCalibrationDesign {
  const table = new Map(row.design.parameters.map((p) => [p.id, p]));
  const parameters: PetabParameter[] = row.design.estimated.map((id) => {
    const p = table.get(id)!;
    return { id, scale: p.scale, lb: onScale(p.lower_bound!, p.scale), ub: onScale(p.upper_bound!, p.scale), nominal: onScale(p.nominal_value!, p.scale) };
  });
  const profiled = req.profile?.parameters ?? row.design.estimated;
  const seen = new Set<string>();
  profiled.forEach((id, i) => {
    if (!row.design.estimated.includes(id)) {
      throw errors.validation('unknown_parameter', `${id} is not an estimated parameter of the problem (${row.design.estimated.join(', ')}).`, `${AT}.profile.parameters[${i}]`);
    }
    if (seen.has(id)) throw errors.validation('duplicate_parameter', `${id} is profiled twice.`, `${AT}.profile.parameters[${i}]`);
    seen.add(id);
  });
  const startRuns = Math.min(Math.ceil(req.starts / MIN_STARTS_PER_RUN), MAX_PARALLEL_RUNS);
  const startsPerRun = Math.ceil(req.starts / startRuns);
  const profileRuns = Math.max(1, Math.min(profiled.length, MAX_PARALLEL_RUNS));
  return {
    kind: 'petab_calibration', import_id: row.id, yaml: row.yaml_path, files: row.files.map((f) => ({ path: f.path, sha256: f.sha256 })),
    parameters, optimizer: req.optimizer ?? 'fides', starts: req.starts, starts_per_run: startsPerRun, max_evaluations: req.max_evaluations ?? 10_000,
    seed: req.seed ?? randomInt(0, MAX_SEED), profile: { parameters: profiled, options: req.profile?.options ?? {} }, profile_runs: profileRuns,
    run_count: Math.ceil(req.starts / startsPerRun) + profileRuns,
  };
}
