import { readdirSync, readFileSync } from 'node:fs';
import type { Supervisor } from '../../deploy/local/processes.ts';

/**
 * CPU time by stack process, read from /proc, so a benchmark can say where its cycles
 * went. A process's time includes its whole live tree (Postgres backends, a child's
 * children) and the children it has already reaped (cutime/cstime).
 */
const TICK_MS = 10; // USER_HZ is 100 on Linux

type ProcTable = Map<number, { ppid: number; ticks: number; ownTicks: number; rssPages: number }>;

function procTable(): ProcTable {
  const table: ProcTable = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The command may contain spaces and parentheses: fields start after the last ')'.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(name), { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]), ownTicks: Number(f[11]) + Number(f[12]), rssPages: Number(f[21]) });
    } catch { /* exited while we read */ }
  }
  return table;
}

/** Each process's children, from one read of the table. */
function childrenOf(table: ProcTable): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const [pid, p] of table) {
    const list = out.get(p.ppid) ?? [];
    list.push(pid);
    out.set(p.ppid, list);
  }
  return out;
}

/** `root` and its live descendants. */
function treeOf(table: ProcTable, root: number, children = childrenOf(table)): number[] {
  const out: number[] = [];
  const todo = [root];
  while (todo.length) {
    const pid = todo.pop()!;
    out.push(pid);
    todo.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** The sum of `field` over `root` and its live descendants. */
const treeSum = (table: ProcTable, root: number, field: 'ticks' | 'rssPages', children = childrenOf(table)): number =>
  treeOf(table, root, children).reduce((sum, pid) => sum + (table.get(pid)?.[field] ?? 0), 0);
const treeMs = (table: ProcTable, root: number, children?: Map<number, number[]>) => treeSum(table, root, 'ticks', children) * TICK_MS;

/** Resident memory (MiB) of a process and its live descendants (4 KiB pages). */
export const treeRssMiB = (root: number, table = procTable()): number => (treeSum(table, root, 'rssPages') * 4096) / 2 ** 20;

/**
 * A process's proportional set size (KiB), a shared page split among its sharers, and its
 * parts: its own memory (anonymous), mapped files (its binary's pages among them) and
 * shared memory (Postgres's buffers: as large as configured, at most).
 */
function pssKiB(pid: number): { pss: number; anon: number; file: number; shmem: number } {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0);
    return { pss: field('Pss'), anon: field('Pss_Anon'), file: field('Pss_File'), shmem: field('Pss_Shmem') };
  } catch {
    return { pss: 0, anon: 0, file: 0, shmem: 0 }; // exited while we read
  }
}

/** Proportional memory (MiB) of a process tree, its parts, and each process of it (pid, total, own). */
export interface TreeMemory {
  mib: number; anonMib: number; fileMib: number; shmemMib: number;
  processes: Array<{ pid: number; mib: number; ownMib: number }>;
}

/**
 * Proportional memory of each supervised process with its tree: unlike resident memory,
 * pages shared within a tree (Postgres's shared buffers, in every backend) count once.
 */
export function pssByProcess(sup: Supervisor): Record<string, TreeMemory> {
  const table = procTable();
  const children = childrenOf(table);
  return Object.fromEntries(sup.processes.filter((p) => p.child.pid).map((p) => {
    const each = treeOf(table, p.child.pid!, children).map((pid) => ({ pid, ...pssKiB(pid) }));
    const mib = (part: 'pss' | 'anon' | 'file' | 'shmem') => each.reduce((sum, m) => sum + m[part], 0) / 1024;
    const processes = each.map((m) => ({ pid: m.pid, mib: m.pss / 1024, ownMib: m.anon / 1024 }));
    return [p.name, { mib: mib('pss'), anonMib: mib('anon'), fileMib: mib('file'), shmemMib: mib('shmem'), processes }];
  }));
}

/** The processes of a tree's sample, largest first by their own memory (Pss_Anon, MiB), each named by its command line. */
export function largestOf(tree: TreeMemory): Array<{ what: string; mib: number; ownMib: number }> {
  return tree.processes.map(({ pid, mib, ownMib }) => {
    let what = String(pid);
    try {
      what = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim().slice(0, 80);
    } catch { /* exited since */ }
    return { what, mib, ownMib };
  }).sort((a, b) => b.ownMib - a.ownMib);
}

export type CpuSample = Record<string, number>;

/** CPU milliseconds used so far by each supervised process (with its tree) and by this one. */
export function cpuSample(sup: Supervisor, extra: Record<string, number> = {}): CpuSample {
  const table = procTable();
  const children = childrenOf(table);
  const out: CpuSample = {};
  for (const p of sup.processes) {
    if (!p.child.pid) continue;
    out[p.name] = treeMs(table, p.child.pid, children);
    // The worker's own process apart from its sandboxes and warm parents: where a run's cost grows is told apart.
    if (p.name === 'worker') out['worker (node)'] = (table.get(p.child.pid)?.ownTicks ?? 0) * TICK_MS;
  }
  for (const [name, pid] of Object.entries(extra)) out[name] = treeMs(table, pid, children);
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
