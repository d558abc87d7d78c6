import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { blobKey, type ObjectStore } from '../../storage/objects.ts';
import type { Tree } from '../../storage/trees.ts';
import { DependencyUnavailable } from '../../storage/dependencies.ts';
import { LRUCache } from 'lru-cache';
import { treeDigest } from '../../storage/trees.ts';

const SCRIPT = fileURLToPath(new URL('./manifestCheck.py', import.meta.url));

/** The files the runtime's manifest checks read: lab and model manifests and a package-backed child's lock. */
const MANIFEST_FILE = /(^|\/)(lab\.ya?ml|model\.ya?ml|biosim\.ya?ml|biosimulant\.lock)$/;

/** How long one judgement may take: a manifest's checks are milliseconds; more is a YAML bomb or a stuck process. */
const JUDGE_MS = 10_000;

/** Address space of the judging process: far above what any manifest needs, far below what a YAML bomb takes. */
const MEMORY_BYTES = 1 << 30;

/** A model whose `biosim.entrypoint` names no file of the lab, as the runtime looks for it (paths relative to the lab). */
export interface UnresolvedEntrypoint {
  manifest: string;
  entrypoint: string;
  /** The file the entrypoint's module would be; null when the entrypoint is not `module:Class`. */
  module: string | null;
}

/** The runtime's verdict on a lab's manifests: its own messages, none when it accepts them; and the entrypoints it would not find in the lab. */
export type RuntimeVerdict = { errors: string[]; entrypoints: UnresolvedEntrypoint[]; /** The judge did not finish: no verdict to keep. */ timedOut?: true };

/**
 * The lab runtime's own manifest checks (api/workspaces/manifestCheck.py), and where it
 * looks for each model's entrypoint module, asked of one long-lived process of the default
 * runtime's interpreter: what the runtime refuses is
 * refused in its words, and nothing it accepts is refused here. The process reads only
 * manifests (YAML data), never a lab's code, under an address-space limit; a check that
 * does not answer in time ends the process (the next check starts another).
 */
export class RuntimeJudge {
  private child: ChildProcessWithoutNullStreams | null = null;
  private next = 0;
  private readonly pending = new Map<number, { resolve(v: RuntimeVerdict): void; reject(e: Error): void; timer: NodeJS.Timeout }>();
  /** Verdicts by tree digest: a tree never changes, so a revision's change plan and its run plans ask once. */
  private readonly verdicts = new LRUCache<string, RuntimeVerdict>({ max: 1000 });

  private readonly python: string;
  constructor(python: string) {
    this.python = python;
  }

  /** Judges a tree's manifests: they are written to a scratch folder beside empty stand-ins for its other files, so paths resolve as in the lab. */
  async judgeTree(objects: ObjectStore, tree: Tree): Promise<RuntimeVerdict> {
    const digest = treeDigest(tree);
    const known = this.verdicts.get(digest);
    if (known) return known;
    const dir = await mkdtemp(path.join(tmpdir(), 'silico-judge-'));
    try {
      for (const [p, entry] of Object.entries(tree)) {
        const file = path.join(dir, p);
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, MANIFEST_FILE.test(p) ? await objects.getBytes(blobKey(entry.sha256)) : '');
      }
      const verdict = await this.ask(dir);
      if (!verdict.timedOut) this.verdicts.set(digest, verdict);
      return verdict;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private ask(dir: string): Promise<RuntimeVerdict> {
    const child = this.process();
    const id = this.next++;
    return new Promise<RuntimeVerdict>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve({ errors: [`The lab runtime did not finish judging the manifests within ${JUDGE_MS / 1000} s.`], entrypoints: [], timedOut: true });
        child.kill('SIGKILL');
      }, JUDGE_MS);
      this.pending.set(id, { resolve, reject, timer });
      child.stdin.write(`${JSON.stringify({ id, dir })}\n`);
    });
  }

  private process(): ChildProcessWithoutNullStreams {
    if (this.child) return this.child;
    const limit = `import resource; resource.setrlimit(resource.RLIMIT_AS, (${MEMORY_BYTES}, ${MEMORY_BYTES})); import runpy; runpy.run_path(${JSON.stringify(SCRIPT)}, run_name="__main__")`;
    const child = spawn(this.python, ['-c', limit], { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' } });
    this.child = child;
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-2000); });
    child.stdin.on('error', () => undefined);
    createInterface({ input: child.stdout }).on('line', (line) => {
      const answer = JSON.parse(line) as { id: number; errors?: string[]; entrypoints?: UnresolvedEntrypoint[]; failure?: string };
      const waiting = this.pending.get(answer.id);
      if (!waiting) return;
      this.pending.delete(answer.id);
      clearTimeout(waiting.timer);
      if (answer.failure) waiting.resolve({ errors: [`The lab runtime could not judge the manifests: ${answer.failure}`], entrypoints: [] });
      else waiting.resolve({ errors: answer.errors ?? [], entrypoints: answer.entrypoints ?? [] });
    });
    const gone = (cause: unknown) => {
      if (this.child === child) this.child = null;
      for (const [id, w] of this.pending) {
        this.pending.delete(id);
        clearTimeout(w.timer);
        w.reject(new DependencyUnavailable('lab_runtime', cause instanceof Error ? cause : new Error(stderr.trim() || 'the runtime\'s manifest check ended')));
      }
    };
    child.on('error', gone);
    child.on('exit', () => gone(null));
    return child;
  }

  /** Ends the process (the api's shutdown). */
  close(): void {
    this.child?.kill('SIGTERM');
    this.child = null;
  }
}
