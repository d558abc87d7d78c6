import path from 'node:path';
import { REPO_ROOT } from './paths.ts';

/**
 * How our Node services (api, worker) are launched: the runtime settings every start of
 * them shares, here once (the stack and the benchmarks use it).
 *
 * glibc malloc: the api relays object bytes in 64 KiB socket reads, each a fresh buffer
 * freed moments later. With glibc's defaults the top of the heap is trimmed back to the
 * system as soon as 128 KiB is free, so the next buffers fault their pages in again:
 * measured here, that doubled the system time of a download relay (about 1.4 s of CPU
 * per GiB, against 0.7 s with the settings below) and cost a quarter of its throughput.
 * Keeping up to 32 MiB of freed heap (and padding each heap growth by 8 MiB) stops the
 * churn. Setting any of these turns off glibc's sliding mmap threshold, so it is fixed at
 * 8 MiB: upload parts (5 MiB) are reused from the heap instead of mapped and unmapped.
 */
export const SERVICE_PROCESS_ENV: Readonly<Record<string, string>> = {
  MALLOC_TRIM_THRESHOLD_: String(32 * 1024 * 1024),
  MALLOC_TOP_PAD_: String(8 * 1024 * 1024),
  MALLOC_MMAP_THRESHOLD_: String(8 * 1024 * 1024),
};

/**
 * V8 settings of one entry point, before any of the caller's.
 *
 * The worker's load comes in bursts (a study's runs, then nothing while the next is
 * planned). In each pause V8's memory reducer shrinks its heap to just above what is live,
 * and through the next burst the old generation then fills to that limit every few
 * hundred milliseconds: a full collection each time. Profiled over bench:sweep's rounds, a
 * study after a pause spent 2.6 ms of garbage collection per run against 0.12 ms without
 * one, and its worker 19 ms of CPU per run against 11 (issue 57). Without the reducer the
 * heap keeps the size its work needs; it is still collected, only not shrunk when idle.
 * Left to itself, V8 then let the worker's old generation grow to about four times what
 * was live before each full collection (traced with --trace-gc through a 20,000-run study:
 * 68–80 MB live, up to 325 MB in use and 417 MB committed), so its peak was that ceiling,
 * and the longer a study the likelier a sample caught it. Growing by a fixed factor of two
 * (--heap-growing-percent=100) it made 23 full collections where it had made 10 (0.22 s
 * of pauses in four minutes against 0.10), at the same CPU per run, and its peak memory
 * fell 925 → 749 MiB with its sandboxes.
 *
 * The api's load comes in bursts too: after 20 s idle, a burst of reads cost it a third
 * more CPU per request until its heap had regrown (bench:api, issue 60). It keeps its heap
 * as the worker does, and its semi-spaces (the young generation is two to three of them)
 * may grow to 16 MiB, so a request's garbage is scavenged less often. The k8s manifests
 * and the image's default command carry the same flags.
 */
const NODE_FLAGS: Readonly<Record<string, readonly string[]>> = {
  'deploy/worker.ts': ['--no-memory-reducer', '--heap-growing-percent=100'],
  'deploy/api.ts': ['--no-memory-reducer', '--max-semi-space-size=16'],
};

/**
 * The arguments that run one of our TypeScript entry points (deploy/api.ts, worker.ts,
 * admin.ts) on Node, after any Node options of the caller's.
 */
export function serviceArgs(script: string, nodeOptions: readonly string[] = []): string[] {
  return [...(NODE_FLAGS[script] ?? []), ...nodeOptions, path.join(REPO_ROOT, script)];
}
