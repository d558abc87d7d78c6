import type { ToolContext } from '../tools/tool.ts';
import type { RunEventSubscription } from '../../storage/db/runEventWatch.ts';
import { getRun, TERMINAL, type RunRow } from '../../storage/db/runs.ts';

/**
 * The run once it has ended, or as it stands when `ms` have passed or its client has
 * gone (`Prefer: wait` on POST /runs), reading it again on each of its `notices`: those
 * subscribed before the request that may accept it, so that when it does no ending of
 * the run can come before them.
 *
 * A run this request `accepted` (recorded, and its workflow started by this request)
 * cannot have ended before its workflow started, so the notices heard until then are its
 * acceptance's own, and the row the acceptance returned is current: they are dropped and
 * it is not read again. The first wait after that is a second at most, so that should a
 * notice of the ending have been among them, the answer is late by that second, never
 * wrong. A run found otherwise (an earlier attempt's) is read first.
 */
export async function runWhenEnded(ctx: ToolContext, run: RunRow, ms: number, notices: RunEventSubscription, opts: { accepted: boolean }): Promise<RunRow> {
  if (TERMINAL.includes(run.status)) return run;
  const deadline = Date.now() + ms;
  // The connection, not the request: a request's own 'close' comes once its body is read.
  const socket = ctx.http?.request?.socket;
  let gone = socket?.destroyed ?? false;
  const leave = () => {
    gone = true;
    notices.close();
  };
  socket?.once('close', leave);
  let current = run;
  let known = opts.accepted;
  let bounded = opts.accepted;
  try {
    if (opts.accepted) await notices.next(0);
    for (;;) {
      if (!known) {
        const now = await getRun(ctx.deps.db, run.id, ctx.caller.account.id);
        if (!now) return current;
        current = now;
        if (TERMINAL.includes(now.status)) return now;
      }
      known = false;
      const left = deadline - Date.now();
      if (left <= 0 || gone) return current;
      await notices.next(bounded ? Math.min(left, 1000) : left);
      bounded = false;
    }
  } finally {
    socket?.off('close', leave);
  }
}
