import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { endianness } from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./analysis.py', import.meta.url));

type Command = 'sample' | 'analyze' | 'ask' | 'fit' | 'petab_starts' | 'versions';

/** One call of the analysis environment: a command of analysis.py, its request as JSON in, its answer as JSON out. */
export type Analysis = <T>(command: Command, request: Record<string, unknown>, signal?: AbortSignal) => Promise<T>;

/** Numbers a request carries packed (analysis.py's `array`): float64, little-endian, in base64, with their shape; NaN is none. */
export interface Packed { float64: string; shape: number[] }

/** `values` packed for a request: a few bytes a number, where JSON's lists cost the analysis process a Python object each. */
export function packed(values: Float64Array, shape: number[]): Packed {
  const bytes = Buffer.from(values.buffer, values.byteOffset, values.byteLength);
  return { float64: (endianness() === 'LE' ? bytes : Buffer.from(bytes).swap64()).toString('base64'), shape };
}

interface Pending { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }

/**
 * The analysis environment's interpreter (SILICO_ANALYSIS_PYTHON) serving analysis.py to
 * this worker: one process, started on the first call and kept, answering one request per
 * line. A process per call spent over a second importing scipy (through SALib and cmaes)
 * before every ask, most of a calibration's pause between batches (RESULTS.md,
 * bench:studies). The service's own code on numbers it supplies. A request that fails is
 * its caller's error (retried like any activity); a process that dies fails every request
 * in flight and the next call starts another; one that does not answer within
 * `timeoutMs` is stopped (its requests fail). `signal` (an activity's cancellation) gives
 * up on the answer; the request still finishes in the process, which goes on serving.
 */
export function createAnalysis(python: string, opts: { timeoutMs?: number } = {}): Analysis & { close(): void } {
  const timeoutMs = opts.timeoutMs ?? 5 * 60_000;
  let child: ChildProcessWithoutNullStreams | undefined;
  let ready: Promise<void> | undefined;
  const pending = new Map<number, Pending>();
  let nextId = 0;
  let stderr = '';

  // An idle server never holds its worker open (a worker that stops closes its input, and
  // the server ends there); one with requests in flight does, until they are answered.
  const hold = (proc: ChildProcessWithoutNullStreams, on: boolean) => {
    for (const h of [proc, proc.stdin, proc.stdout, proc.stderr] as Array<{ ref?: () => void; unref?: () => void }>) (on ? h.ref : h.unref)?.call(h);
  };
  const settled = (id: number) => {
    const p = pending.get(id);
    if (!p) return undefined;
    pending.delete(id);
    clearTimeout(p.timer);
    if (!pending.size && child) hold(child, false);
    return p;
  };

  const failAll = (err: Error) => {
    for (const id of [...pending.keys()]) settled(id)!.reject(err);
  };

  const start = (): Promise<void> => {
    const proc = spawn(python, [SCRIPT, 'serve'], { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '', PYTHONHASHSEED: '0' } });
    child = proc;
    stderr = '';
    proc.stderr.on('data', (b: Buffer) => { stderr = (stderr + b.toString('utf8')).slice(-4000); });
    proc.stdin.on('error', () => undefined); // a dead process is reported by its exit
    hold(proc, false);
    return new Promise<void>((resolve, reject) => {
      const lines = createInterface({ input: proc.stdout });
      lines.on('error', () => undefined); // a dead process is reported by its exit
      lines.on('line', (line) => {
        let message: { ready?: boolean; id?: number; answer?: unknown; error?: string };
        try {
          message = JSON.parse(line) as typeof message;
        } catch {
          return; // a line cut short by the process's end: its exit fails what is in flight
        }
        if (message.ready) return resolve();
        const p = settled(message.id!);
        if (!p) return; // given up on (cancelled)
        if (message.error !== undefined) p.reject(new Error(`analysis failed: ${message.error.trim().split('\n').slice(-3).join(' | ')}`));
        else p.resolve(message.answer);
      });
      proc.on('error', (err) => {
        if (child === proc) {
          child = undefined;
          ready = undefined;
        }
        reject(err);
        failAll(err);
      });
      proc.on('exit', (code, sig) => {
        if (child === proc) {
          child = undefined;
          ready = undefined;
        }
        const err = new Error(`the analysis process ended with ${sig ?? `exit code ${code}`}: ${stderr.trim().split('\n').slice(-5).join('\n')}`);
        reject(err);
        failAll(err);
      });
    });
  };

  const call = (async <T>(command: Command, request: Record<string, unknown>, signal?: AbortSignal): Promise<T> => {
    signal?.throwIfAborted();
    ready ??= start();
    const proc = child!;
    const id = nextId++;
    const answer = new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        settled(id)?.reject(new Error(`analysis ${command} gave no answer within ${timeoutMs / 1000} s`));
        proc.kill('SIGKILL');
      }, timeoutMs);
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      hold(proc, true);
      signal?.addEventListener('abort', () => settled(id)?.reject(signal.reason instanceof Error ? signal.reason : new Error('cancelled')), { once: true });
    });
    // Raced with the start, so a request cancelled or timed out while the process is still
    // starting fails its caller at once (and is never a rejection nobody handles).
    try {
      await Promise.race([ready, answer]);
    } catch {
      return answer; // given up on, or failed with the process as every request in flight
    }
    proc.stdin.write(`${JSON.stringify({ id, command, request })}\n`);
    return answer;
  }) as Analysis & { close(): void };
  call.close = () => {
    child?.kill('SIGTERM');
  };
  return call;
}
