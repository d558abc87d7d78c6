import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createInterface } from 'node:readline';
import { constants } from 'node:os';

export interface Supervised {
  name: string;
  child: ChildProcess;
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<number | string>;
}

export type LogSink = (source: string, line: string) => void;

/** Writes `name | line` so interleaved output of several processes stays readable. */
export function prefixedSink(out: NodeJS.WritableStream = process.stdout): LogSink {
  return (source, line) => out.write(`${source.padEnd(8)}| ${line}\n`);
}

/**
 * Starts and stops the stack's processes. Children are stopped in reverse start order
 * (api before worker before servers), with SIGTERM and then SIGKILL after a grace time.
 */
export class Supervisor {
  private readonly procs: Supervised[] = [];
  /** How each child was started, so that it can be started again as it was. */
  private readonly specs = new WeakMap<Supervised, { command: string; args: string[]; opts: SpawnOptions }>();
  private stopping = false;
  private static readonly SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  /** Stops the children, then ends this process as the signal would have. */
  private readonly onSignal = (signal: NodeJS.Signals): void => {
    this.sink('stack', `${signal}: stopping the stack`);
    void this.stopAll(3000).finally(() => process.exit(128 + (constants.signals[signal] ?? 15)));
  };

  private readonly sink: LogSink;
  /**
   * `exitOnSignal`: a signal to this process (Ctrl-C, `timeout`, a cancelled CI job) stops
   * the children before it exits, so no server outlives a test run or a benchmark. Off
   * for `npm start`, which handles its signals itself.
   */
  constructor(sink: LogSink, opts: { exitOnSignal?: boolean } = {}) {
    this.sink = sink;
    if (opts.exitOnSignal) for (const s of Supervisor.SIGNALS) process.once(s, this.onSignal);
  }

  /** Spawns a child whose stdout/stderr lines go to the sink under its name. */
  start(name: string, command: string, args: string[], opts: SpawnOptions = {}): Supervised {
    const child = spawn(command, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => this.sink(name, line));
    }
    const exited = new Promise<number | string>((resolve) => {
      child.on('exit', (code, signal) => resolve(code ?? signal ?? -1));
      child.on('error', (err) => {
        this.sink(name, `failed to start: ${err.message}`);
        resolve(-1);
      });
    });
    const p = { name, child, exited };
    this.procs.push(p);
    this.specs.set(p, { command, args, opts });
    return p;
  }

  /** Starts a child again as it was first started (once it has exited), in its place. */
  restart(p: Supervised): Supervised {
    const spec = this.specs.get(p);
    if (!spec) throw new Error(`${p.name} was not started by this supervisor`);
    const i = this.procs.indexOf(p);
    if (i >= 0) this.procs.splice(i, 1);
    return this.start(p.name, spec.command, spec.args, spec.opts);
  }

  /** Calls `onExit` when any child ends while the stack is not stopping. */
  watch(onExit: (p: Supervised, code: number | string) => void): void {
    for (const p of this.procs) {
      void p.exited.then((code) => {
        if (!this.stopping) onExit(p, code);
      });
    }
  }

  /** The children started so far (benchmarks read their CPU time from /proc). */
  get processes(): readonly Supervised[] {
    return this.procs;
  }

  get isStopping(): boolean {
    return this.stopping;
  }

  /** Stops every child, newest first; resolves when all have exited. */
  async stopAll(graceMs = 10000): Promise<void> {
    this.stopping = true;
    for (const s of Supervisor.SIGNALS) process.removeListener(s, this.onSignal);
    for (const p of [...this.procs].reverse()) {
      if (p.child.exitCode !== null || p.child.signalCode !== null) continue;
      p.child.kill('SIGTERM');
      const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
      await p.exited;
      clearTimeout(timer);
    }
  }
}

/** Polls `probe` until it returns true or the deadline passes. */
export async function waitFor(what: string, probe: () => Promise<boolean>, timeoutMs: number, failed?: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const why = failed?.();
    if (why) throw new Error(`${what}: ${why}`);
    try {
      if (await probe()) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${what} was not ready within ${Math.round(timeoutMs / 1000)}s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Fails fast when a port is taken: a service that cannot bind would otherwise look
 * "ready" by answering from whatever already listens there (another stack, say).
 */
export async function assertPortsFree(ports: Array<{ port: number; what: string; envVar: string }>): Promise<void> {
  const { createServer } = await import('node:net');
  const taken: string[] = [];
  for (const p of ports) {
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(p.port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (!free) taken.push(`${p.what} port ${p.port} is in use (set ${p.envVar} to another port, or stop what listens there)`);
  }
  if (taken.length) throw new Error(taken.join('; '));
}
