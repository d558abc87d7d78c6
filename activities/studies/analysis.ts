import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('./analysis.py', import.meta.url));

/** One call of the analysis environment: a command of analysis.py, its request as JSON in, its answer as JSON out. */
export type Analysis = <T>(command: 'sample' | 'analyze' | 'ask' | 'fit' | 'versions', request: Record<string, unknown>, signal?: AbortSignal) => Promise<T>;

/**
 * The analysis environment's interpreter (SILICO_ANALYSIS_PYTHON) running analysis.py.
 * The service's own code on numbers it supplies; a failure is the activity's error (the
 * last lines of stderr), retried like any other; `signal` (an activity's cancellation)
 * stops the process.
 */
export function createAnalysis(python: string, opts: { timeoutMs?: number } = {}): Analysis {
  return (command, request, signal) => new Promise((resolve, reject) => {
    const child = spawn(python, [SCRIPT, command], { stdio: ['pipe', 'pipe', 'pipe'], timeout: opts.timeoutMs ?? 5 * 60_000, signal, env: { PATH: process.env.PATH ?? '', PYTHONHASHSEED: '0' } });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code !== 0) {
        reject(new Error(`analysis ${command} ended with ${signal ?? `exit code ${code}`}: ${Buffer.concat(err).toString('utf8').trim().split('\n').slice(-5).join('\n')}`));
        return;
      }
      try {
        resolve(JSON.parse(Buffer.concat(out).toString('utf8')));
      } catch (e) {
        reject(new Error(`analysis ${command} answered something other than JSON: ${(e as Error).message}`));
      }
    });
    child.stdin.end(JSON.stringify(request));
  });
}
