import parsePreferHeader from 'parse-prefer-header';
import type { ToolContext } from './tools/tool.ts';
import type { NoticeSubscription } from '../storage/db/noticeWatch.ts';

/** The longest wait a `Prefer: wait` gets: past it, an answer is better sent and the work followed. */
export const PREFER_WAIT_MAX_SECONDS = 60;

/**
 * The seconds a request's `Prefer: wait=N` (RFC 7240) asks for, at most
 * PREFER_WAIT_MAX_SECONDS; undefined when it asks none, or not as a whole number of
 * seconds (a preference the server cannot honour is ignored, as the RFC says).
 */
export function preferredWaitSeconds(header: string | undefined): number | undefined {
  const wait = parsePreferHeader(header).wait;
  if (typeof wait !== 'string' || !/^\d{1,6}$/.test(wait)) return undefined;
  return Math.min(Number(wait), PREFER_WAIT_MAX_SECONDS);
}

/** How a `Prefer: wait` follows one record until it ends. */
export interface Follow<T> {
  /** The record now; undefined when it is gone. */
  read(): Promise<T | undefined>;
  ended(record: T): boolean;
  /**
   * The record given was returned by this request's own acceptance, so it is current and
   * not read first. With `ownNotices`, the notices heard until now are that acceptance's
   * own (a run's first events): they are dropped, and the first wait is a second at most,
   * so that should a notice of the ending have been among them, the answer is late by
   * that second, never wrong.
   */
  accepted: boolean;
  ownNotices?: boolean;
}

/**
 * The record once it has ended, or as it stands when `ms` have passed or its client has
 * gone (`Prefer: wait`), reading it again on each of its `notices`: those subscribed
 * before the request that may accept it, so that no ending can come before them.
 */
export async function whenEnded<T>(ctx: ToolContext, record: T, ms: number, notices: NoticeSubscription, f: Follow<T>): Promise<T> {
  if (f.ended(record)) return record;
  const deadline = Date.now() + ms;
  // The connection, not the request: a request's own 'close' comes once its body is read.
  const socket = ctx.http?.request?.socket;
  let gone = socket?.destroyed ?? false;
  const leave = () => {
    gone = true;
    notices.close();
  };
  socket?.once('close', leave);
  let current = record;
  let known = f.accepted;
  let bounded = f.accepted && f.ownNotices === true;
  try {
    if (bounded) await notices.next(0);
    for (;;) {
      if (!known) {
        const now = await f.read();
        if (!now) return current;
        current = now;
        if (f.ended(now)) return now;
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
