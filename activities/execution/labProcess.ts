import type { MissingModule } from './missingModule.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { constants as os } from 'node:os';
import { watchSandbox } from './supervision.ts';
import { INFO_FD, isSandboxSetupFailure, SandboxUnavailable, type Sandbox, type SandboxedCommand, type SandboxPaths, type SandboxSpec } from './sandbox.ts';

/** What a lab process may send before it is stopped: every stream is bounded. */
export interface StreamLimits {
  /** Bytes of protocol messages (fd 3) in all. */
  protocolBytes: number;
  /** Longest single protocol message. */
  lineBytes: number;
  /** Bytes of the lab's own stdout plus stderr. */
  logBytes: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = { protocolBytes: 1 << 30, lineBytes: 8 << 20, logBytes: 16 << 20 };

export interface LabError {
  code: string; message: string;
  /** A module the lab's environment lacks, as the driver found it (./missingModule.ts teaches it). */
  missing_module?: MissingModule;
}

export interface LabProcessHooks {
  /** Each protocol message, in order; a returned promise is awaited before the next. */
  onMessage(msg: Record<string, unknown>): void | Promise<void>;
  /** Each line the lab wrote to stdout or stderr. */
  onLog?(stream: 'stdout' | 'stderr', line: string): void;
  /** The process started (its pid, for heartbeats and events). */
  onStart?(pid: number): void;
  /** Each second its liveness holds (see supervision.ts): the moment to heartbeat. */
  onAlive?(): void;
}

export interface LabProcessOutcome {
  /** Why it ended, when that was not its own doing: a stop we made, or the sandbox. */
  error: LabError | null;
  /** The driver's own `error` message, if it sent one. */
  reported: LabError | null;
  exitCode: number | null;
  /** The driver's `result` message. */
  result: { status: string; cpu_seconds: number } | null;
  /** The protocol ended inside a message: written by a process that was cut off or lied. */
  truncated: boolean;
  stderrTail: string[];
  wallSeconds: number;
  cancelled: boolean;
}

const SIGNAL_NAMES = Object.fromEntries(Object.entries(os.signals).map(([name, n]) => [n, name]));

/** A run error for an exit by signal (bubblewrap reports it as 128 + the signal's number). */
export function signalError(exitCode: number | null): LabError | null {
  if (exitCode === null || exitCode <= 128 || exitCode > 128 + 64) return null;
  const sig = exitCode - 128;
  const name = SIGNAL_NAMES[sig] ?? `signal ${sig}`;
  if (name === 'SIGXCPU') return { code: 'cpu_time_limit_exceeded', message: 'The lab used up its CPU time.' };
  if (name === 'SIGXFSZ') return { code: 'file_size_limit_exceeded', message: 'The lab wrote a file larger than its limit.' };
  return { code: 'lab_killed_by_signal', message: `The lab was killed by ${name}.` };
}

/**
 * Starts a sandboxed command in its own process group with stdin, stdout, stderr, the
 * protocol (fd 3) and bubblewrap's report (fd 4) as pipes; `exited` resolves with its
 * exit code (128 + the signal's number when killed). Gives the uid back when it cannot start.
 */
export function spawnSandboxed(cmd: SandboxedCommand): { child: ChildProcess; exited: Promise<number | null> } {
  let child: ChildProcess;
  let filter: number | undefined;
  try {
    filter = cmd.filter ? openSync(cmd.filter, 'r') : undefined;
    child = spawn(cmd.command, cmd.args, { cwd: cmd.unsafe ? cmd.paths.scratch : '/', detached: true, stdio: ['pipe', 'pipe', 'pipe', 'pipe', 'pipe', ...(filter === undefined ? [] : [filter])], env: cmd.env });
  } catch (err) {
    cmd.release();
    throw new SandboxUnavailable(`cannot start the sandbox: ${(err as Error).message}`);
  } finally {
    if (filter !== undefined) closeSync(filter);
  }
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code, sig) => resolve(code ?? (sig ? 128 + (os.signals[sig] ?? 0) : null)));
    child.once('error', () => resolve(null));
  });
  child.stdin!.on('error', () => undefined);
  return { child, exited };
}

