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

/**
 * The dev server's Go runtime held to a soft limit (GOMEMLIMIT). Through a 40,000-run study
 * its heap profiles, a minute apart, showed 35–45 MB live and no allocation site growing
 * but work in flight (events being serialised, gRPC buffers) and the history cache filling
 * to its bound; its stacks held 24 MB (3,160 goroutines). Its resident memory follows the
 * collector's goal, twice what the last collection found live plus the stacks, so its peak
 * is the busiest moment's goal: 122 MiB at the peak of a 10,000-run study, 167 at a
 * 100,000-run study's. At 45 MB live
 * the goal is about 120 MiB; 150 MiB leaves a quarter above it, so in steady state the
 * collector runs as it did, and only when work in flight would take the goal past the
 * limit does it collect sooner. A soft limit never fails an allocation, and Go bounds the
 * collector's share of the CPU near it. Figures: test/bench/RESULTS.md.
 */
export const GO_MEMORY_LIMIT = '150MiB';
