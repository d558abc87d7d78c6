import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Replica, Stack } from '../../deploy/local/stack.ts';
import type { DependencyName } from '../../deploy/local/dependencies.ts';

/** One fault the soak injects, and the window it lasted (from injection until the stack served again). */
export interface Fault {
  name: string;
  /** Seconds after the soak began that it is planned for. */
  plannedAt: number;
  inject: (stack: Stack) => Promise<void>;
  startedAt?: number;
  endedAt?: number;
  error?: string;
}

/** A process and every process under it (Postgres's backends, say), from /proc. */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent is the 4th field, after the command in parentheses (which may hold spaces).
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const all: number[] = [];
  for (const queue = [root]; queue.length;) {
    const pid = queue.shift()!;
    all.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return all;
}

function signalTree(pid: number, signal: NodeJS.Signals): void {
  for (const p of processTree(pid)) {
    try {
      process.kill(p, signal);
    } catch {
      // ended meanwhile
    }
  }
}

/** Replicas a fault is replacing now: their exit is planned, not a crash. */
const replacing = new Map<Replica, Promise<void>>();

/** Stops a replica with `signal` and starts it again, ready, as its Deployment would (a new pod). */
async function replace(r: Replica, signal: NodeJS.Signals): Promise<void> {
  const done = (async () => {
    r.proc.child.kill(signal);
    await r.proc.exited;
    await r.restart();
  })();
  replacing.set(r, done);
  try {
    await done;
  } finally {
    replacing.delete(r);
  }
}

/** kill -9, then started again. */
const killReplica = (r: Replica) => replace(r, 'SIGKILL');

/** Each replica in turn stopped gracefully (SIGTERM drains) and replaced, ready, before the next: a rollout. */
async function rollingRestart(stack: Stack): Promise<void> {
  for (const r of [...stack.apis, ...stack.workers]) await replace(r, 'SIGTERM');
}

/** A replica that ended when no fault stopped it. */
export interface Crash {
  name: string;
  exit: number | string;
  /** Milliseconds since the epoch. */
  at: number;
}

/** Kubernetes' crash-loop back-off, scaled to a soak: the wait doubles from 1 s up to 30 s, and resets after a minute up. */
const BACKOFF_FIRST_MS = 1000;
const BACKOFF_MAX_MS = 30_000;
const STABLE_MS = 60_000;

/**
 * Watches every api and worker replica for an end no fault caused (a crash: an uncaught
 * error, say) and starts it again, as Kubernetes restarts a crashed pod (after a back-off
 * that grows while it keeps crashing), so the soak goes on and its audit still counts what
 * the rest of the service did. Every crash fails the soak.
 */
export function watchCrashes(stack: Stack, say: (line: string) => void): { crashes: Crash[]; stop(): void } {
  const crashes: Crash[] = [];
  let stopped = false;
  for (const r of [...stack.apis, ...stack.workers]) {
    void (async () => {
      let backoff = BACKOFF_FIRST_MS;
      let since = Date.now();
      while (!stopped) {
        const exit = await r.proc.exited;
        if (stopped) return;
        const planned = replacing.get(r);
        if (planned) {
          await planned.catch(() => undefined);
          since = Date.now();
          continue;
        }
        if (Date.now() - since >= STABLE_MS) backoff = BACKOFF_FIRST_MS;
        crashes.push({ name: r.name, exit, at: Date.now() });
        say(`crash  ${r.name} ended on its own (${exit}); its last lines are in stack.log; starting it again in ${backoff / 1000} s`);
        await sleep(backoff);
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
        if (stopped) return;
        since = Date.now();
        await r.restart().catch((err: Error) => say(`crash  ${r.name} did not start again: ${err.message}`));
      }
    })();
  }
  return { crashes, stop: () => { stopped = true; } };
}

function dependency(stack: Stack, name: DependencyName) {
  const d = stack.dependencies[name];
  if (!d) throw new Error(`this stack cannot take ${name} down (it is not one the stack runs)`);
  return d;
}

