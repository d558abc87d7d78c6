import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import { createHash, type Hash } from 'node:crypto';
import { type Point } from './artifacts.ts';
import { csvCell } from '../../storage/formats.ts';

/** Final values larger than this (as JSON) are stored as an artifact and referenced. */
export const MAX_INLINE_OUTPUT_BYTES = 64 * 1024;
/** Points kept for a series' plot: a chart of more shows nothing more. */
const PLOT_POINTS = 4000;

/** A file a run leaves, hashed: its bytes on the worker's disk (hashed as they were written) or in memory. */
export type ArtifactFile = {
  role: string;
  file_name: string;
  content_type: string;
  format: string;
  sha256: string;
  size_bytes: number;
  public: boolean;
} & (
  /** Written on the worker's disk as it came (a series' CSV). */
  | { path: string }
  /** Made whole in memory (a record, a chart): never written to disk before it is stored. */
  | { bytes: Buffer }
);

/** An output the lab's contract declares: whether it is public, and its units (for its chart's axis). */
export interface DeclaredOutput { name: string; public: boolean; units?: string | null }

/** A file being written with its digest and size kept up to date. */
class HashedFile {
  private readonly out: WriteStream;
  private readonly hash: Hash = createHash('sha256');
  /** The stream's error (a full disk, no descriptor left), kept for the next write or the close: never an uncaught 'error'. */
  private failed: Error | undefined;
  size = 0;
  readonly path: string;
  constructor(path: string) {
    this.path = path;
    this.out = createWriteStream(path);
    this.out.on('error', (err) => {
      this.failed ??= err;
    });
  }
  async write(text: string): Promise<void> {
    if (this.failed) throw this.failed;
    const bytes = Buffer.from(text);
    this.hash.update(bytes);
    this.size += bytes.length;
    if (!this.out.write(bytes)) await once(this.out, 'drain');
  }
  async close(): Promise<{ sha256: string; size: number }> {
    if (this.failed) throw this.failed;
    this.out.end();
    await once(this.out, 'finish');
    return { sha256: this.hash.digest('hex'), size: this.size };
  }
  /** Lets go of the file's descriptor without finishing it (the run ended some other way). */
  discard(): void {
    this.out.destroy();
  }
}

interface SeriesState {
  csv: HashedFile;
  points: number;
  /** Every `stride`-th point, for the plot; the stride doubles whenever it fills. */
  plot: Point[];
  stride: number;
  numeric: boolean;
}

/**
 * Collects a run's outputs as the driver streams them: each declared output's time series
 * goes straight to a CSV file (never held whole), a thinned copy feeds its plot, and final
 * values are kept when small. Names the lab did not declare are ignored, so a lab cannot
 * make the worker hold more than its contract names.
 */
export function createOutputSink(dir: string, declared: DeclaredOutput[]) {
  const byName = new Map(declared.map((d) => [d.name, d]));
  const series = new Map<string, SeriesState>();
  const finals = new Map<string, unknown>();

  const stateOf = async (name: string): Promise<SeriesState> => {
    let s = series.get(name);
    if (!s) {
      s = { csv: new HashedFile(path.join(dir, `${series.size}.csv`)), points: 0, plot: [], stride: 1, numeric: false };
      series.set(name, s);
      await s.csv.write(`t,${name}\n`);
    }
    return s;
  };

  return {
    /** A chunk of a series, in order. */
    async addSeries(name: string, points: unknown): Promise<void> {
      if (!byName.has(name) || !Array.isArray(points)) return;
      const s = await stateOf(name);
      let text = '';
      for (const p of points) {
        if (!Array.isArray(p) || typeof p[0] !== 'number') continue;
        const point: Point = [p[0], p[1]];
        text += `${point[0]},${csvCell(point[1])}\n`;
        if (typeof point[1] === 'number') s.numeric = true;
        if (s.points % s.stride === 0) {
          s.plot.push(point);
          if (s.plot.length >= PLOT_POINTS) {
            s.plot = s.plot.filter((_, i) => i % 2 === 0);
            s.stride *= 2;
          }
        }
        s.points += 1;
      }
      await s.csv.write(text);
    },

    setFinal(name: string, value: unknown): void {
      if (byName.has(name)) finals.set(name, value ?? null);
    },

    /** Names whose final value the lab did not give (null counts as not given). */
    missing(): string[] {
      return declared.filter((d) => finals.get(d.name) === null || finals.get(d.name) === undefined).map((d) => d.name);
    },

    /**
     * Closes the series files and returns the artifacts to store, each final value
     * small enough to keep inline, and the large ones as files of their own; with
     * `plot`, a chart of each numeric series beside its data.
     */
    async finish(plot: ((title: string, units: string | null, points: Point[]) => string) | null): Promise<{ files: ArtifactFile[]; values: Map<string, unknown> }> {
      const files: ArtifactFile[] = [];
      for (const [name, s] of series) {
        const { sha256, size } = await s.csv.close();
        const pub = byName.get(name)!.public;
        if (s.points < 2) continue;
        files.push({ role: name, file_name: `${name}.csv`, content_type: 'text/csv', format: 'csv', path: s.csv.path, sha256, size_bytes: size, public: pub });
        if (s.numeric && plot) files.push(textArtifact({ role: name, file_name: `${name}.svg`, content_type: 'image/svg+xml', format: 'svg', public: pub }, plot(name, byName.get(name)!.units ?? null, s.plot)));
      }
      return { files, values: new Map(finals) };
    },

    /** Closes whatever series files are still open, when the run ends without `finish` (failed, cancelled). */
    discard(): void {
      for (const s of series.values()) s.csv.discard();
    },
  };
}

export type OutputSink = ReturnType<typeof createOutputSink>;

/** An artifact of text made in memory, described and hashed. */
export function textArtifact(meta: Omit<ArtifactFile, 'path' | 'bytes' | 'sha256' | 'size_bytes'>, text: string): ArtifactFile {
  const bytes = Buffer.from(text);
  return { ...meta, bytes, sha256: createHash('sha256').update(bytes).digest('hex'), size_bytes: bytes.length };
}