/**
 * The pid, as the worker sees it, of the sandbox's init (bubblewrap's --info-fd report):
 * its root is the sandbox's own filesystem. Null if the sandbox ends without one (or runs
 * unsandboxed, without a report).
 */
export function sandboxInit(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    let info = '';
    const stream = child.stdio[INFO_FD] as Readable;
    stream.on('data', (chunk: Buffer) => {
      info += chunk.toString();
      const pid = /"child-pid"\s*:\s*(\d+)/.exec(info)?.[1];
      if (pid) resolve(Number(pid));
    }).on('error', () => resolve(null)).once('close', () => resolve(null));
  });
}

/**
 * Signals a sandboxed process's whole group. SIGKILL also kills the sandbox's init
 * (bubblewrap's --info-fd): a stop that lands while bubblewrap is still building the
 * sandbox can kill bubblewrap before its child has asked to die with it, and that child
 * has its own session; the init's death ends its whole PID namespace.
 */
export function groupKiller(child: ChildProcess, init = sandboxInit(child)): (sig: NodeJS.Signals) => void {
  let sandboxInit: number | null = null;
  let killed = false;
  const killInit = () => {
    if (sandboxInit !== null) try { process.kill(sandboxInit, 'SIGKILL'); } catch { /* already gone */ }
  };
  void init.then((pid) => {
    sandboxInit = pid;
    if (killed) killInit();
  });
  return (sig) => {
    try { process.kill(-child.pid!, sig); } catch { /* already gone */ }
    if (sig === 'SIGKILL') {
      killed = true;
      killInit();
    }
  };
}

/** What a run's ending past its wall time says. */
export const timedOutMessage = (wallSeconds: number) => `The run exceeded max_runtime_seconds (${wallSeconds}).`;

/**
 * Runs one sandboxed lab process to its end: writes `stdin`, reads its protocol messages
 * (fd 3) and its stdout/stderr as log lines, each bounded; stops it (SIGTERM to its
 * process group, SIGKILL 2 s later) on `signal` abort, past `wallSeconds`, or when a
 * stream passes its bound. Never throws for the lab's behaviour: the outcome says what
 * happened. Throws SandboxUnavailable when the sandbox cannot be made.
 */
