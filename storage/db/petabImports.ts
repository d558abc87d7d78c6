import type { Db } from './knex.ts';

/** One design parameter: a row of the problem's parameter table (linear values, as written). */
export interface DesignParameter {
  id: string; name: string | null; scale: string;
  lower_bound: number | null; upper_bound: number | null; nominal_value: number | null; estimate: boolean;
}

/** The calibration design an import makes of a problem's parameter table. */
export interface PetabDesign {
  parameters: DesignParameter[];
  /** The estimated parameters, in the engine's order (a vector's order on the parameter scale). */
  estimated: string[];
  observables: string[];
  conditions: string[];
  measurements: number;
  preequilibration: boolean;
}

export interface PetabImportRow {
  id: string; account_id: string; plan_id: string; title: string;
  workspace_id: string; revision_id: string; lab_id: string; dataset_id: string;
  yaml_path: string; design: PetabDesign;
  files: Array<{ path: string; sha256: string; size_bytes: number }>;
  versions: Record<string, string>;
  nominal: { nll: number | null; petab_llh: number | null; petab_chi2: number | null; simulation_sha256: string };
  created_at: Date;
}

export async function insertPetabImport(db: Db, row: Omit<PetabImportRow, 'created_at'>): Promise<PetabImportRow> {
  const [saved] = await db('petab_imports').insert({
    ...row, design: JSON.stringify(row.design), files: JSON.stringify(row.files), versions: JSON.stringify(row.versions), nominal: JSON.stringify(row.nominal),
  }).returning('*');
  return saved as PetabImportRow;
}

export async function getPetabImport(db: Db, id: string, accountId: string): Promise<PetabImportRow | undefined> {
  return db('petab_imports').where({ id, account_id: accountId }).first();
}

/** The import a plan made, for the answer to a retry of its execution. */
export async function petabImportOfPlan(db: Db, planId: string, accountId: string): Promise<PetabImportRow | undefined> {
  return db('petab_imports').where({ plan_id: planId, account_id: accountId }).first();
}
