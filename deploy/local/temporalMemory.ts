/**
 * The dev server's history cache keeps each execution's state by count, up to 128,000
 * entries for an hour: every run the stack ended in the last hour stayed in its memory
 * (two entries an execution, about 10 KB each on its heap for the smallest workflow), so
 * the server grew with what the stack had run, not with what it was running. Bounded by
 * count: 512 entries keep the executions a machine works at once many times over, and one
 * evicted is read back from its store. (Temporal's size-based bound counts about 1.8 KB an
 * entry, a seventh of the heap it holds, so bytes would not bound it.) Figures:
 * test/bench/RESULTS.md.
 */
export const HISTORY_CACHE: Array<[string, number]> = [['history.hostLevelCacheMaxSize', 512]];
