import { createHash } from 'node:crypto';
import type { Finding } from '../../storage/db/plans.ts';
import { namingFindings, parseLabYaml } from '../../api/workspaces/naming.ts';
import { labManifestProblems } from '../../api/schemas/labManifest.ts';
import { readRuntimeLock, runtimePinFindings } from '../../storage/runtimePins.ts';
import { readLabManifests } from '../../storage/labManifests.ts';
import { blobKey, type ObjectStore } from '../../storage/objects.ts';
import { MAX_TREE_BYTES, normalizePath, PathError, treeSize, type Tree } from '../../storage/trees.ts';
import { packerIdentity } from '../../storage/labIdentity.ts';
import { RuntimeJudge } from '../../api/workspaces/runtimeJudge.ts';
import { runtimeFormatFindings } from '../../api/workspaces/formatFindings.ts';
import type { Deps } from '../../api/tools/tool.ts';

/**
 * The service's side of the differential tests: every plan-time check the service applies
 * to a lab's files before a workspace run may start, imported, never restated.
 * A workspace revision is made by a change plan and run by a run plan:
 *
 * change plan (api/workspaces/operations.ts workspace_change_prepare, applyOperations)
 *   - normalizePath on every path and the tree's size bound (storage/trees.ts);
 *   - namingFindings(undefined, lab.yaml) (api/workspaces/naming.ts): its parse (YAML,
 *     a mapping, storable: parseLabYaml), labManifestProblems (api/schemas/labManifest.ts),
 *     sibling aliases, and wiring and io references to aliases;
 *   - labManifestProblems on the parsed manifest, as builtinLabs.ts calls it (namingFindings
 *     already includes it; kept so a change to either is seen).
 * run plan (api/runs/prepare.ts prepareRun for a revision)
 *   - the same YAML parse and storability (resolveRevision), already covered above;
 *   - runtimePinFindings on {lab, models} as readLabManifests reads them from the tree
 *     (storage/runtimePins.ts, via api/runs/environment.ts planEnvironment; the generator
 *     keeps to pins whose verdict needs no package index: ./bounds.ts);
 *   - runtimeFormatFindings(…, 'blocking') (api/workspaces/formatFindings.ts): the
 *     runtime's manifest checks asked of the service's own RuntimeJudge process
 *     (api/workspaces/runtimeJudge.ts). The change plan hears them as warnings only.
 * What is not composed, and why:
 *   - checkInputs and resolveInputReferences judge a run's inputs, not the lab;
 *   - declaredNameFindings needs the database (which names are taken or released);
 *   - the publication plan's own checks (model_missing, entrypoint_invalid,
 *     entrypoint_missing, version_invalid, version_mismatch: api/publications/operations.ts
 *     staticFindings) are module-private; only a publication applies them.
 *
 * After the plans, the service runs the runtime's own validator (build_package and
 * validate_package) before any run: that is the judge's `gate`, with the identity the
 * service passes to it (packerIdentity, storage/labIdentity.ts).
 */

export interface ServiceVerdict {
  /** Blocking findings of the composed checks (`check`: the function that found it); the runtime's own checks only when no other blocks. */
  blocking: Array<Finding & { check: string }>;
  /** What a managed run passes the runtime's packer (a declared package/version: null). */
  identity: { package: string | null; version: string | null };
}

const LOCK = readRuntimeLock();
/** A managed run's own identity (activities/execution/execute.ts materialize: `<ns>/<lab>`, `0.0.<revision>`). */
const OURS = { package: 'differential/lab', version: '0.0.1' };

/** The tree and an object store holding its bytes, as a revision's are stored. */
function storedTree(files: Record<string, string>): { tree: Tree; objects: ObjectStore } {
  const tree: Tree = {};
  const blobs = new Map<string, Buffer>();
  for (const [p, text] of Object.entries(files)) {
    const bytes = Buffer.from(text, 'utf8');
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    blobs.set(blobKey(sha256), bytes);
    tree[p] = { sha256, size: bytes.length };
  }
  // readLabManifests reads blobs and nothing else.
  const objects = { getBytes: async (key: string) => blobs.get(key)! } as unknown as ObjectStore;
  return { tree, objects };
}

/**
 * The service's checks, with the processes some of them ask: the service's RuntimeJudge
 * (one or more, the bench's on every core), made with the runtime's interpreter.
 */
export class ServiceChecks {
  private readonly judges: RuntimeJudge[];
  private turn = 0;

  constructor(python: string, size = 1) {
    this.judges = Array.from({ length: size }, () => new RuntimeJudge(python));
  }

  verdict(files: Record<string, string>): Promise<ServiceVerdict> {
    const runtimeJudge = this.judges[this.turn++ % this.judges.length]!;
    return serviceVerdict(files, { runtimeJudge, runtimeLock: LOCK });
  }

  close(): void {
    for (const j of this.judges) j.close();
  }
}

/** `deps`: what runtimeFormatFindings reads of the api's dependencies (its judge, the runtime lock). */
async function serviceVerdict(files: Record<string, string>, deps: Pick<Deps, 'runtimeJudge' | 'runtimeLock'>): Promise<ServiceVerdict> {
  const blocking: ServiceVerdict['blocking'] = [];
  const add = (check: string, findings: Finding[]) => blocking.push(...findings.filter((f) => f.severity === 'blocking').map((f) => ({ ...f, check })));
  for (const p of Object.keys(files)) {
    try {
      normalizePath(p);
    } catch (err) {
      if (!(err instanceof PathError)) throw err;
      add('normalizePath', [{ severity: 'blocking', code: err.code, message: err.message, path: p }]);
    }
  }
  const { tree, objects } = storedTree(files);
  if (treeSize(tree) > MAX_TREE_BYTES) add('treeSize', [{ severity: 'blocking', code: 'tree_too_large', message: `more than ${MAX_TREE_BYTES} bytes`, path: null }]);
  const text = files['lab.yaml'];
  add('namingFindings', namingFindings(undefined, text));
  const { manifest } = parseLabYaml(text);
  if (!manifest) return { blocking, identity: packerIdentity(undefined, OURS) };
  add('labManifestProblems', labManifestProblems(manifest).map((p) => ({ severity: 'blocking', code: 'manifest_invalid', message: p, path: 'lab.yaml' })));
  add('runtimePinFindings', runtimePinFindings(LOCK, await readLabManifests(objects, tree, manifest)));
  // Asked only while nothing blocks yet: it asks a process, and the verdict is already made.
  if (!blocking.length) add('runtimeFormatFindings', await runtimeFormatFindings({ ...deps, objects } as Deps, tree, 'blocking'));
  return { blocking, identity: packerIdentity(manifest, OURS) };
}
