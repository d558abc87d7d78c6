/**
 * Schemas of PEtab imports: the problem's files as they came, the calibration design its
 * parameter table gives, its value at nominal, and what an import made.
 */
import { arr, count, id, obj, planRecord, record, sha256Hex, str, time, uuid, type JsonSchema } from '../schemas/common.ts';

const nullableNum: JsonSchema = { type: ['number', 'null'] };
const fileDigest: JsonSchema = obj({ path: str(1024), sha256: sha256Hex, size_bytes: count }, ['path', 'sha256', 'size_bytes']);

/** One row of the problem's parameter table, as written (linear values). */
const designParameter: JsonSchema = record({
  id: str(200), name: { type: ['string', 'null'] },
  scale: { enum: ['lin', 'log', 'log10'], description: 'PEtab\'s parameterScale: the scale starts are drawn and optimised on.' },
  lower_bound: nullableNum, upper_bound: nullableNum, nominal_value: nullableNum,
  estimate: { type: 'boolean', description: 'Estimated by a calibration, or fixed at its nominal value.' },
});

/** The calibration design an import makes of a problem. */
export const petabDesign: JsonSchema = record({
  parameters: arr(designParameter),
  estimated: arr(str(200), { description: 'The estimated parameters, in the order of a parameter vector on their scales.' }),
  observables: arr(str(200)), conditions: arr(str(200)),
  measurements: count, preequilibration: { type: 'boolean' },
});

/** The problem at its nominal parameters. */
export const petabNominal: JsonSchema = record({
  nll: { ...nullableNum, description: 'The negative log-likelihood at the nominal parameters (pyPESTO\'s objective; null when a simulation fails).' },
  petab_llh: { ...nullableNum, description: 'The petab library\'s own log-likelihood of the same simulations.' },
  petab_chi2: { ...nullableNum, description: 'The petab library\'s χ² of the same simulations.' },
  simulation_sha256: { ...sha256Hex, description: 'Digest of the simulations\' table (PEtab\'s simulation format, tab-separated).' },
});

const problemFiles: JsonSchema = record({
  yaml: { ...str(1024), description: 'The problem\'s YAML, relative to the problem\'s folder.' },
  files: arr(fileDigest, { description: 'Every file of the problem as it came, relative to its YAML\'s folder, with its digest.' }),
});

const versions: JsonSchema = { type: 'object', additionalProperties: { type: 'string' }, description: 'The library versions that read the problem (petab, pyPESTO, libroadrunner, ...).' };

export const petabImportPlan: JsonSchema = planRecord('petab_import_plan', {
  title: str(200),
  problem: problemFiles,
  design: { oneOf: [{ type: 'null' }, petabDesign], description: 'Null when the lint found errors or the simulator\'s importer refused the problem.' },
  nominal: { oneOf: [{ type: 'null' }, petabNominal] },
  versions,
  lab: record({ files: arr(fileDigest, { description: 'The files of the lab the import would make: its manifests, its model and the problem under petab/.' }) }),
});

/** A PEtab problem imported, and the three things it made. */
export const petabImport: JsonSchema = record({
  object: { const: 'petab_import' },
  import_id: id('petab'),
  title: str(200),
  workspace_id: uuid, revision_id: uuid, lab_id: id('lab'),
  dataset_id: { ...id('ds'), description: 'The dataset of the problem\'s measurement tables.' },
  problem: problemFiles,
  design: petabDesign,
  nominal: petabNominal,
  versions,
  created_at: time,
});
