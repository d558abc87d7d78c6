import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { LabError } from './labProcess.ts';

/**
 * What the worker watches of a sandbox while its lab runs, from /proc: the processes
 * below the sandbox's outer process (its bubblewrap), their memory and CPU, and whether
 * one is stopped. A lab's processes cannot hide from it: they are all descendants, and
 * the PID namespace dies with the sandbox's init.
 */
export interface TreeSample {
  pids: number[];
  /** Proportional set size summed over the processes (shared pages divided among them). */
  pssBytes: number;
  /** User plus system CPU time of the processes, in clock ticks. */
  cpuTicks: number;
  /** A process of the tree is stopped (SIGSTOP) or traced. */
  stopped: boolean;
}

/**
 * What a /proc file says, or '' once its process is gone. /proc is read synchronously: its
 * files are made in memory as they are read, and a hop to the thread pool and back for
 * each (dozens for a run's start) costs more than the reads.
 */
function procFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** The process `root` and all its descendants (every thread's children). */
export function processTree(root: number): number[] {
  const seen: number[] = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.shift()!;
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // gone
    }
    seen.push(pid);
    for (const tid of tasks) {
      for (const c of procFile(`/proc/${pid}/task/${tid}/children`).split(' ')) if (c.trim()) queue.push(Number(c));
    }
  }
  return seen;
}

/**
 * The pid, as the worker sees it, of the process below `root` whose pid in its own PID
 * namespace is `inner` (the innermost of its NSpid), or null when none is.
 */
export function hostPidOf(root: number, inner: number): number | null {
  for (const pid of processTree(root)) {
    const ns = /^NSpid:\s+(.+)$/m.exec(procFile(`/proc/${pid}/status`))?.[1]?.trim().split(/\s+/);
    if (ns && Number(ns[ns.length - 1]) === inner) return pid;
  }
  return null;
}

/**
 * One sample of the tree below `root`; memory is read only when asked, off the event loop
 * (its walk of each process's page tables takes as long as the process is large).
 */
export async function sampleTree(root: number, withMemory: boolean): Promise<TreeSample> {
  const pids = processTree(root);
  let cpuTicks = 0;
  let stopped = false;
  for (const pid of pids) {
    const stat = procFile(`/proc/${pid}/stat`);
    // Fields after the command name (which may hold spaces and parentheses).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'T' || fields[0] === 't') stopped = true;
    cpuTicks += (Number(fields[11]) || 0) + (Number(fields[12]) || 0);
  }
  const pss = withMemory ? await Promise.all(pids.map(async (pid) => {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
    return Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
  })) : [];
  return { pids, pssBytes: pss.reduce((a, b) => a + b, 0), cpuTicks, stopped };
}

export interface WatchOptions {
  /** The whole lab's memory bound, across its processes; null: not watched. */
  memoryBytes: number | null;
  /**
   * A lab is unresponsive when it has sent nothing for this long and, meanwhile, it has
   * been stopped or used no CPU; null: not watched (a program without heartbeats).
   */
  stallMs: number | null;
  /** When the lab last sent anything (protocol bytes), as Date.now(). */
  lastHeard(): number;
  /** Each second the lab is alive: its processes exist, none is stopped, it is not stalled. */
  onAlive?(): void;
  /** Ends the lab: a bound was breached. */
  halt(why: LabError): void;
}

/** How often memory is summed (the "at least ten times a second"). */
const MEMORY_EVERY_MS = 100;
const LIVENESS_EVERY_MS = 1000;

/**
 * Watches a running sandbox until the returned function is called: its memory across
 * processes (ten times a second) and its liveness (each second). Past a bound it calls
 * `halt` once and stops watching.
 */
export function watchSandbox(root: number, opts: WatchOptions): () => void {
  let done = false;
  let timer: NodeJS.Timeout | undefined;
  let lastCpu = -1;
  let lastCpuChange = Date.now();
  let lastLiveness = 0;
  const halt = (why: LabError) => {
    done = true;
    opts.halt(why);
  };
  const tick = async () => {
    const now = Date.now();
    const liveness = now - lastLiveness >= LIVENESS_EVERY_MS;
    const s = await sampleTree(root, opts.memoryBytes !== null);
    if (done || !s.pids.length) return;
    if (opts.memoryBytes !== null && s.pssBytes > opts.memoryBytes) {
      halt({ code: 'memory_limit_exceeded', message: `The lab's processes together used ${mib(s.pssBytes)} MiB of memory, over the compute profile's ${mib(opts.memoryBytes)} MiB.` });
      return;
    }
    if (s.cpuTicks !== lastCpu) {
      lastCpu = s.cpuTicks;
      lastCpuChange = now;
    }
    if (!liveness) return;
    lastLiveness = now;
    if (opts.stallMs !== null && now - opts.lastHeard() > opts.stallMs && (s.stopped || now - lastCpuChange > opts.stallMs)) {
      const why = s.stopped ? 'it was stopped' : 'it used no CPU';
      halt({ code: 'lab_unresponsive', message: `The lab sent nothing for ${Math.round((now - opts.lastHeard()) / 1000)} s (its driver's heartbeat is every 2 s) and ${why}: it was ended.` });
      return;
    }
    if (!s.stopped) opts.onAlive?.();
  };
  const loop = () => {
    timer = setTimeout(() => {
      void tick().catch(() => undefined).finally(() => {
        if (!done) loop();
      });
    }, opts.memoryBytes !== null ? MEMORY_EVERY_MS : Math.min(MEMORY_EVERY_MS * 5, LIVENESS_EVERY_MS));
  };
  loop();
  return () => {
    done = true;
    clearTimeout(timer);
  };
}

const mib = (bytes: number) => Math.round(bytes / (1 << 20));

/** Heartbeats while `work` is pending (a parent starting, an environment building): the run is alive meanwhile. */
export async function whileAlive<T>(beat: () => void, work: Promise<T>): Promise<T> {
  const timer = setInterval(beat, 5000);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}