/** Stopped for `seconds`, then started again and waited for. */
async function down(stack: Stack, name: DependencyName, seconds: number): Promise<void> {
  const d = dependency(stack, name);
  await d.stop();
  await sleep(seconds * 1000);
  await d.start();
}

/** Frozen for `seconds` (SIGSTOP of the server and everything under it): connections open, nothing answered. */
async function paused(stack: Stack, name: DependencyName, seconds: number): Promise<void> {
  const pid = dependency(stack, name).process().child.pid!;
  signalTree(pid, 'SIGSTOP');
  try {
    await sleep(seconds * 1000);
  } finally {
    signalTree(pid, 'SIGCONT');
  }
}

export interface ScheduleOptions {
  /** Seconds of steady traffic before the first fault and after the last. */
  quietSeconds: number;
  /** The soak's length: faults are spread over it. */
  seconds: number;
  workerKills: number;
  apiKills: number;
  outageSeconds: number;
  pauseSeconds: number;
}

/** The full soak's faults (issue 31) and the short one CI runs: one of each kind, 10-second outages. */
export const FULL: Omit<ScheduleOptions, 'seconds' | 'quietSeconds'> = { workerKills: 10, apiKills: 5, outageSeconds: 60, pauseSeconds: 30 };
export const SHORT: Omit<ScheduleOptions, 'seconds' | 'quietSeconds'> = { workerKills: 1, apiKills: 1, outageSeconds: 10, pauseSeconds: 10 };

/**
 * The faults in the order they happen, planned evenly over the soak: kills interleaved
 * (worker, api) first, then the rolling restart, then each dependency down and paused.
 * A fault starts when both its planned time has come and the one before it has ended.
 */
export function schedule(o: ScheduleOptions): Fault[] {
  // Worker and api kills interleaved, each kind spread evenly through the kills.
  const kills = [
    ...Array.from({ length: o.workerKills }, (_, i) => ({ at: (i + 0.5) / o.workerKills, name: `kill -9 worker-${(i % 2) + 1}`, inject: (s: Stack) => killReplica(s.workers[i % s.workers.length]!) })),
    ...Array.from({ length: o.apiKills }, (_, i) => ({ at: (i + 0.5) / o.apiKills, name: `kill -9 api-${(i % 2) + 1}`, inject: (s: Stack) => killReplica(s.apis[i % s.apis.length]!) })),
  ].sort((a, b) => a.at - b.at);
  const kinds: Array<Omit<Fault, 'plannedAt'>> = kills.map(({ name, inject }) => ({ name, inject }));
  kinds.push({ name: 'rolling restart (apis, workers)', inject: rollingRestart });
  for (const dep of ['postgres', 'object_store', 'temporal'] as const) {
    kinds.push({ name: `${dep} down ${o.outageSeconds} s`, inject: (s) => down(s, dep, o.outageSeconds) });
    kinds.push({ name: `${dep} paused ${o.pauseSeconds} s`, inject: (s) => paused(s, dep, o.pauseSeconds) });
  }
  const span = Math.max(0, o.seconds - 2 * o.quietSeconds);
  return kinds.map((k, i) => ({ ...k, plannedAt: o.quietSeconds + (span * i) / kinds.length }));
}

/** Runs the schedule against the stack, timing each fault; a fault that throws is recorded, and the rest still run. */
export async function inject(stack: Stack, faults: Fault[], startedAt: number, say: (line: string) => void): Promise<void> {
  for (const f of faults) {
    const wait = startedAt + f.plannedAt * 1000 - Date.now();
    if (wait > 0) await sleep(wait);
    f.startedAt = Date.now();
    say(`fault  ${f.name} (t=${Math.round((f.startedAt - startedAt) / 1000)} s)`);
    try {
      await f.inject(stack);
    } catch (err) {
      f.error = (err as Error).message;
      say(`fault  ${f.name} failed: ${f.error}`);
    }
    f.endedAt = Date.now();
    say(`fault  ${f.name} over after ${((f.endedAt - f.startedAt) / 1000).toFixed(1)} s`);
  }
}