export async function runLabProcess(
  sandbox: Sandbox, spec: SandboxSpec, stdin: string | ((paths: SandboxPaths) => string),
  opts: { wallSeconds: number; signal?: AbortSignal; limits?: StreamLimits; stallSeconds?: number },
  hooks: LabProcessHooks,
): Promise<LabProcessOutcome> {
  const limits = opts.limits ?? DEFAULT_STREAM_LIMITS;
  const cmd = await sandbox.command(spec);
  const started = Date.now();
  const { child, exited } = spawnSandboxed(cmd);
  child.stdin!.end(typeof stdin === 'function' ? stdin(cmd.paths) : stdin);
  if (child.pid) hooks.onStart?.(child.pid);

  let stop: LabError | null = null;
  let cancelled = false;
  const killGroup = groupKiller(child);
  const halt = (why: LabError | 'cancelled') => {
    if (stop || cancelled) return;
    if (why === 'cancelled') cancelled = true;
    else stop = why;
    // A stopped or hung lab cannot act on SIGTERM.
    if (why !== 'cancelled' && why.code === 'lab_unresponsive') killGroup('SIGKILL');
    killGroup('SIGTERM');
    setTimeout(() => killGroup('SIGKILL'), 2000).unref();
  };
  const onAbort = () => halt('cancelled');
  opts.signal?.addEventListener('abort', onAbort);
  if (opts.signal?.aborted) onAbort();
  const wall = setTimeout(() => halt({ code: 'timed_out', message: timedOutMessage(opts.wallSeconds) }), opts.wallSeconds * 1000);
  const protocol = child.stdio[3] as Readable;
  let lastHeard = Date.now();
  protocol.on('data', () => { lastHeard = Date.now(); });
  const unwatch = child.pid ? watchSandbox(child.pid, {
    memoryBytes: spec.limits.labMemoryBytes ?? null,
    stallMs: opts.stallSeconds ? opts.stallSeconds * 1000 : null,
    lastHeard: () => lastHeard,
    onAlive: hooks.onAlive,
    halt,
  }) : () => undefined;

  const stderrTail: string[] = [];
  let logBytes = 0;
  const overLog = (n: number) => {
    logBytes += n;
    if (logBytes > limits.logBytes) halt({ code: 'output_limit_exceeded', message: `The lab wrote more than ${limits.logBytes} bytes to stdout and stderr.` });
  };
  const readLog = (stream: 'stdout' | 'stderr', input: Readable) => {
    input.on('data', (chunk: Buffer) => overLog(chunk.length));
    const lines = createInterface({ input, crlfDelay: Infinity });
    lines.on('error', () => undefined); // the process's end reports what went wrong
    input.once('close', () => lines.close());
    lines.on('line', (l) => {
      if (stream === 'stderr') {
        stderrTail.push(l.slice(0, 2000));
        if (stderrTail.length > 40) stderrTail.shift();
      }
      if (!stop) hooks.onLog?.(stream, l);
    });
    return new Promise<void>((resolve) => lines.once('close', resolve));
  };
  const logsDone = Promise.all([readLog('stdout', child.stdout!), readLog('stderr', child.stderr!)]);
  const protocolDone = readProtocol(protocol, limits, () => Boolean(stop || cancelled), halt, hooks);

  // No await here outlives the process. Its protocol closing first (a driver that closed
  // it early, or a process cut off) gives it a moment to exit and is then ended; its exit
  // gives the streams a moment to drain and then they are closed.
  const first = await Promise.race([protocolDone.then(() => 'protocol' as const), exited.then(() => 'exit' as const)]);
  if (first === 'protocol') await endLingering(exited, await protocolDone, () => killGroup('SIGKILL'), halt);
  const exitCode = await exited;
  unwatch();
  if (!(await settlesWithin(Promise.all([protocolDone, logsDone]), EXIT_GRACE_MS))) {
    for (const s of [protocol, child.stdout!, child.stderr!]) s.destroy();
  }
  const { hello, reported, result, truncated } = await protocolDone;
  await logsDone;
  clearTimeout(wall);
  opts.signal?.removeEventListener('abort', onAbort);
  cmd.release();
  const wallSeconds = (Date.now() - started) / 1000;
  let error: LabError | null = stop;
  if (!error && !cancelled && !hello) {
    const firstLine = stderrTail.find((l) => l.trim()) ?? '';
    if (!cmd.unsafe && (isSandboxSetupFailure(firstLine) || exitCode === null)) {
      error = { code: 'sandbox_unavailable', message: `The sandbox could not be set up: ${firstLine || 'the sandbox did not start'}` };
    }
  }
  return { error, reported, exitCode, result, truncated, stderrTail, wallSeconds, cancelled };
}

/** How long a lab's process and streams get to finish on their own once one of them has. */
const EXIT_GRACE_MS = 2000;

/**
 * A lab whose protocol stream has ended gets a moment to exit; one that lingers is ended:
 * killed when it said how it ended, else stopped as a protocol error.
 */
export async function endLingering(
  exited: Promise<unknown>, read: { result: unknown; reported: unknown }, kill: () => void, halt: (why: LabError) => void,
): Promise<void> {
  if (await settlesWithin(exited, EXIT_GRACE_MS)) return;
  if (read.result || read.reported) kill();
  else halt({ code: 'protocol_error', message: 'The lab closed its protocol stream before reporting a result; it was ended.' });
}

/** Whether `p` settles within `ms`. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), ms); });
  try {
    return await Promise.race([p.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads one lab's protocol (JSON lines) to its end: `hello`, the driver's own `error`
 * and its `result` are kept, every other message goes to `onMessage` in order. Bytes
 * are counted as they arrive, so neither a flood nor one endless line is ever held
 * whole: past the bounds the stream is destroyed and `halt` says why. Messages that
 * arrive once the lab is being stopped (`stopped()`) are dropped.
 */
