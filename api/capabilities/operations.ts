import type { ToolDef } from '../tools/tool.ts';
import { record, str, arr, limit, cursor, cursorPage, packageSha256 } from '../schemas/common.ts';
import { findLatestVisibleRelease, listVisibleReleases, type ReleaseRow } from '../../storage/db/releases.ts';
import { decodeCursor, pageBody } from '../pagination.ts';
import { errors } from '../errors.ts';
import { contractInput } from '../hub/schemas.ts';
import { declaredContractOf } from '../../storage/labContract.ts';

export const capability = record({
  ref: str(), name: str(), version: str(), title: str(),
  inputs: arr(contractInput),
  outputs: arr(record({ name: str(), value_type: str() })),
  package_sha256: packageSha256,
});

/**
 * Each input of a release's contract (what its runs are checked against) with what its
 * lab.yaml declares to fill it in: description, units, default and schema (its bounds),
 * null where it declares none. hub_inspect shows the same.
 */
function capabilityInputs(r: Pick<ReleaseRow, 'inputs' | 'manifest'>) {
  const declared = new Map(declaredContractOf(r.manifest).inputs.map((i) => [i.name, i]));
  return r.inputs.map((i) => {
    const d = declared.get(i.name);
    return { name: i.name, value_type: i.value_type, required: i.required, description: d?.description ?? null, units: d?.units ?? null, default: d?.default ?? null, schema: d?.schema ?? null };
  });
}

/** The capability view of a release: its contract and digest. */
export function toCapability(r: ReleaseRow) {
  return {
    ref: `${r.namespace}/${r.name}@${r.version}`,
    name: r.name,
    version: r.version,
    title: r.title,
    inputs: capabilityInputs(r),
    outputs: r.outputs.map((o) => ({ name: o.name, value_type: o.value_type })),
    package_sha256: `sha256:${r.package_sha256}`,
  };
}

const segment = { type: 'string', pattern: '^[a-z][a-z0-9-]{1,62}$' };

export const capabilityList: ToolDef = {
  name: 'capability_list',
  description: 'List runnable lab versions visible to the key owner with their contracts: each input\'s value type, required, description, units, default and schema (its bounds); each output\'s value type.',
  scope: 'capabilities:read',
  readOnly: true,
  input: { query: { limit, cursor } },
  output: cursorPage(capability),
  async handler(input, { deps, caller }) {
    const page = await listVisibleReleases(deps.db, caller.account.id, {
      limit: input.limit ?? deps.config.limits.pageDefault,
      after: decodeCursor(input.cursor, ['text', 'text', 'text']),
    });
    return { body: pageBody(page, page.rows.map(toCapability)) };
  },
};

export const capabilityGet: ToolDef = {
  name: 'capability_get',
  description: 'Resolve the latest accessible version of namespace/name and return its contract, each input with its units, default and schema (bounds).',
  scope: 'capabilities:read',
  readOnly: true,
  input: { path: { namespace: segment, name: segment } },
  output: capability,
  async handler(input, { deps, caller }) {
    const r = await findLatestVisibleRelease(deps.db, caller.account.id, input.namespace, input.name);
    if (!r) throw errors.notFound('capability_not_found', 'capability', 'name');
    return {
      body: toCapability(r),
      next_actions: [{ tool: 'run_prepare', description: 'Check a run of this capability before running it.', arguments: { capability_ref: toCapability(r).ref } }],
    };
  },
};
