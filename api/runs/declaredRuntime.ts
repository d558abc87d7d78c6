import type { Finding } from '../../storage/db/plans.ts';
import { canonicalName, type LabManifests, type RuntimeLock } from '../../storage/runtimePins.ts';

/** What a lab declares of its runtime, across lab.yaml and every model.yaml. */
export interface DeclaredRuntime {
  /** The Python version it asks for (`runtime.python_version`), or the default runtime's. */
  python: string;
  /** Every requirement string, exact pins and ranges alike, as written. */
  requirements: string[];
  /** The distributions among them the service added at an exact pin (the default runtime's biosimulant), not the lab. */
  added: string[];
  findings: Finding[];
}

const record = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? v as Record<string, unknown> : {});
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/**
 * A lab's declared runtime as one resolver request: its Python version (the manifests
 * must agree on one) and its requirements, plus what the driver itself imports (numpy,
 * PyYAML) and biosimulant at the default runtime's version when the lab does not name it.
 */
export function declaredRuntime(lab: LabManifests, defaults: RuntimeLock): DeclaredRuntime {
  const files = [{ file: 'lab.yaml', manifest: lab.lab }, ...lab.models.map((m) => ({ file: `${m.dir}/model.yaml`, manifest: m.manifest }))];
  const pythons = new Map<string, string>();
  const requirements: string[] = [];
  for (const { file, manifest } of files) {
    const m = record(manifest);
    const runtime = record(m.runtime);
    const deps = record(runtime.dependencies);
    // YAML reads 3.10 as the number 3.1: the runtime compares str(value), so it is taken as written there.
    if (runtime.python_version !== undefined && runtime.python_version !== null) pythons.set(String(runtime.python_version).trim(), `${file}#/runtime/python_version`);
    requirements.push(...strings(deps.packages), ...strings(deps.requirements), ...strings(m.requirements));
  }
  const findings: Finding[] = [];
  if (pythons.size > 1) {
    findings.push({ severity: 'blocking', code: 'python_version_conflict', message: `The manifests ask for different Python versions: ${[...pythons].map(([v, at]) => `${v} (${at})`).join(', ')}; a lab runs on one.`, path: [...pythons.values()][1]! });
  }
  const named = new Set(requirements.map((r) => canonicalName(/^\s*([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(r)?.[1] ?? '')));
  const base = [
    ...(named.has('biosimulant') ? [] : [`biosimulant==${defaults.packages.get('biosimulant')}`]),
    ...(named.has('numpy') ? [] : ['numpy']),
    ...(named.has('pyyaml') ? [] : ['pyyaml']),
  ];
  return { python: [...pythons.keys()][0] ?? defaults.python, requirements: [...base, ...requirements], added: named.has('biosimulant') ? [] : ['biosimulant'], findings };
}
