import { readdirSync, readFileSync } from 'node:fs';
import type { Supervisor } from '../../deploy/local/processes.ts';

/**
 * CPU time by stack process, read from /proc, so a benchmark can say where its cycles
 * went. A process's time includes its whole live tree (Postgres backends, a child's
 * children) and the children it has already reaped (cutime/cstime).
 */
const TICK_MS = 10; // USER_HZ is 100 on Linux

type ProcTable = Map<number, { ppid: number; ticks: number; rssPages: number }>;

function procTable(): ProcTable {
  const table: ProcTable = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The command may contain spaces and parentheses: fields start after the last ')'.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(name), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]), rssPages: Number(f[21]) });
    } catch { /* exited while we read */ }
  }
  return table;
}

/** The sum of `field` over `root` and its live descendants. */
function treeSum(table: ProcTable, root: number, field: 'ticks' | 'rssPages'): number {
  let sum = 0;
  const todo = [root];
  while (todo.length) {
    const pid = todo.pop()!;
    sum += table.get(pid)?.[field] ?? 0;
    for (const [child, p] of table) if (p.ppid === pid) todo.push(child);
  }
  return sum;
}
const treeMs = (table: ProcTable, root: number) => treeSum(table, root, 'ticks') * TICK_MS;

/** Resident memory (MiB) of a process and its live descendants (4 KiB pages). */
export const treeRssMiB = (root: number, table = procTable()): number => (treeSum(table, root, 'rssPages') * 4096) / 2 ** 20;

/** `root` and its live descendants. */
function treeOf(table: ProcTable, root: number): number[] {
  const out: number[] = [];
  const todo = [root];
  while (todo.length) {
    const pid = todo.pop()!;
    out.push(pid);
    for (const [child, p] of table) if (p.ppid === pid) todo.push(child);
  }
  return out;
}

/** A process's proportional set size (KiB): its pages, a shared one split among its sharers. */
function pssKiB(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0; // exited while we read
  }
}

/**
 * Proportional memory (MiB) of each supervised process with its tree: unlike resident
 * memory, pages shared within a tree (Postgres's shared buffers, in every backend) count once.
 */
export function pssByProcess(sup: Supervisor): Record<string, number> {
  const table = procTable();
  return Object.fromEntries(sup.processes.filter((p) => p.child.pid).map((p) => [p.name, treeOf(table, p.child.pid!).reduce((sum, pid) => sum + pssKiB(pid), 0) / 1024]));
}

export type CpuSample = Record<string, number>;

/** CPU milliseconds used so far by each supervised process (with its tree) and by this one. */
export function cpuSample(sup: Supervisor, extra: Record<string, number> = {}): CpuSample {
  const table = procTable();
  const out: CpuSample = {};
  for (const p of sup.processes) if (p.child.pid) out[p.name] = treeMs(table, p.child.pid);
  for (const [name, pid] of Object.entries(extra)) out[name] = treeMs(table, pid);
  const self = process.cpuUsage();
  out.bench = (self.user + self.system) / 1000;
  return out;
}

/** "api 12.3 ms, worker 4.5 ms, ..." per unit of work between two samples, largest first. */
export function cpuPerUnit(before: CpuSample, after: CpuSample, units: number): string {
  return Object.keys(after)
    .map((k) => [k, (after[k]! - (before[k] ?? 0)) / units] as const)
    .sort((a, b) => b[1] - a[1])
    .map(([k, ms]) => `${k} ${ms.toFixed(1)}`)
    .join(', ');
}
