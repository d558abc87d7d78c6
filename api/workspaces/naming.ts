import { parseManifestText, stripAsPython } from '../../storage/labManifests.ts';
import type { Finding } from '../../storage/db/plans.ts';
import { KNOWN_LAB_KEYS, labManifestProblems } from '../schemas/labManifest.ts';
import { unstorableProblem } from '../validation.ts';
import { listOf, valueTypeOf, VALUE_TYPES } from '../../storage/labContract.ts';

interface Manifest {
  title?: string;
  package?: unknown;
  models?: Array<{ alias?: unknown }>;
  children?: Array<{ alias?: unknown }>;
  wiring?: Array<{ from?: unknown; to?: unknown }>;
  io?: { inputs?: Array<{ maps_to?: unknown; value_type?: unknown }>; outputs?: Array<{ maps_to?: unknown; value_type?: unknown }> };
}

export function parseLabYaml(text: string | undefined): { manifest?: Manifest; error?: string } {
  if (text === undefined) return {};
  try {
    const v = parseManifestText(text);
    if (!v || typeof v !== 'object') return { error: 'is not a mapping' };
    // Findings quote the manifest's names and plans are stored: what Postgres cannot store stops here.
    const bad = unstorableProblem(v);
    return bad ? { error: bad } : { manifest: v as Manifest };
  } catch (err) {
    return { error: `does not parse: ${(err as Error).message.split('\n')[0]}` };
  }
}

/** The sibling alias a reference starts with (the longest, as the runtime reads `alias.port` where aliases may hold dots), if any. */
function aliasOf(ref: unknown, aliases: Map<string, string>): string | undefined {
  if (typeof ref !== 'string') return undefined;
  let found: string | undefined;
  for (const a of aliases.keys()) if (ref.length > a.length + 1 && ref.startsWith(`${a}.`) && (!found || a.length > found.length)) found = a;
  return found;
}

/**
 * The naming findings of a proposed lab.yaml (the naming skill's rules). An alias is what
 * the runtime takes, a non-empty string, unique among its sibling models (and among its
 * sibling child labs); a wiring or io reference that names no sibling is a warning (a rename
 * must update them together); Silico's own bounds and keys (../schemas/labManifest.ts)
 * block; title and identity changes are advisory (what a declared `package` means for the
 * lab: ./identity.ts). Keys the format does not name are kept, noted as `info`. The rest of
 * the format is the runtime's to judge (./formatFindings.ts).
 */
export function namingFindings(before: string | undefined, after: string | undefined): Finding[] {
  if (after === undefined) return before === undefined ? [] : [{ severity: 'blocking', code: 'manifest_missing', message: 'A lab needs a lab.yaml at its root.', path: 'lab.yaml' }];
  const { manifest: m, error } = parseLabYaml(after);
  if (!m) return [{ severity: 'blocking', code: 'manifest_invalid', message: `lab.yaml ${error}.`, path: 'lab.yaml' }];
  const findings: Finding[] = labManifestProblems(m).map((p) => ({ severity: 'blocking', code: 'manifest_invalid', message: `lab.yaml ${p}`, path: `lab.yaml#${p.split(':')[0]}` }));
  const siblings = new Map<string, string>();
  for (const [group, list] of [['models', listOf(m.models)], ['children', listOf(m.children)]] as const) {
    const seen = new Map<string, string>();
    list.forEach((entry, i) => {
      const at = `lab.yaml#/${group}/${i}/alias`;
      const alias = entry?.alias;
      if (typeof alias !== 'string' || !stripAsPython(alias)) {
        findings.push({ severity: 'blocking', code: 'alias_invalid', message: `Alias ${JSON.stringify(alias ?? null)} must be a non-empty string.`, path: at });
      } else if (seen.has(alias)) {
        findings.push({ severity: 'blocking', code: 'alias_duplicate', message: `Alias ${alias} is already used at ${seen.get(alias)}; sibling aliases are unique.`, path: at });
      } else {
        seen.set(alias, at);
        siblings.set(alias, at);
      }
    });
  }
  const ref = (value: unknown, at: string) => {
    if (!aliasOf(value, siblings)) findings.push({ severity: 'warning', code: 'alias_missing', message: `${JSON.stringify(value)} names no model or child lab of this lab as alias.port; update wiring and io together with a rename.`, path: at });
  };
  listOf(m.wiring).forEach((w, i) => {
    ref(w?.from, `lab.yaml#/wiring/${i}/from`);
    (Array.isArray(w?.to) ? w.to : [w?.to]).forEach((t, j) => ref(t, `lab.yaml#/wiring/${i}/to/${j}`));
  });
  for (const side of ['inputs', 'outputs'] as const) {
    listOf(m.io?.[side]).forEach((e, i) => {
      ref(e?.maps_to, `lab.yaml#/io/${side}/${i}/maps_to`);
      const declared = e?.value_type;
      if (declared !== undefined && valueTypeOf(declared) !== declared) findings.push({ severity: 'warning', code: 'value_type_unknown', message: `value_type ${JSON.stringify(declared)} is not one of Silico's (${VALUE_TYPES.join(', ')}); the contract takes it as object.`, path: `lab.yaml#/io/${side}/${i}/value_type` });
    });
  }
  const unknown = Object.keys(m).filter((k) => !KNOWN_LAB_KEYS.has(k));
  if (unknown.length) findings.push({ severity: 'info', code: 'unknown_keys_kept', message: `lab.yaml keys ${unknown.join(', ')} are kept as written; neither Silico nor the runtime acts on them.`, path: 'lab.yaml' });
  const old = parseLabYaml(before).manifest;
  if (old && old.title !== m.title) findings.push({ severity: 'info', code: 'title_changed', message: `Title changes from ${JSON.stringify(old.title)} to ${JSON.stringify(m.title)}.`, path: 'lab.yaml#/title' });
  if (old && old.package !== m.package) findings.push({ severity: 'warning', code: 'identity_changed', message: `The package identity changes from ${JSON.stringify(old.package)} to ${JSON.stringify(m.package)}; releases are addressed by it.`, path: 'lab.yaml#/package' });
  return findings;
}
