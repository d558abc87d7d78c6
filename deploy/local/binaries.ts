import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, readdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';

/**
 * Server binaries the stack needs that no package registry ships. Each is built from its
 * Go module at an exact pin. MinIO's release tag RELEASE.2025-10-15T17-29-55Z (commit
 * 9e49d5e7a648) is not served by the Go module proxy ("not available"), so the pin is
 * the one pseudo-version the proxy resolves for the module.
 */
export const BINARIES = {
  temporal: { module: 'github.com/temporalio/cli/cmd/temporal', version: 'v1.5.1', envVar: 'TEMPORAL_BIN' },
  minio: { module: 'github.com/minio/minio', version: 'v0.0.0-20260212201848-7aac2a2c5b7c', envVar: 'MINIO_BIN' },
  // The cluster topology (`npm run start:cluster`): the Temporal server the dev server
  // above embeds (1.29.1), as its own services on Postgres, and its schema tool.
  'temporal-server': { module: 'go.temporal.io/server/cmd/server', version: 'v1.29.1', envVar: 'TEMPORAL_SERVER_BIN' },
  'temporal-sql-tool': { module: 'go.temporal.io/server/cmd/tools/sql', version: 'v1.29.1', envVar: 'TEMPORAL_SQL_TOOL_BIN' },
  // Its web UI, the one the dev server embeds (the CLI v1.5.1 pins ui-server v2.42.1), its assets built in.
  'temporal-ui-server': { module: 'github.com/temporalio/ui-server/v2/cmd/server', version: 'v2.42.1', envVar: 'TEMPORAL_UI_SERVER_BIN' },
  // The payment provider's own mock server, for the local stack when no provider key is set.
  'stripe-mock': { module: 'github.com/stripe/stripe-mock', version: 'v0.203.0', envVar: 'STRIPE_MOCK_BIN' },
  // Validates deploy/k8s offline (test/unit/manifests.test.ts).
  kubeconform: { module: 'github.com/yannh/kubeconform/cmd/kubeconform', version: 'v0.7.0', envVar: 'KUBECONFORM_BIN' },
} as const;
export type BinaryName = keyof typeof BINARIES;

/** `${SILICO_CACHE_DIR}` or `${XDG_CACHE_HOME:-~/.cache}/silico`: shared by every clone. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SILICO_CACHE_DIR) return env.SILICO_CACHE_DIR;
  return path.join(env.XDG_CACHE_HOME || path.join(homedir(), '.cache'), 'silico');
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

/** Where a pinned binary lives in the cache. */
export function cachedPath(name: BinaryName, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(cacheDir(env), 'bin', `${name}-${BINARIES[name].version}`);
}

/**
 * Finds a binary: its env var, then PATH, then the cache, then builds it with
 * `go install` into the cache (minutes the first time; progress is shown).
 */
export async function resolveBinary(name: BinaryName, log: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const spec = BINARIES[name];
  const fromEnv = env[spec.envVar];
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`${spec.envVar}=${fromEnv} does not exist`);
    return fromEnv;
  }
  const fromPath = onPath(name, env);
  if (fromPath) return fromPath;
  const cached = cachedPath(name, env);
  if (existsSync(cached)) return cached;
  // GO_BIN names the toolchain explicitly (an empty or missing path means "no Go").
  const go = env.GO_BIN !== undefined
    ? (env.GO_BIN && existsSync(env.GO_BIN) ? env.GO_BIN : undefined)
    : onPath('go', env) ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) {
    throw new Error(
      `${name} not found. Install Go (https://go.dev/dl) so the stack can build it, or run\n` +
      `  go install ${spec.module}@${spec.version}\nand set ${spec.envVar} to the binary.`,
    );
  }
  await goInstall(go, name, cached, log, env);
  return cached;
}

async function goInstall(go: string, name: BinaryName, target: string, log: (line: string) => void, env: NodeJS.ProcessEnv): Promise<void> {
  const spec = BINARIES[name];
  await mkdir(path.dirname(target), { recursive: true });
  // Build into a private folder and rename, so a parallel start never sees half a file.
  const gobin = await mkdtemp(path.join(path.dirname(target), `.build-${name}-`));
  log(`building ${name} ${spec.version} from ${spec.module} (first run only; this takes several minutes)`);
  const started = Date.now();
  const ticker = setInterval(() => log(`  still building ${name}... ${Math.round((Date.now() - started) / 1000)}s`), 15000);
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn(go, ['install', `${spec.module}@${spec.version}`], {
        env: { ...env, GOBIN: gobin, GOFLAGS: `${env.GOFLAGS ?? ''} -buildvcs=false`.trim() },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let downloads = 0;
      const tail: string[] = [];
      const onData = (buf: Buffer) => {
        for (const line of buf.toString().split('\n').filter(Boolean)) {
          tail.push(line);
          if (tail.length > 30) tail.shift();
          if (line.startsWith('go: downloading')) {
            downloads += 1;
            if (downloads % 25 === 1) log(`  ${name}: downloading modules (${downloads})...`);
          } else log(`  ${name}: ${line}`);
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`go install ${name} failed (exit ${code}):\n${tail.join('\n')}`))));
    });
    const [built] = await readdir(gobin);
    if (!built) throw new Error(`go install ${name} produced no binary`);
    await rename(path.join(gobin, built), target);
    log(`built ${name} in ${Math.round((Date.now() - started) / 1000)}s -> ${target}`);
  } finally {
    clearInterval(ticker);
    await rm(gobin, { recursive: true, force: true });
  }
}
