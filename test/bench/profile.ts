import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Stack } from '../../deploy/local/stack.ts';

/**
 * Where a benchmark's CPU goes, inside each process: V8's CPU profiles of the api and
 * worker (`--cpu-prof`, written when they exit) and Postgres's pg_stat_statements.
 * Only the measured window counts: V8 stamps samples with the monotonic clock that
 * `process.hrtime` reads, so start-up and warm-up are left out.
 */
export function profilingSettings(dir: string): { serviceNodeArgs: string[]; postgresSettings: string[] } {
  return {
    serviceNodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
    postgresSettings: ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all'],
  };
}

/** Each stack process's name by pid, to name the profiles its processes write. */
export const processNames = (stack: Stack): Map<number, string> => new Map(stack.supervisor.processes.map((p) => [p.child.pid!, p.name]));

/** Now on the clock of V8's profile samples (µs). */
export const monotonicMicros = (): number => Number(process.hrtime.bigint() / 1000n);

export async function resetStatements(db: Knex): Promise<void> {
  await db.raw('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  await db.raw('SELECT pg_stat_statements_reset()');
}

/**
 * What Postgres did since the reset, per unit of work: the statements clients sent (each
 * a round trip) with their calls, then the statements that took most of its time at any
 * depth (a function's own statements included).
 */
export async function statementReport(db: Knex, units: number, top = 20): Promise<string> {
  const { rows } = await db.raw(`
    SELECT toplevel, calls, total_exec_time + total_plan_time AS ms, regexp_replace(query, '\\s+', ' ', 'g') AS query
      FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat_statements%' ORDER BY ms DESC`);
  const all = rows as Array<{ toplevel: boolean; calls: string; ms: number; query: string }>;
  const sent = all.filter((r) => r.toplevel).sort((a, b) => Number(b.calls) - Number(a.calls));
  const line = (r: { calls: string; ms: number; query: string }) => `  ${(Number(r.calls) / units).toFixed(2).padStart(6)} calls ${(r.ms / units).toFixed(3).padStart(7)} ms  ${r.query.slice(0, 150)}`;
  const per = (rs: typeof all, f: (r: (typeof all)[number]) => number) => (rs.reduce((s, r) => s + f(r), 0) / units);
  return [
    `Postgres, per unit: ${per(sent, (r) => Number(r.calls)).toFixed(1)} statements sent, ${per(all, (r) => Number(r.calls)).toFixed(1)} run at any depth, ${per(sent, (r) => r.ms).toFixed(2)} ms of execution (lock waits included)`,
    'statements sent:', ...sent.filter((r) => Number(r.calls) / units >= 0.01).map(line),
    'most time at any depth:', ...all.filter((r) => !r.toplevel).slice(0, top).map(line),
  ].join('\n');
}

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface CpuProfile { nodes: ProfileNode[]; startTime: number; samples: number[]; timeDeltas: number[] }

/** Where a frame's code comes from: a package, Node itself, or a file of ours. */
function origin(url: string): string {
  if (!url) return '(native)';
  if (url.startsWith('node:')) return 'node';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const ours = /\/(api|workflows|activities|storage|kernel|deploy)\/(.+)$/.exec(url);
  return ours ? `${ours[1]}/${ours[2]}` : path.basename(url);
}

/**
 * Self time per function and per origin, within [from, to] (µs, monotonic), of every
 * profile in `dir`, named by the process whose pid wrote it.
 */
export async function cpuProfileReport(dir: string, names: Map<number, string>, window: { from: number; to: number }, units: number, top = 15): Promise<string> {
  const out: string[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile')).sort()) {
    const pid = Number(file.split('.')[3]);
    const prof = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as CpuProfile;
    const byId = new Map(prof.nodes.map((n) => [n.id, n]));
    const fn = new Map<string, number>();
    const from = new Map<string, number>();
    let t = prof.startTime;
    let total = 0;
    for (let i = 0; i < prof.samples.length; i++) {
      t += prof.timeDeltas[i]!;
      if (t < window.from || t > window.to) continue;
      const weight = prof.timeDeltas[i + 1] ?? 0;
      const { callFrame: f } = byId.get(prof.samples[i]!)!;
      if (f.functionName === '(idle)') continue;
      total += weight;
      const key = `${f.functionName || '(anonymous)'} ${origin(f.url)}${f.url ? `:${f.lineNumber + 1}` : ''}`;
      fn.set(key, (fn.get(key) ?? 0) + weight);
      const o = f.functionName.startsWith('(') ? f.functionName : origin(f.url);
      from.set(o, (from.get(o) ?? 0) + weight);
    }
    if (!total) continue;
    const ms = (us: number) => (us / 1000 / units).toFixed(3).padStart(7);
    const ranked = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
    out.push(`${names.get(pid) ?? `pid ${pid}`}: ${ms(total).trim()} ms of CPU per unit in the window (samples, idle excluded)`);
    out.push('  by origin:', ...ranked(from).map(([k, v]) => `    ${ms(v)} ms  ${k}`));
    out.push('  by function (self):', ...ranked(fn).map(([k, v]) => `    ${ms(v)} ms  ${k}`));
  }
  return out.join('\n');
}
