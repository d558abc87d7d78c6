import { quantile } from 'simple-statistics';
import type { Attempt, Recorder } from './client.ts';
import type { Fault } from './faults.ts';

/** How long before and after a fault its latency is compared. */
const WINDOW_MS = 10_000;

const pct = (xs: number[], p: number) => (xs.length ? `${Math.round(quantile(xs, p))}` : '-');

function table(head: string[], rows: Array<Array<string | number>>): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => `  ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')}`;
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...cells.slice(1).map(line)].join('\n');
}

/** Requests by outcome: 2xx, 4xx by code, 503 with Retry-After, cut, no answer, anything else; with the operations each came from. */
export function outcomesTable(rec: Recorder): string {
  const byOutcome = new Map<string, Map<string, number>>();
  for (const a of rec.attempts) {
    const ops = byOutcome.get(a.outcome) ?? new Map<string, number>();
    ops.set(a.op, (ops.get(a.op) ?? 0) + 1);
    byOutcome.set(a.outcome, ops);
  }
  const order = (k: string) => (k === '2xx' ? 0 : k.startsWith('4xx') ? 1 : k.startsWith('503') ? 2 : k === 'cut' ? 3 : 4);
  const total = (ops: Map<string, number>) => [...ops.values()].reduce((x, y) => x + y, 0);
  const rows = [...byOutcome].sort(([a], [b]) => order(a) - order(b) || a.localeCompare(b)).map(([k, ops]) => [k, total(ops),
    k === '2xx' ? `${ops.size} operations` : [...ops].sort((x, y) => y[1] - x[1]).slice(0, 4).map(([op, n]) => `${op} ${n}`).join(', ')]);
  return table(['outcome', 'requests', 'from'], [...rows, ['all', rec.attempts.length, '']]);
}

/** p50/p99 latency (ms) of successful requests before, during and after each fault, and what else was answered during it. */
export function latencyTable(rec: Recorder, faults: Fault[]): string {
  const ok = rec.attempts.filter((a) => a.outcome === '2xx');
  const within = (xs: Attempt[], from: number, to: number) => xs.filter((a) => a.at >= from && a.at < to).map((a) => a.ms);
  const rows = faults.filter((f) => f.startedAt).map((f) => {
    const [s, e] = [f.startedAt!, f.endedAt!];
    const before = within(ok, s - WINDOW_MS, s);
    const during = within(ok, s, e);
    const after = within(ok, e, e + WINDOW_MS);
    const notOk = rec.attempts.filter((a) => a.at >= s && a.at < e && a.outcome !== '2xx');
    return [f.name, `${((e - s) / 1000).toFixed(1)}`, `${pct(before, 0.5)}/${pct(before, 0.99)}`, `${pct(during, 0.5)}/${pct(during, 0.99)}`, `${pct(after, 0.5)}/${pct(after, 0.99)}`,
      notOk.length, notOk.filter((a) => a.outcome === 'cut').length];
  });
  const inFault = (a: Attempt) => faults.some((f) => f.startedAt && a.at >= f.startedAt && a.at < f.endedAt!);
  const outside = rec.attempts.filter((a) => a.outcome !== '2xx' && !inFault(a));
  rows.push(['(outside every fault)', '', '', '', '', outside.length, outside.filter((a) => a.outcome === 'cut').length]);
  return table(['fault', 'lasted s', 'before p50/p99', 'during p50/p99', 'after p50/p99', 'not 2xx during', 'of them cut'], rows);
}

/** One line per audited figure: what it is, its value, and whether it is a failure. */
export interface Check { what: string; value: number | string; fails: boolean }

export function auditTable(checks: Check[]): string {
  return table(['audit', 'value', ''], checks.map((c) => [c.what, c.value, c.fails ? 'FAIL' : 'ok']));
}
