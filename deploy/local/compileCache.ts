import path from 'node:path';
import { cacheDir } from './binaries.ts';

/**
 * Node's module compile cache for this process's children (they inherit the environment):
 * the api, the workers, the CLIs and, under `npm test`, every test file load much the same
 * TypeScript, and the cache keeps each module's transpiled and compiled code, so only the
 * first load of a module pays for stripping its types and compiling it. Measured, importing
 * the api's module graph took 1.35 s of CPU and 0.99 s with the cache. Kept beside the
 * binaries, shared by every clone: entries are keyed by file, content and Node's flags, and
 * Node checks each before use, so a stale or torn one is only a miss.
 */
export function shareNodeCompileCache(env: NodeJS.ProcessEnv = process.env): void {
  env.NODE_COMPILE_CACHE ??= path.join(cacheDir(env), 'node-compile-cache');
}
