import { createReadStream } from 'node:fs';
import type { Db } from './db/knex.ts';
import type { ObjectStore } from './objects.ts';
import { blobKey } from './objects.ts';
import { insertFile, fileByOrigin } from './db/files.ts';
import { setExperimentArtifacts, type ExperimentArtifact } from './db/experiments.ts';
import { newUuid } from './ids.ts';
import { csvCell } from './formats.ts';
import type { Comparison } from './experimentComparison.ts';

/** A file written to disk (one too large to hold in memory), with the digest and size taken while it was written. */
export interface WrittenFile { path: string; sha256: string; size: number }

/** One of a study's files: its bytes, or a file written to disk. */
export type ExperimentFile = { file_name: string; content_type: string; format: string } & ({ bytes: Buffer } | WrittenFile);

const CSV_COLUMNS = ['arm', 'output', 'n', 'mean', 'stddev', 'min', 'max', 'ci95_low', 'ci95_high'];

/** One row per arm and output; for two arms, the Welch p-value of that output on both rows. */
export function comparisonCsv(c: Comparison): string {
  const twoArms = c.tests.length > 0;
  const lines = [[...CSV_COLUMNS, ...(twoArms ? ['welch_p_value'] : [])].join(',')];
  for (const arm of c.arms) {
    for (const output of c.outputs) {
      const m = arm.metrics?.[output];
      if (!m) continue;
      const p = c.tests.find((t) => t.output === output)?.p_value ?? null;
      lines.push([arm.label, output, m.n, m.mean, m.stddev, m.min, m.max, m.ci95?.[0] ?? null, m.ci95?.[1] ?? null, ...(twoArms ? [p] : [])]
        .map((v) => (v === null ? '' : csvCell(v))).join(','));
    }
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The study's chart: per output a panel of arm means with their 95% intervals (an arm
 * with one run shows its mean alone), drawn by Vega-Lite and rendered to SVG by Vega
 * without a browser.
 */
export async function comparisonSvg(c: Comparison, title: string): Promise<string> {
  const values = c.arms.flatMap((arm) => c.outputs.flatMap((output) => {
    const m = arm.metrics?.[output];
    return m ? [{ arm: arm.label, output, mean: m.mean, low: m.ci95?.[0] ?? m.mean, high: m.ci95?.[1] ?? m.mean, n: m.n }] : [];
  }));
  return renderVegaLite({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, subtitle: 'Arm means with 95% confidence intervals (completed runs only; descriptive)' },
    data: { values },
    facet: { row: { field: 'output', type: 'nominal', title: null } },
    resolve: { scale: { y: 'independent' } },
    spec: {
      width: 360, height: 160,
      layer: [
        { mark: { type: 'rule' }, encoding: { x: { field: 'arm', type: 'nominal', title: 'arm' }, y: { field: 'low', type: 'quantitative', title: 'mean', scale: { zero: false } }, y2: { field: 'high' } } },
        { mark: { type: 'point', filled: true, size: 60 }, encoding: { x: { field: 'arm', type: 'nominal' }, y: { field: 'mean', type: 'quantitative' }, tooltip: [{ field: 'n' }, { field: 'mean' }, { field: 'low' }, { field: 'high' }] } },
      ],
    },
  });
}

/** A Vega-Lite specification rendered to SVG by Vega, without a browser. */
export async function renderVegaLite(spec: unknown): Promise<string> {
  const [vega, vl] = await Promise.all([import('vega'), import('vega-lite')]);
  const view = new vega.View(vega.parse(vl.compile(spec as never).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** Renders the comparison as CSV and SVG and stores them as the study's files. */
export async function storeComparisonArtifacts(
  deps: { db: Db; objects: ObjectStore }, e: { id: string; account_id: string; name: string }, c: Comparison,
): Promise<ExperimentArtifact[]> {
  return storeExperimentFiles(deps, e, [
    { file_name: 'comparison.csv', content_type: 'text/csv', format: 'csv', bytes: Buffer.from(comparisonCsv(c)) },
    { file_name: 'comparison.svg', content_type: 'image/svg+xml', format: 'svg', bytes: Buffer.from(await comparisonSvg(c, e.name)) },
  ], 'experiment_comparison');
}

/**
 * Stores a study's files, each as a content-addressed blob and as one of the account's
 * files (its origin names the study; the same bytes are recorded once), and lists them on
 * the study. Returns what was listed.
 */
export async function storeExperimentFiles(
  deps: { db: Db; objects: ObjectStore }, e: { id: string; account_id: string }, files: ExperimentFile[], origin: string,
): Promise<ExperimentArtifact[]> {
  const artifacts = await recordExperimentFiles(deps, e, files, origin);
  await setExperimentArtifacts(deps.db, e.id, artifacts);
  return artifacts;
}

/** Stores and records a study's files as storeExperimentFiles does, without listing them on it. */
export async function recordExperimentFiles(
  deps: { db: Db; objects: ObjectStore }, e: { id: string; account_id: string }, files: ExperimentFile[], origin: string,
): Promise<ExperimentArtifact[]> {
  const artifacts: ExperimentArtifact[] = [];
  for (const f of files) {
    const { sha256, size } = 'bytes' in f ? { sha256: await deps.objects.putBlob(f.bytes, f.content_type), size: f.bytes.length } : await putWritten(deps.objects, f);
    const originKey = `experiment:${e.id}:${f.file_name}:${sha256}`;
    const row = (await insertFile(deps.db, {
      id: newUuid(), account_id: e.account_id, name: `${e.id}-${f.file_name}`, format: f.format, content_type: f.content_type, size_bytes: size,
      sha256, object_key: blobKey(sha256), origin: { kind: origin, experiment_id: e.id }, origin_key: originKey,
    })) ?? (await fileByOrigin(deps.db, e.account_id, originKey))!;
    artifacts.push({ file_id: row.id, file_name: f.file_name, content_type: f.content_type, format: f.format, size_bytes: size, sha256 });
  }
  return artifacts;
}

/** A file written to disk and hashed as it was written, streamed to its content address unless the store holds those bytes already. */
async function putWritten(objects: ObjectStore, f: WrittenFile & { content_type: string }): Promise<{ sha256: string; size: number }> {
  const key = blobKey(f.sha256);
  if (!(await objects.exists(key))) await objects.putStream(key, createReadStream(f.path), f.content_type);
  return { sha256: f.sha256, size: f.size };
}
