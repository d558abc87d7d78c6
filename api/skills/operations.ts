import type { ToolDef } from '../tools/tool.ts';
import { record, str, arr, nullableStr, sha256Hex, time, count } from '../schemas/common.ts';
import { getSkill, listSkills, readSkillFile, SkillChecksumMismatch, type PublishedSkill } from '../../storage/skills.ts';
import { errors } from '../errors.ts';
import { isoTime } from '../../storage/ids.ts';

const skillSummary = record({
  name: str(), version: str(), summary: str(1000), checksum: sha256Hex, published_at: time,
  files: arr(record({ path: str(), sha256: sha256Hex, size_bytes: count })),
});

function summary(s: PublishedSkill) {
  return { name: s.name, version: s.version, summary: s.summary, checksum: s.checksum, published_at: isoTime(s.published_at), files: s.files };
}

/** A stored skill that no longer matches its checksum is never served. */
function guard(err: unknown): never {
  if (err instanceof SkillChecksumMismatch) {
    throw errors.internal('skill_checksum_mismatch', `The published skill ${err.skill} failed checksum verification and is withheld.`);
  }
  throw err;
}

export const skillList: ToolDef = {
  name: 'skill_list',
  description: 'List published workflow skills with their checksums.',
  scope: 'any',
  readOnly: true,
  input: {},
  output: record({ items: arr(skillSummary) }),
  async handler(_input, { deps }) {
    const skills = await listSkills(deps.db).catch(guard);
    return {
      body: { items: skills.map(summary) },
      next_actions: skills.slice(0, 3).map((s) => ({ tool: 'skill_get', description: `Read the ${s.name} skill.`, arguments: { name: s.name } })),
    };
  },
};

export const skillGet: ToolDef = {
  name: 'skill_get',
  description: "Read one skill's current guidance, verified against its published checksum.",
  scope: 'any',
  readOnly: true,
  input: { path: { name: { type: 'string', pattern: '^[a-z][a-z0-9-]{0,62}$' } }, query: { path: nullableStr(255) } },
  output: record({ skill: skillSummary, path: str(), content: str(1 << 20), sha256: sha256Hex, verified: { const: true } }),
  async handler(input, { deps }) {
    const skill = await getSkill(deps.db, input.name).catch(guard);
    if (!skill) throw errors.notFound('skill_not_found', 'skill', 'name');
    const wanted = input.path ?? 'SKILL.md';
    const file = skill.files.find((f) => f.path === wanted);
    if (!file) throw errors.notFound('skill_not_found', 'file in this skill', 'path');
    const content = await readSkillFile(deps.objects, skill, file).catch(guard);
    return { body: { skill: summary(skill), path: file.path, content, sha256: file.sha256, verified: true } };
  },
};
