import YAML from 'yaml';
import type { Finding } from '../../storage/db/plans.ts';
import { KNOWN_LAB_KEYS, labManifestProblems } from '../schemas/labManifest.ts';
import { unstorableProblem } from '../validation.ts';
import { listOf } from '../../storage/labContract.ts';

const ALIAS = /^[a-z][a-z0-9_]{0,62}$/;

interface Manifest {
  title?: string;
  package?: unknown;
  models?: Array<{ alias?: unknown }>;
  children?: Array<{ alias?: unknown }>;
  wiring?: Array<{ from?: unknown; to?: unknown }>;
  io?: { inputs?: Array<{ maps_to?: unknown }>; outputs?: Array<{ maps_to?: unknown }> };
}

export function parseLabYaml(text: string | undefined): { manifest?: Manifest; error?: string } {
  if (text === undefined) return {};
  try {
    const v = YAML.parse(text);
    if (!v || typeof v !== 'object') return { error: 'is not a mapping' };
    // Findings quote the manifest's names and plans are stored: what Postgres cannot store stops here.
    const bad = unstorableProblem(v);
    return bad ? { error: bad } : { manifest: v as Manifest };
  } catch (err) {
    return { error: `does not parse: ${(err as Error).message.split('\n')[0]}` };
  }
}

/**
 * The naming findings of a proposed lab.yaml (the naming skill's rules): invalid or
 * duplicate sibling aliases block; wiring or io `maps_to` naming an alias that does not
 * exist blocks (so a rename must update them together); title and identity changes are
 * advisory (what a declared `package` means for the lab: ./identity.ts). Keys the format
 * does not name are kept, noted as `info`.
 */
export function namingFindings(before: string | undefined, after: string | undefined): Finding[] {
  if (after === undefined) return before === undefined ? [] : [{ severity: 'blocking', code: 'manifest_missing', message: 'A lab needs a lab.yaml at its root.', path: 'lab.yaml' }];
  const { manifest: m, error } = parseLabYaml(after);
  if (!m) return [{ severity: 'blocking', code: 'manifest_invalid', message: `lab.yaml ${error}.`, path: 'lab.yaml' }];
  const findings: Finding[] = labManifestProblems(m).map((p) => ({ severity: 'blocking', code: 'manifest_invalid', message: `lab.yaml ${p}`, path: `lab.yaml#${p.split(':')[0]}` }));
  const seen = new Map<string, string>();
  for (const [group, list] of [['models', listOf(m.models)], ['children', listOf(m.children)]] as const) {
    list.forEach((entry, i) => {
      const at = `lab.yaml#/${group}/${i}/alias`;
      const alias = entry?.alias;
      if (typeof alias !== 'string' || !ALIAS.test(alias)) {
        findings.push({ severity: 'blocking', code: 'alias_invalid', message: `Alias ${JSON.stringify(alias)} must match ${ALIAS.source}.`, path: at });
      } else if (seen.has(alias)) {
        findings.push({ severity: 'blocking', code: 'alias_duplicate', message: `Alias ${alias} is already used at ${seen.get(alias)}; sibling aliases are unique.`, path: at });
      } else seen.set(alias, at);
    });
  }
  const ref = (value: unknown, at: string) => {
    const alias = typeof value === 'string' ? value.split('.')[0]! : '';
    if (!seen.has(alias)) findings.push({ severity: 'blocking', code: 'alias_missing', message: `${JSON.stringify(value)} names no model or child lab; update wiring and io together with a rename.`, path: at });
  };
  listOf(m.wiring).forEach((w, i) => {
    ref(w?.from, `lab.yaml#/wiring/${i}/from`);
    (Array.isArray(w?.to) ? w.to : [w?.to]).forEach((t, j) => ref(t, `lab.yaml#/wiring/${i}/to/${j}`));
  });
  for (const side of ['inputs', 'outputs'] as const) {
    listOf(m.io?.[side]).forEach((e, i) => ref(e?.maps_to, `lab.yaml#/io/${side}/${i}/maps_to`));
  }
  const unknown = Object.keys(m).filter((k) => !KNOWN_LAB_KEYS.has(k));
  if (unknown.length) findings.push({ severity: 'info', code: 'unknown_keys_kept', message: `lab.yaml keys ${unknown.join(', ')} are kept as written; neither Silico nor the runtime acts on them.`, path: 'lab.yaml' });
  const old = parseLabYaml(before).manifest;
  if (old && old.title !== m.title) findings.push({ severity: 'info', code: 'title_changed', message: `Title changes from ${JSON.stringify(old.title)} to ${JSON.stringify(m.title)}.`, path: 'lab.yaml#/title' });
  if (old && old.package !== m.package) findings.push({ severity: 'warning', code: 'identity_changed', message: `The package identity changes from ${JSON.stringify(old.package)} to ${JSON.stringify(m.package)}; releases are addressed by it.`, path: 'lab.yaml#/package' });
  return findings;
}
