import type { ToolContext } from '../tools/tool.ts';
import { getRun, TERMINAL, type RunRow } from '../../storage/db/runs.ts';

/**
 * The run once it has ended, or as it stands when `ms` have passed or its client has
 * gone (`Prefer: wait` on POST /runs). It follows the run's event notices, subscribed
 * before its first read so an ending committed in between is never slept through, and
 * reads the run again on each.
 */
export async function runWhenEnded(ctx: ToolContext, run: RunRow, ms: number): Promise<RunRow> {
  if (TERMINAL.includes(run.status)) return run;
  const deadline = Date.now() + ms;
  const notices = ctx.deps.runEvents.subscribe(run.id);
  // The connection, not the request: a request's own 'close' comes once its body is read.
  const socket = ctx.http?.request?.socket;
  let gone = socket?.destroyed ?? false;
  const leave = () => {
    gone = true;
    notices.close();
  };
  socket?.once('close', leave);
  try {
    for (;;) {
      const now = await getRun(ctx.deps.db, run.id, ctx.caller.account.id);
      if (!now) return run;
      if (TERMINAL.includes(now.status)) return now;
      const left = deadline - Date.now();
      if (left <= 0 || gone) return now;
      await notices.next(left);
    }
  } finally {
    socket?.off('close', leave);
    notices.close();
  }
}