export async function readProtocol(
  protocol: Readable, limits: StreamLimits, stopped: () => boolean, halt: (why: LabError) => void,
  hooks: Pick<LabProcessHooks, 'onMessage'> & { onHello?(msg: Record<string, unknown>): void | Promise<void> },
): Promise<{ hello: boolean; reported: LabError | null; result: LabProcessOutcome['result']; truncated: boolean }> {
  let protocolBytes = 0;
  let sinceNewline = 0;
  protocol.on('data', (chunk: Buffer) => {
    protocolBytes += chunk.length;
    const nl = chunk.lastIndexOf(10);
    sinceNewline = nl < 0 ? sinceNewline + chunk.length : chunk.length - nl - 1;
    if (protocolBytes > limits.protocolBytes || sinceNewline > limits.lineBytes) {
      halt({ code: 'output_limit_exceeded', message: `The lab's results passed their bound (${limits.protocolBytes} bytes, ${limits.lineBytes} per message).` });
      protocol.destroy();
    }
  });
  // Known before readline hands over the stream's last bytes: a line without its newline
  // is a message cut off, not one the lab meant.
  let ended = false;
  protocol.once('end', () => { ended = true; });
  let hello = false;
  let reported: LabError | null = null;
  let result: LabProcessOutcome['result'] = null;
  let truncated = false;
  const lines = createInterface({ input: protocol, crlfDelay: Infinity });
  // A stream destroyed mid-line (a bound breached) ends without 'end', and readline would
  // wait for it forever: its close ends the lines too.
  protocol.once('close', () => lines.close());
  try {
    for await (const line of lines) {
      if (stopped()) continue;
      let msg: Record<string, unknown> | null = null;
      try {
        msg = JSON.parse(line);
      } catch {
        // handled below
      }
      if (!msg || typeof msg !== 'object' || Array.isArray(msg)) {
        if (ended && sinceNewline > 0) truncated = true;
        else halt({ code: 'protocol_error', message: `The lab wrote something other than a protocol message on its protocol stream: ${JSON.stringify(line.slice(0, 200))}.` });
        continue;
      }
      if (msg.type === 'hello') {
        hello = true;
        await hooks.onHello?.(msg);
      }
      else if (msg.type === 'error' && !reported) {
        reported = { code: String(msg.code ?? 'lab_error').slice(0, 64), message: String(msg.message ?? '').slice(0, 4000) };
        const missing = msg.missing_module as MissingModule | undefined;
        if (missing && typeof missing === 'object' && typeof missing.module === 'string') reported.missing_module = missing;
      }
      else if (msg.type === 'result') result = { status: String(msg.status), cpu_seconds: Number(msg.cpu_seconds) || 0 };
      else await hooks.onMessage(msg);
    }
  } catch {
    // a destroyed stream: the stop reason says why
  }
  return { hello, reported, result, truncated };
}

/**
 * The ending of a run or an invocation whose time, set by a spend cap, ran out: stopped
 * there, so cancelled with `spend_cap_reached` and charged up to the cap.
 */
export function spendCapReached(what: string, capMicros: number, seconds: number): LabError {
  return { code: 'spend_cap_reached', message: `The ${what} reached its spend cap of $${(capMicros / 1e6).toFixed(6)} after ${seconds} s: it was stopped and is charged up to the cap.` };
}

/**
 * The run error of an outcome that did not complete, most precise first: our stop (time,
 * bounds, sandbox), the driver's own report (a lab exception or a limit it met), an exit
 * by signal, then the exit code with the lab's last stderr lines.
 */
export function outcomeError(o: LabProcessOutcome): LabError | null {
  if (o.error) return o.error;
  if (o.reported) return o.reported;
  if (o.exitCode === 0 && o.result) return null;
  const signalled = signalError(o.exitCode);
  if (signalled) return signalled;
  if (o.truncated) return { code: 'protocol_error', message: `The lab's last protocol message was cut off (it exited with ${o.exitCode}).${stderrLines(o)}` };
  if (o.exitCode === 0) return { code: 'protocol_error', message: `The lab exited without reporting a result.${stderrLines(o)}` };
  return { code: 'lab_exited', message: `The lab exited with code ${o.exitCode}.${stderrLines(o)}` };
}

const stderrLines = (o: LabProcessOutcome) => (o.stderrTail.length ? ` Its last stderr lines:\n${o.stderrTail.slice(-5).join('\n')}` : '');
