import type { Finding } from '../../storage/db/plans.ts';
import type { Db } from '../../storage/db/knex.ts';
import { labIsReleased, labNameTaken, lockLab, renameLab, type LabRow } from '../../storage/db/labs.ts';
import { declaredIdentity } from '../../storage/labIdentity.ts';

/** A stable lab name (the naming skill): a lowercase letter, then letters, digits and dashes. */
export const LAB_NAME = /^[a-z][a-z0-9-]{1,62}$/;

/**
 * What a lab.yaml's declared `package` means for the lab it is in (source names are
 * preserved: while a lab has no release, the name its author declared becomes its name).
 * - `same`: nothing declared, or the lab's own name;
 * - `adopt`: the lab has no release and the name is free: it becomes the lab's name;
 * - `taken`: the lab has no release, but another lab of the namespace has that name;
 * - `released`: the lab's releases already address it by its current name;
 * - `invalid`: not a lab name;
 * - `namespace`: the package names another namespace.
 */
export type DeclaredName =
  | { kind: 'same' }
  | { kind: 'adopt' | 'taken' | 'released' | 'invalid'; declared: string; name: string }
  | { kind: 'namespace'; declared: string; namespace: string };

export async function declaredName(db: Db, lab: Pick<LabRow, 'id' | 'account_id' | 'name'>, namespace: string, manifest: unknown): Promise<DeclaredName> {
  const { package: declared, name } = declaredIdentity(manifest);
  if (!declared || !name) return { kind: 'same' };
  const ns = declared.includes('/') ? declared.split('/')[0]! : undefined;
  if (ns !== undefined && ns !== namespace) return { kind: 'namespace', declared, namespace: ns };
  if (name === lab.name) return { kind: 'same' };
  if (!LAB_NAME.test(name)) return { kind: 'invalid', declared, name };
  if (await labIsReleased(db, lab)) return { kind: 'released', declared, name };
  return { kind: (await labNameTaken(db, lab.account_id, name, lab.id)) ? 'taken' : 'adopt', declared, name };
}

const AT = 'lab.yaml#/package';

/**
 * The findings of a declared name. A change plan only advises (`stage: 'change'`: the
 * files are kept as written; the lab is renamed when the change is applied); a
 * publication plan blocks on a name it cannot publish under.
 */
export function declaredNameFindings(d: DeclaredName, lab: { name: string; namespace: string }, stage: 'change' | 'publication'): Finding[] {
  const severity = stage === 'change' ? 'warning' : 'blocking';
  const current = `${lab.namespace}/${lab.name}`;
  switch (d.kind) {
    case 'same':
      return [];
    case 'adopt':
      return [{ severity: 'info', code: 'lab_takes_declared_package', message: `This lab has no release yet, so it takes the package lab.yaml declares: it is named ${d.name} ${stage === 'change' ? 'once this change is applied' : 'when this plan publishes'}, and its releases are ${lab.namespace}/${d.name}@<version>.`, path: AT }];
    case 'taken':
      return [{ severity, code: 'package_taken', message: `lab.yaml declares package ${d.declared}, but another lab of ${lab.namespace} is already named ${d.name}; this lab stays ${current}. Declare a package no other lab of ${lab.namespace} uses, or remove the key to publish as ${lab.name}.`, path: AT }];
    case 'released':
      return [{ severity, code: 'package_mismatch', message: `lab.yaml declares package ${d.declared}, but this lab is ${current} and its releases are addressed by that name. Declare package ${lab.name} (or remove the key); to publish under ${d.name}, start a new lab from these files.`, path: AT }];
    case 'invalid':
      return [{ severity, code: 'package_mismatch', message: `lab.yaml declares package ${d.declared}, which is not a lab name (a lowercase letter, then lowercase letters, digits and dashes); this lab is ${current}. Declare package ${lab.name}, or remove the key.`, path: AT }];
    case 'namespace':
      return [{ severity, code: 'package_namespace_mismatch', message: `lab.yaml declares package ${d.declared}, in namespace ${d.namespace}; this lab is published in ${lab.namespace}. Declare ${lab.name} (or ${current}).`, path: AT }];
  }
}

/**
 * In the transaction that records a lab's new lab.yaml (a revision, a publication): while
 * the lab has no release, the declared package, when free, becomes its name. Returns the
 * lab's name after it.
 */
export async function adoptDeclaredName(trx: Db, labId: string, namespace: string, manifest: unknown): Promise<string> {
  const lab = (await lockLab(trx, labId))!;
  const d = await declaredName(trx, lab, namespace, manifest);
  if (d.kind !== 'adopt') return lab.name;
  return (await renameLab(trx, lab.id, d.name)) ? d.name : lab.name;
}
