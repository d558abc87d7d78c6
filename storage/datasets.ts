import { digestJson } from './digest.ts';

export interface Member { file_id: string; sha256: string; size_bytes: number; sample_id: string; group_id: string; role: string; split: string }
export interface Leak { kind: 'group_id' | 'sample_id' | 'sha256'; value: string; splits: string[] }

/**
 * Split leakage: the same group, sample or file content in more than one split. Every
 * offender is listed (kind, value, the splits it appears in), sorted for stable answers.
 */
export function splitLeaks(members: Member[]): Leak[] {
  const leaks: Leak[] = [];
  for (const kind of ['group_id', 'sample_id', 'sha256'] as const) {
    const splits = new Map<string, Set<string>>();
    for (const m of members) {
      if (!splits.has(m[kind])) splits.set(m[kind], new Set());
      splits.get(m[kind])!.add(m.split);
    }
    for (const [value, s] of [...splits].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (s.size > 1) leaks.push({ kind, value, splits: [...s].sort() });
    }
  }
  return leaks;
}

/** The immutable manifest of a version (members in a stable order) and its digest. */
export function datasetManifest(d: { name: string; source: string; license: string; attribution: string; annotation_version: string; members: Member[] }) {
  const members = [...d.members]
    .map((m) => ({ file_id: m.file_id, sha256: m.sha256, size_bytes: m.size_bytes, sample_id: m.sample_id, group_id: m.group_id, role: m.role, split: m.split }))
    .sort((a, b) => (a.split + a.sample_id + a.file_id < b.split + b.sample_id + b.file_id ? -1 : 1));
  const manifest = { name: d.name, source: d.source, license: d.license, attribution: d.attribution, annotation_version: d.annotation_version, members };
  return { manifest, manifest_sha256: digestJson(manifest) };
}
