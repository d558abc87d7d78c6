import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { parse as parseYaml } from 'yaml';
import yazl from 'yazl';
import { blobKey, type ObjectStore } from '../../storage/objects.ts';
import type { PetabCalibrationDesign } from '../../storage/studyDesign.ts';
import { unscale } from '../../kernel/petabScales.ts';

/** The parameter table (TSV) with each estimated parameter's nominal value set to its best, every other cell as written. */
function withNominals(table: string, best: Map<string, number>): string {
  const rows = parseCsv(table, { delimiter: '\t', relax_column_count: true, skip_empty_lines: true }) as string[][];
  const header = rows[0]!;
  const id = header.indexOf('parameterId');
  const nominal = header.indexOf('nominalValue');
  if (id < 0 || nominal < 0) throw new Error('the parameter table has no parameterId or nominalValue column');
  for (const row of rows.slice(1)) {
    const v = best.get(row[id]!);
    if (v !== undefined) row[nominal] = String(v);
  }
  return stringify(rows, { delimiter: '\t', record_delimiter: '\n' });
}

/**
 * A calibration's result as a PEtab problem: the imported problem's files unchanged under
 * one folder, except the parameter table, whose estimated parameters' nominal values are
 * the best end point's (on the linear scale, as PEtab writes them). Importing it evaluates
 * to the calibration's best NLL at nominal.
 */
export async function petabExportZip(objects: ObjectStore, d: PetabCalibrationDesign, bestOnScale: Record<string, number>): Promise<Buffer> {
  const yamlName = path.posix.basename(d.yaml);
  const folder = yamlName.replace(/\.ya?ml$/i, '');
  const bytes = new Map(await Promise.all(d.files.map(async (f) => [f.path, await objects.getBytes(blobKey(f.sha256))] as const)));
  const spec = parseYaml(bytes.get(yamlName)!.toString('utf8')) as { parameter_file?: string };
  const tableFile = spec.parameter_file;
  if (!tableFile || !bytes.has(tableFile)) throw new Error(`the problem's YAML names no parameter table among its files (${tableFile ?? 'none'})`);
  const best = new Map(d.parameters.map((p) => [p.id, unscale(bestOnScale[p.id]!, p.scale)]));
  bytes.set(tableFile, Buffer.from(withNominals(bytes.get(tableFile)!.toString('utf8'), best)));
  const zip = new yazl.ZipFile();
  // A fixed time, so the same result makes the same archive.
  for (const [name, data] of [...bytes].sort(([a], [b]) => a.localeCompare(b))) zip.addBuffer(data, `${folder}/${name}`, { mtime: new Date(Date.UTC(2000, 0, 1)) });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const c of zip.outputStream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
