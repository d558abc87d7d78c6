import type { Deps, Caller } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import type { Finding } from '../../storage/db/plans.ts';
import { getFile } from '../../storage/db/files.ts';
import { getDataset } from '../../storage/db/datasets.ts';
import { referenceInputs } from '../../storage/labInputs.ts';

/**
 * Run inputs of type `file` or `dataset` name the caller's own stored resources: each is
 * resolved when the run is planned. Another account's id answers exactly like a missing
 * one (404 on `inputs.<name>`); a dataset version still registering or failed is a
 * blocking finding. The execution checks them again before staging them for the lab.
 */
export async function resolveInputReferences(deps: Deps, caller: Caller, manifest: unknown, inputs: Record<string, unknown>): Promise<Finding[]> {
  const findings: Finding[] = [];
  for (const { name, kind } of referenceInputs(manifest)) {
    const id = inputs[name];
    if (typeof id !== 'string') continue; // a wrong type is already checkInputs' finding
    const param = `inputs.${name}`;
    if (kind === 'file') {
      if (!(await getFile(deps.db, id, caller.account.id))) throw errors.notFound('file_not_found', 'file', param);
      continue;
    }
    const d = await getDataset(deps.db, id, caller.account.id);
    if (!d) throw errors.notFound('dataset_not_found', 'dataset', param);
    if (d.status !== 'registered') {
      findings.push({ severity: 'blocking', code: 'dataset_not_registered', message: `Dataset ${d.name} version ${d.version} is ${d.status}; only a registered version can be a run's input.`, path: param });
    }
  }
  return findings;
}
