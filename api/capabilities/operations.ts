import type { ToolDef } from '../tools/tool.ts';
import { record, str, arr, limit, cursor, cursorPage, packageSha256 } from '../schemas/common.ts';
import { findLatestVisibleRelease, listVisibleReleases, type ReleaseRow } from '../../storage/db/releases.ts';
import { decodeCursor, pageBody } from '../pagination.ts';
import { errors } from '../errors.ts';

export const capability = record({
  ref: str(), name: str(), version: str(), title: str(),
  inputs: arr(record({ name: str(), value_type: str(), required: { type: 'boolean' } })),
  outputs: arr(record({ name: str(), value_type: str() })),
  package_sha256: packageSha256,
});

/** The capability view of a release: its contract and digest. */
export function toCapability(r: ReleaseRow) {
  return {
    ref: `${r.namespace}/${r.name}@${r.version}`,
    name: r.name,
    version: r.version,
    title: r.title,
    inputs: r.inputs.map((i) => ({ name: i.name, value_type: i.value_type, required: i.required })),
    outputs: r.outputs.map((o) => ({ name: o.name, value_type: o.value_type })),
    package_sha256: `sha256:${r.package_sha256}`,
  };
}

const segment = { type: 'string', pattern: '^[a-z][a-z0-9-]{1,62}$' };

export const capabilityList: ToolDef = {
  name: 'capability_list',
  description: 'List runnable lab versions visible to the key owner with their declared input/output contracts.',
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
  description: 'Resolve the latest accessible version of namespace/name and return its contract.',
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
