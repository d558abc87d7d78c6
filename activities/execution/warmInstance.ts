import net from 'node:net';
import path from 'node:path';
import { rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { DRIVER } from './labSpec.ts';
import { DEFAULT_STREAM_LIMITS, endLingering, groupKiller, readProtocol, sandboxInit, signalError, spawnSandboxed, type LabError, type LabProcessHooks, type LabProcessOutcome, type StreamLimits } from './labProcess.ts';
import { hostPidOf, watchSandbox } from './supervision.ts';
import type { Sandbox, SandboxPaths, SandboxSpec } from './sandbox.ts';

/** Where the instance listens, inside its scratch directory. */
const SOCKET = 'instance.sock';

/**
 * A warm instance of a hosted release: one sandbox (its own user, no network, limits)
 * whose driver has imported the runtime and prepared the package once, and that runs
 * each invocation in a fresh fork of that pristine process, so nothing an invocation does
 * is seen by the next (forkserve.py; driver.py `--serve`, or the PEtab engine's). One
 * invocation at a time.
 */
export interface WarmInstance {
  readonly pid: number;
  /** Seconds it took from spawning the sandbox to ready. */
  readonly startSeconds: number;
  /**
   * Runs one request (`{inputs, seed, ...}`) to its end; the outcome is a one-shot run's.
   * A request made by a function gets first a directory of this invocation's own (this
   * instance's scratch, which no other instance sees), to stage input files in: the lab
   * reads them at `inside`, and they are gone when the invocation ends.
   */
  invoke(request: Record<string, unknown> | ((staging: Staging) => Promise<Record<string, unknown>>), opts: InvokeOptions, hooks: LabProcessHooks): Promise<LabProcessOutcome>;
  /** Whether the instance is still there to serve. */
  alive(): boolean;
  /** Stops the whole sandbox. */
  close(): Promise<void>;
}

export interface InvokeOptions {
  wallSeconds: number;
  signal?: AbortSignal;
  limits?: StreamLimits;
  /**
   * Watched while it runs, as a one-shot run is (supervision.ts): the memory of the
   * sandbox's processes together, and silence with no CPU used (seconds); `hooks.onAlive`
   * is called each second it is alive.
   */
  watch?: { memoryBytes: number | null; stallSeconds: number | null };
  /** What its ending past `wallSeconds` says (by default, an invocation's words). */
  timedOut?: string;
}

/** An invocation's own directory: where the worker writes (`host`), where the lab reads (`inside`). */
export interface Staging { host: string; inside: string }

export class WarmInstanceFailed extends Error {
  readonly error: LabError;
  constructor(error: LabError) {
    super(error.message);
    this.error = error;
  }
}

/**
 * Starts a warm instance of the package `entry` in `spec.input` and resolves once it is
 * ready (the package checked against `warm.package_sha256` and prepared), or rejects with
 * the reason it is not (WarmInstanceFailed; SandboxUnavailable when no sandbox).
 */
export function startWarmInstance(
  sandbox: Sandbox, spec: Omit<SandboxSpec, 'script' | 'args'>, entry: string, warm: Record<string, unknown>,
  opts: { readySeconds: number; onExit?: () => void },
): Promise<WarmInstance> {
  return startServing(sandbox, { ...spec, script: DRIVER }, (p, socket) => ['--serve', path.join(p.input, entry), p.scratch, socket], warm, opts);
}

/**
 * Starts a warm instance of one of our trusted scripts that serves as forkserve.py says
 * (driver.py for a lab, the PEtab engine), given its arguments for the socket it listens
 * on, and resolves once it says it is ready.
 */
export async function startServing(
  sandbox: Sandbox, spec: Omit<SandboxSpec, 'args'>, args: (paths: SandboxPaths, socket: string) => string[], warm: Record<string, unknown>,
  opts: { readySeconds: number; onExit?: () => void },
): Promise<WarmInstance> {
  const started = Date.now();
  const cmd = await sandbox.command({ ...spec, args: (p) => args(p, path.join(p.scratch, SOCKET)) });
  const { child, exited } = spawnSandboxed(cmd);
  const init = sandboxInit(child);
  const killGroup = groupKiller(child, init);
  let gone = false;
  let goneWith: number | null = null;
  void exited.then((code) => {
    gone = true;
    goneWith = code;
    cmd.release();
    opts.onExit?.();
  });
  // Sandboxed, the instance sweeps each child's traces (forkserve.py, sweep_after): its PID
  // namespace and scratch are its own.
  child.stdin!.write(`${JSON.stringify({ ...warm, sweep: !cmd.unsafe })}\n`);

  // The instance's own messages: `ready` once, then `exited` per invocation.
  const exits = new Map<number, (code: number | null) => void>();
  let reported: LabError | null = null;
  const ready = new Promise<void>((resolve, reject) => {
    const lines = createInterface({ input: child.stdio[3] as Readable, crlfDelay: Infinity });
    lines.on('error', () => undefined); // the instance's exit reports what went wrong
    lines.on('line', (line) => {
      let msg: Record<string, unknown>;
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      if (msg.type === 'ready') resolve();
      else if (msg.type === 'error') reported = { code: String(msg.code ?? 'lab_error').slice(0, 64), message: String(msg.message ?? '').slice(0, 4000) };
      else if (msg.type === 'exited') {
        exits.get(Number(msg.seq))?.(typeof msg.code === 'number' ? msg.code : null);
        exits.delete(Number(msg.seq));
      }
    });
    void exited.then((code) => {
      reject(new WarmInstanceFailed(reported ?? { code: 'lab_error', message: `The warm instance exited with ${code} before it was ready: ${stderrTail.slice(-5).join('\n')}` }));
      for (const settle of exits.values()) settle(null);
      exits.clear();
    });
  });

  // The lab's own output goes to the invocation being served, bounded per invocation.
  const stderrTail: string[] = [];
  let onLog: LabProcessHooks['onLog'] | undefined;
  for (const [stream, input] of [['stdout', child.stdout!], ['stderr', child.stderr!]] as const) {
    createInterface({ input, crlfDelay: Infinity }).on('error', () => undefined).on('line', (l) => {
      if (stream === 'stderr') {
        stderrTail.push(l.slice(0, 2000));
        if (stderrTail.length > 40) stderrTail.shift();
      }
      onLog?.(stream, l);
    });
  }

  const timer = setTimeout(() => killGroup('SIGKILL'), opts.readySeconds * 1000);
  try {
    await ready;
  } catch (err) {
    killGroup('SIGKILL');
    throw err;
  } finally {
    clearTimeout(timer);
  }
  // The scratch as the worker reaches it: a directory of its own on the host, or a
  // filesystem private to the sandbox, reached through its init's root.
  const initPid = spec.limits.scratchBytes && !cmd.unsafe ? await init : null;
  if (spec.limits.scratchBytes && !cmd.unsafe && initPid === null) {
    killGroup('SIGKILL');
    throw new WarmInstanceFailed({ code: 'sandbox_unavailable', message: 'The warm instance\'s sandbox did not report its init.' });
  }
  const scratch = initPid === null ? spec.scratch : path.join('/proc', String(initPid), 'root', cmd.paths.scratch);
  const startSeconds = (Date.now() - started) / 1000;
  let busy = false;
  let seq = 0;
  // Each signal names the invocation it is for: one that arrives after it ended reaches no other.
  const send = (sig: 'TERM' | 'KILL', invocation: number) => child.stdin!.write(`${JSON.stringify({ signal: sig, seq: invocation })}\n`);

  return {
    pid: child.pid!,
    startSeconds,
    alive: () => !gone,
    async invoke(request, o, hooks) {
      if (busy) throw new Error('a warm instance serves one invocation at a time');
      if (gone) throw new WarmInstanceFailed({ code: 'instance_lost', message: 'The warm instance is gone.' });
      busy = true;
      seq += 1;
      const staging = { host: path.join(scratch, `inputs-${seq}`), inside: path.join(cmd.paths.scratch, `inputs-${seq}`) };
      let body: Record<string, unknown>;
      try {
        body = typeof request === 'function' ? await request(staging) : request;
      } catch (err) {
        busy = false;
        await rm(staging.host, { recursive: true, force: true }).catch(() => undefined);
        throw err;
      }
      const t0 = Date.now();
      const limits = o.limits ?? DEFAULT_STREAM_LIMITS;
      let stop: LabError | null = null;
      let cancelled = false;
      const mine = seq;
      const exitCode = new Promise<number | null>((resolve) => exits.set(mine, resolve));
      let killLater: NodeJS.Timeout | undefined;
      const halt = (why: LabError | 'cancelled') => {
        if (stop || cancelled) return;
        if (why === 'cancelled') cancelled = true;
        else stop = why;
        // A stopped or hung lab cannot act on SIGTERM.
        if (why !== 'cancelled' && why.code === 'lab_unresponsive') send('KILL', mine);
        send('TERM', mine);
        killLater = setTimeout(() => send('KILL', mine), 2000);
      };
      const onAbort = () => halt('cancelled');
      o.signal?.addEventListener('abort', onAbort);
      if (o.signal?.aborted) onAbort();
      const wall = setTimeout(() => halt({ code: 'timed_out', message: o.timedOut ?? `The invocation exceeded its ${o.wallSeconds} s.` }), o.wallSeconds * 1000);
      let logBytes = 0;
      onLog = (stream, line) => {
        logBytes += line.length + 1;
        if (logBytes > limits.logBytes) halt({ code: 'output_limit_exceeded', message: `The lab wrote more than ${limits.logBytes} bytes to stdout and stderr.` });
        else if (!stop) hooks.onLog?.(stream, line);
      };
      const tailFrom = stderrTail.length;
      let unwatch: () => void = () => undefined;
      try {
        const socket = net.connect(path.join(scratch, SOCKET));
        socket.on('error', () => undefined);
        if (o.watch) {
          let lastHeard = Date.now();
          socket.on('data', () => { lastHeard = Date.now(); });
          unwatch = watchSandbox(child.pid!, {
            memoryBytes: o.watch.memoryBytes, stallMs: o.watch.stallSeconds === null ? null : o.watch.stallSeconds * 1000,
            lastHeard: () => lastHeard, onAlive: hooks.onAlive, halt,
          });
        }
        socket.write(`${JSON.stringify({ ...body, seq: mine })}\n`);
        // The forked child, as the worker sees it: its own process group, as a cold run's is.
        // It waits for a byte from here before it goes on, so it is still there to be found.
        const onHello = async (msg: Record<string, unknown>) => {
          const inner = Number(msg.pid);
          const pid = cmd.unsafe ? inner : hostPidOf(child.pid!, inner);
          socket.write('\n');
          if (pid !== null) hooks.onStart?.(pid);
        };
        const read = await readProtocol(socket, limits, () => Boolean(stop || cancelled), halt, { onMessage: hooks.onMessage, onHello });
        socket.destroy();
        if (read.hello) await endLingering(exitCode, read, () => send('KILL', mine), halt);
        // An instance that died under it gives its own exit (128 + the signal that ended its sandbox).
        // Without a hello there may be no child (the instance refused the connection): its exit is not awaited long.
        const exit = read.hello ? await exitCode : await Promise.race([exitCode, new Promise<null>((r) => setTimeout(() => r(null), 2000).unref())]);
        const code = exit ?? (gone ? goneWith : null);
        if (gone && !stop && !cancelled && !read.result) {
          const how = signalError(goneWith)?.message.replace(/^The lab was/, 'it was') ?? `it exited with ${goneWith}`;
          stop = { code: 'instance_lost', message: `The warm instance serving it died during it (${how}); another one is started.` };
        }
        return { error: stop, reported: read.reported, exitCode: code, result: read.result, truncated: read.truncated, stderrTail: stderrTail.slice(tailFrom), wallSeconds: (Date.now() - t0) / 1000, cancelled };
      } finally {
        unwatch();
        exits.delete(mine);
        clearTimeout(wall);
        clearTimeout(killLater);
        o.signal?.removeEventListener('abort', onAbort);
        onLog = undefined;
        busy = false;
        // What this invocation left in the scratch directory, and what it was given, go with it.
        await Promise.all([`invocation-${seq}`, `inputs-${seq}`].map((d) => rm(path.join(scratch, d), { recursive: true, force: true }).catch(() => undefined)));
      }
    },
    async close() {
      if (gone) return;
      killGroup('SIGKILL');
      await exited;
    },
  };
}
