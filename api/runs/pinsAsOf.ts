import { valid } from '@renovatebot/pep440';
import { parsePipRequirementsLine } from 'pip-requirements-js';
import { canonicalName } from '../../storage/runtimePins.ts';
import { projectPage, releaseUploadedAt } from '../../storage/packageIndex.ts';

/**
 * Days after its newest exact pin's upload that a lab's environment is resolved as of.
 * An author pins what they installed, so they resolved after the newest pin was uploaded;
 * a month takes in the fixes that follow a release, and stays before the breaking majors
 * that later drop what an old pin leaned on (python-dateutil 4.0.0 dropped six eleven
 * months after tellurium 2.2.11.2, which imports it undeclared).
 */
export const PIN_GRACE_DAYS = 30;

/**
 * The exact pins (`name==version` of a PEP 440 version, one specifier, no wildcard, no
 * environment marker: a pin that may not be installed dates nothing) among requirements,
 * but those of `exempt` names.
 */
export function exactPins(requirements: string[], exempt: string[] = []): Array<{ name: string; version: string }> {
  const skip = new Set(exempt.map(canonicalName));
  return requirements.flatMap((raw) => {
    let req;
    try {
      req = parsePipRequirementsLine(raw);
    } catch {
      return [];
    }
    if (req?.type !== 'ProjectName' || req.versionSpec?.length !== 1 || req.environmentMarkerTree) return [];
    const [spec] = req.versionSpec;
    if (spec!.operator !== '==' || spec!.version.includes('*') || !valid(spec!.version) || skip.has(canonicalName(req.name))) return [];
    return [{ name: canonicalName(req.name), version: spec!.version }];
  });
}

/** The day a lab's exact pins date its environment to, and why; or why they cannot. */
export type PinsDating =
  | { day: string; pin: string; uploaded: string }
  | { undated: string; unreachable?: true };

const day = (iso: string) => iso.slice(0, 10);

/**
 * Dates a lab's environment by its exact pins: the end of the day (UTC) PIN_GRACE_DAYS
 * after the newest upload among them, as the package index reports each release's upload
 * (its earliest file). Undated, saying why, when a pin's upload time is not given, the
 * index could not be asked, or that day has not come yet (the lab resolves as today).
 */
export async function datePins(indexUrl: string, pins: Array<{ name: string; version: string }>, now = new Date()): Promise<PinsDating> {
  const answers = await Promise.all(pins.map(async (p) => ({ pin: `${p.name}==${p.version}`, version: p.version, answer: await projectPage(indexUrl, p.name) })));
  let newest: { pin: string; uploaded: string } | undefined;
  for (const { pin, version, answer } of answers) {
    if (answer.seen === 'unreachable') return { undated: `the package index could not be asked when ${pin} was uploaded: ${answer.why}`, unreachable: true };
    if (answer.seen === 'none') return { undated: `the package index has no project named ${pin.split('==')[0]}` };
    const uploaded = releaseUploadedAt(answer.page, version);
    if (!uploaded) return { undated: `the package index gives no upload time for ${pin}` };
    if (!newest || uploaded > newest.uploaded) newest = { pin, uploaded };
  }
  if (!newest) return { undated: 'the lab pins nothing exactly' };
  const dated = new Date(Date.parse(newest.uploaded) + PIN_GRACE_DAYS * 86_400_000).toISOString();
  if (day(dated) >= day(now.toISOString())) return { undated: `its newest exact pin, ${newest.pin}, was uploaded ${day(newest.uploaded)}, less than ${PIN_GRACE_DAYS} days before today` };
  return { day: day(dated), pin: newest.pin, uploaded: day(newest.uploaded) };
}
