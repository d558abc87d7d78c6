/**
 * Writes made one after another in the background while a run executes, awaited once
 * at its end. A write that fails does not stop the ones after it; the first failure is
 * kept for `settled()`. No promise here is ever left rejected without a handler: an
 * unhandled rejection ends the worker process, and with it every run it holds.
 */
export interface WriteChain {
  /** Queues `write` after every write queued before it. */
  add(write: () => Promise<unknown>): void;
  /** Resolves once every write queued so far has ended; rejects with the first failure. */
  settled(): Promise<void>;
}

export function createWriteChain(): WriteChain {
  let tail: Promise<void> = Promise.resolve();
  let failure: { error: unknown } | undefined;
  const keep = (error: unknown) => {
    failure ??= { error };
  };
  return {
    add(write) {
      tail = tail.then(write).then(() => undefined, keep);
    },
    async settled() {
      await tail;
      if (failure) throw failure.error;
    },
  };
}
