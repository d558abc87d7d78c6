import { ApiError, HostingEnded, RunFailed, RunTimeout, SilicoError } from '../errors.ts';

/** The CLI's exit codes. */
export const EXIT = { ok: 0, runFailed: 1, usage: 2, api: 3 } as const;

/** A usage mistake the CLI itself catches (exit 2). */
export class UsageError extends Error {}

/** Everything a command prints goes through here: JSON for scripts, text for people. */
export interface Out {
  json: boolean;
  /** The command's result: as JSON with --json, else as the given text. */
  result(value: unknown, text: () => string): void;
  /** Progress and commentary for people (stderr; silent with --json). */
  note(text: string): void;
}

export function makeOut(json: boolean): Out {
  return {
    json,
    result(value, text) {
      process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${text()}\n`);
    },
    note(text) {
      if (!json) process.stderr.write(`${text}\n`);
    },
  };
}

/** Prints a failure the way the mode asks and returns the exit code it means. */
export function reportFailure(err: unknown, out: Out): number {
  if (err instanceof UsageError) {
    process.stderr.write(`silico: ${err.message}\n`);
    return EXIT.usage;
  }
  if (err instanceof RunFailed) {
    if (out.json) out.result({ run: err.run }, () => '');
    else process.stderr.write(`run ${err.run.id} ended ${err.run.status}${err.run.error ? `: ${err.run.error.code}: ${err.run.error.message}` : ''}\n`);
    return EXIT.runFailed;
  }
  if (err instanceof RunTimeout) {
    process.stderr.write(`${err.message}\n`);
    return EXIT.runFailed;
  }
  if (err instanceof HostingEnded) {
    if (out.json && err.hosting) out.result({ hosting: err.hosting }, () => '');
    else process.stderr.write(`${err.message}\n`);
    return EXIT.runFailed;
  }
  if (err instanceof ApiError) {
    if (out.json) process.stdout.write(`${JSON.stringify({ error: { type: err.type, code: err.code, message: err.message, param: err.param, details: err.details, request_id: err.requestId } }, null, 2)}\n`);
    else process.stderr.write(`error ${err.status} ${err.code}: ${err.message}${err.param ? ` (param: ${err.param})` : ''}${err.requestId ? ` [request ${err.requestId}]` : ''}\n`);
    return EXIT.api;
  }
  if (err instanceof SilicoError) { // transport, integrity and configuration failures
    process.stderr.write(`error: ${err.message}\n`);
    return EXIT.api;
  }
  process.stderr.write(`error: ${(err as Error)?.stack ?? String(err)}\n`);
  return EXIT.api;
}

/** `k=v` pairs; a value that parses as JSON (numbers, booleans, arrays, ...) is taken as such. */
export function parsePairs(pairs: string[], what: string, jsonValues: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new UsageError(`${what} must be name=value, got ${JSON.stringify(pair)}`);
    const k = pair.slice(0, eq);
    const v = pair.slice(eq + 1);
    if (!jsonValues) out[k] = v;
    else {
      try {
        out[k] = JSON.parse(v);
      } catch {
        out[k] = v;
      }
    }
  }
  return out;
}

/** A small aligned table for people. */
export function table(rows: Array<Record<string, unknown>>, columns: string[]): string {
  if (!rows.length) return '(none)';
  const cells = rows.map((r) => columns.map((c) => (r[c] === null || r[c] === undefined ? '' : String(r[c]))));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n');
}
