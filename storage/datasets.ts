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

export interface Mismatch { file_id: string; problem: string }

/**
 * Members that are not what their files are: a file this account does not have, or a
 * digest or size other than `actual(file)` says (the files' records at registration,
 * the bytes re-hashed in the store by the workflow).
 */
export function memberMismatches<F extends { id: string }>(
  members: Member[], files: Map<string, F>, actual: (f: F) => { sha256: string; size: number },
): Mismatch[] {
  const out: Mismatch[] = [];
  for (const m of members) {
    const f = files.get(m.file_id);
    if (!f) {
      out.push({ file_id: m.file_id, problem: 'no such file in this account' });
      continue;
    }
    const a = actual(f);
    if (a.sha256 !== m.sha256) out.push({ file_id: m.file_id, problem: `sha256 is ${a.sha256}, not ${m.sha256}` });
    else if (a.size !== m.size_bytes) out.push({ file_id: m.file_id, problem: `size_bytes is ${a.size}, not ${m.size_bytes}` });
  }
  return out;
}

/** Members that do not match what their files' records say. */
export function recordedMismatches(members: Member[], files: Map<string, { id: string; sha256: string; size_bytes: number }>): Mismatch[] {
  return memberMismatches(members, files, (f) => ({ sha256: f.sha256, size: Number(f.size_bytes) }));
}
