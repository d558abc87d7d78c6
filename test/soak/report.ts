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

/** Requests by outcome: 2xx, 4xx by code, 503 with Retry-After, cut, no answer, anything else. */
export function outcomesTable(rec: Recorder): string {
  const counts = new Map<string, number>();
  for (const a of rec.attempts) counts.set(a.outcome, (counts.get(a.outcome) ?? 0) + 1);
  const order = (k: string) => (k === '2xx' ? 0 : k.startsWith('4xx') ? 1 : k.startsWith('503') ? 2 : k === 'cut' ? 3 : 4);
  const rows = [...counts].sort(([a], [b]) => order(a) - order(b) || a.localeCompare(b)).map(([k, n]) => [k, n]);
  return table(['outcome', 'requests'], [...rows, ['all', rec.attempts.length]]);
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
    const notOk = rec.attempts.filter((a) => a.at >= s && a.at < e && a.outcome !== '2xx').length;
    return [f.name, `${((e - s) / 1000).toFixed(1)}`, `${pct(before, 0.5)}/${pct(before, 0.99)}`, `${pct(during, 0.5)}/${pct(during, 0.99)}`, `${pct(after, 0.5)}/${pct(after, 0.99)}`, notOk];
  });
  return table(['fault', 'lasted s', 'before p50/p99', 'during p50/p99', 'after p50/p99', 'not 2xx during'], rows);
}

/** One line per audited figure: what it is, its value, and whether it is a failure. */
export interface Check { what: string; value: number | string; fails: boolean }

export function auditTable(checks: Check[]): string {
  return table(['audit', 'value', ''], checks.map((c) => [c.what, c.value, c.fails ? 'FAIL' : 'ok']));
}
