import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const JUDGE = fileURLToPath(new URL('./judge.py', import.meta.url));
/** The service's own pack step, which the judge runs as its `gate`. */
const PACK = fileURLToPath(new URL('../../activities/execution/pack.py', import.meta.url));

/** The runtime's verdicts on one lab tree (test/differential/judge.py says what each stage is). */
export interface RuntimeVerdict {
  source: { valid: boolean; errors: string[] };
  /** null: not asked (the service's plans already block the lab). */
  gate: { valid: boolean | null; error: string | null };
  /** The runtime's prepare and first window; null: not asked (no judge let the lab through). */
  start: { ok: boolean | null; error: string | null };
}

export interface JudgeRequest {
  files: Record<string, string>;
  identity: { package: string | null; version: string | null };
  /** Whether to run the service's pack step: only a lab the plans let through can reach it. */
  gate: boolean;
  /** Start every lab either judge accepts (`always`), or only one whose start decides a failure (`when_needed`). */
  start?: 'always' | 'when_needed';
}

/**
 * One judge process (the pinned runtime's Python, long-lived), answering requests in
 * order over its stdin and stdout. Several requests may be in flight.
 */
export class DifferentialJudge {
  private next = 0;
  private readonly pending = new Map<number, { resolve: (v: RuntimeVerdict) => void; reject: (e: Error) => void }>();
  private readonly stderr: string[] = [];
  private exited: Error | undefined;

  private readonly child: ChildProcessWithoutNullStreams;
  private constructor(child: ChildProcessWithoutNullStreams) {
    this.child = child;
    createInterface({ input: child.stdout }).on('line', (line) => this.answer(line));
    createInterface({ input: child.stderr }).on('line', (line) => {
      this.stderr.push(line);
      if (this.stderr.length > 40) this.stderr.shift();
    });
    child.on('exit', (code, signal) => {
      this.exited = new Error(`the runtime judge exited (${signal ?? code}); its last lines:\n${this.stderr.join('\n')}`);
      for (const p of this.pending.values()) p.reject(this.exited);
      this.pending.clear();
    });
  }

  /** `python`: an interpreter with the pinned biosimulant (SILICO_PYTHON). */
  static start(python: string): DifferentialJudge {
    // No bytecode next to the generated models; the runtime's advisories stay quiet.
    const env = { ...process.env, PYTHONDONTWRITEBYTECODE: '1', PYTHONWARNINGS: 'ignore', PYTHONUNBUFFERED: '1' };
    return new DifferentialJudge(spawn(python, [JUDGE, PACK], { env, stdio: ['pipe', 'pipe', 'pipe'] }));
  }

  get inFlight(): number {
    return this.pending.size;
  }

  judge(request: JudgeRequest): Promise<RuntimeVerdict> {
    if (this.exited) return Promise.reject(this.exited);
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.stdin.write(`${JSON.stringify({ id, ...request })}\n`);
    });
  }

  private answer(line: string): void {
    const msg = JSON.parse(line) as RuntimeVerdict & { id: number; crash?: string };
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    if (msg.crash) p.reject(new Error(`the runtime judge failed on a request:\n${msg.crash}`));
    else p.resolve({ source: msg.source, gate: msg.gate, start: msg.start });
  }

  async close(): Promise<void> {
    if (this.exited) return;
    const done = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin.end();
    await done;
  }
}

/** Several judges, each request to the least busy one: the bench's throughput on every core. */
export class JudgePool {
  private readonly judges: DifferentialJudge[];

  constructor(python: string, size: number) {
    this.judges = Array.from({ length: size }, () => DifferentialJudge.start(python));
  }

  get inFlight(): number {
    return this.judges.reduce((n, j) => n + j.inFlight, 0);
  }

  judge(request: JudgeRequest): Promise<RuntimeVerdict> {
    const idle = this.judges.reduce((a, b) => (b.inFlight < a.inFlight ? b : a));
    return idle.judge(request);
  }

  close(): Promise<unknown> {
    return Promise.all(this.judges.map((j) => j.close()));
  }
}
