/**
 * Runs workflow steps one at a time, in the order they were asked for. Local activities
 * started by an update handler and by the workflow's own flow would otherwise be in
 * flight together: they resolve in the order they finish, but replay resolves them in the
 * order they were scheduled, so the code after them interleaves differently (a
 * nondeterministic history).
 */
export function oneAtATime(): <T>(step: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(step: () => Promise<T>): Promise<T> => {
    const run = tail.then(step, step);
    tail = run.catch(() => undefined);
    return run;
  };
}
