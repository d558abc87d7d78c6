import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, readdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { downloadRelease, thisPlatform, type Release } from './releases.ts';

/** A binary the stack needs: its Go module at an exact pin, and the project's own release of that version where one is pinned. */
export interface BinarySpec {
  module: string; version: string; envVar: string;
  /** The official release archive, with the SHA-256 of each platform pinned here. */
  release?: Release;
  /** Why no release is tried (the project publishes none of this version). */
  noRelease?: string;
}

/**
 * One binary of the Temporal server's release archive (v1.31.0), its four platforms'
 * checksums as another project pins them from the release's checksums.txt.
 */
function temporalServerRelease(member: string): Release {
  return { url: 'https://github.com/temporalio/temporal/releases/download/v1.31.0/temporal_1.31.0_{os}_{arch}.tar.gz', member, sha256: {
    'linux-amd64': '2e1fe709f7794929691dbf7044fea8935a5af5b4686758ae6477bebdc208012b',
    'linux-arm64': 'd02e574e2e1ee5b888b4a57d02d8438bb92d6d5eec47fcf18bf190ac594c8ed3',
    'darwin-amd64': 'c1174e1f3ad82489bb84ab6f4fd00b82ab13cb31ca81ddf8bf449e7f5ecafdb8',
    'darwin-arm64': '9023d04591eb3285f31735d9298cbd6214a0627c9e71f5c7b47991c2ffd91d05',
  } };
}

/**
 * Server binaries the stack needs that no package registry ships. Each is the project's
 * official release for this platform when its archive's SHA-256 is pinned here, else
 * built from its Go module at an exact pin. The checksums are the projects' own (their
 * release's checksums file) as recorded by those who verified them: this machine reaches
 * no release host, so none was downloaded here (docs/decisions.md, "A fast first start").
 */
export const BINARIES = {
  temporal: {
    module: 'github.com/temporalio/cli/cmd/temporal', version: 'v1.5.1', envVar: 'TEMPORAL_BIN',
    // As cashapp/hermit-packages' temporal.hcl records them from the release's checksums.txt.
    release: { url: 'https://github.com/temporalio/cli/releases/download/v1.5.1/temporal_cli_1.5.1_{os}_{arch}.tar.gz', member: 'temporal', sha256: {
      'linux-amd64': 'ddc95e08b0b076efd4ea9733a3f488eb7d2be875f8834e616cd2a37358b4852d',
      'linux-arm64': 'bd1b0db9f18b051026de8bf6cc1505f2510f14bbb7a8b9a4a91fff46c77454f5',
      'darwin-amd64': 'bbb73e2a31135abe50a1f1cdb35030c42961df618e8ce9c60ae89f201540c5d9',
      'darwin-arm64': 'cca01b7ea35ad56e2a328d9ae596bf716bd22313ef63c7a761c88354457c2415',
    } },
  },
  // MinIO's release tag RELEASE.2025-10-15T17-29-55Z (commit 9e49d5e7a648) is not served
  // by the Go module proxy ("not available"), so the pin is the one pseudo-version the
  // proxy resolves for the module.
  minio: { module: 'github.com/minio/minio', version: 'v0.0.0-20260212201848-7aac2a2c5b7c', envVar: 'MINIO_BIN', noRelease: 'MinIO publishes no binary of this commit (its community edition ships as source since October 2025)' },
  // The cluster topology (`npm run start:cluster`): the Temporal server as its own services
  // on Postgres, and its schema tool. v1.31.0, not the 1.29.1 the dev server above embeds:
  // its release's checksums are readable here, 1.29.1's are not.
  'temporal-server': { module: 'go.temporal.io/server/cmd/server', version: 'v1.31.0', envVar: 'TEMPORAL_SERVER_BIN', release: temporalServerRelease('temporal-server') },
  'temporal-sql-tool': { module: 'go.temporal.io/server/cmd/tools/sql', version: 'v1.31.0', envVar: 'TEMPORAL_SQL_TOOL_BIN', release: temporalServerRelease('temporal-sql-tool') },
  // Its web UI, a program of its own that speaks the server's public API. v2.53.3 rather
  // than the v2.42.1 the dev server embeds: its release's checksums are readable here (as
  // another project pins them from ui-server_2.53.3_checksums.txt), v2.42.1's are not.
  'temporal-ui-server': {
    module: 'github.com/temporalio/ui-server/v2/cmd/server', version: 'v2.53.3', envVar: 'TEMPORAL_UI_SERVER_BIN',
    release: { url: 'https://github.com/temporalio/ui-server/releases/download/v2.53.3/ui-server_2.53.3_{os}_{arch}.tar.gz', member: 'ui-server', sha256: {
      'linux-amd64': 'ec160cab0235f300444e66a68ca90599e21419c4294c6f11553fad4c60f634ad',
      'linux-arm64': '371905d70bcfe2e724bed8f549e15449aa073b8b9991a0530c6eb0617da9e856',
      'darwin-amd64': '91d6c0a236258cd6873856cc9e8c7f4b90036d9b2898767bab60d87cea2d2927',
      'darwin-arm64': '64904efd4d72a0038eb4917628b713ccfa50d20028eb242c3e7283b7f1f090e9',
    } },
  },
  // The payment provider's own mock server, for the local stack when no provider key is set.
  // v0.195.0, the newest release whose checksums are readable here: Stripe's own Homebrew
  // tap (stripe/homebrew-stripe-mock, written by GoReleaser at release) records them.
  'stripe-mock': {
    module: 'github.com/stripe/stripe-mock', version: 'v0.195.0', envVar: 'STRIPE_MOCK_BIN',
    release: { url: 'https://github.com/stripe/stripe-mock/releases/download/v0.195.0/stripe-mock_0.195.0_{os}_{arch}.tar.gz', member: 'stripe-mock', sha256: {
      'linux-amd64': '82341722feceb6f5ec270b2e9062dbf59ad0aa5479a7a114ddb42f4b1dd7bdf1',
      'linux-arm64': '8a76369ac601d8fead247e5fbd55787ed952fccb3dc752d44c195c90ebe8c3cc',
      'darwin-amd64': '024b9c0dbc4ced0a434d7e5f40d48c4d338c99ff00aacef3fec34f98ba69f0d4',
      'darwin-arm64': '361958d333bc3f308946d401aa10a3fbd2173666e02711be6728d230ae2e5da2',
    } },
  },
  // Validates deploy/k8s offline (test/unit/manifests.test.ts).
  kubeconform: {
    module: 'github.com/yannh/kubeconform/cmd/kubeconform', version: 'v0.7.0', envVar: 'KUBECONFORM_BIN',
    // The release's CHECKSUMS, as several projects' CI scripts verify it.
    release: { url: 'https://github.com/yannh/kubeconform/releases/download/v0.7.0/kubeconform-{os}-{arch}.tar.gz', member: 'kubeconform', sha256: {
      'linux-amd64': 'c31518ddd122663b3f3aa874cfe8178cb0988de944f29c74a0b9260920d115d3',
    } },
  },
} satisfies Record<string, BinarySpec>;
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
  return pinnedPath(name, BINARIES[name].version, env);
}

const pinnedPath = (name: string, version: string, env: NodeJS.ProcessEnv) => path.join(cacheDir(env), 'bin', `${name}-${version}`);

/**
 * Finds a binary: its env var, then PATH, then the cache, then the project's release
 * (checksum verified), then builds it with `go install` into the cache (minutes the first
 * time; progress is shown), saying which it did and why.
 */
export function resolveBinary(name: BinaryName, log: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return resolveSpec(name, BINARIES[name], log, env);
}

/** resolveBinary for any spec (the tests give theirs). */
export async function resolveSpec(name: string, spec: BinarySpec, log: (line: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const fromEnv = env[spec.envVar];
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`${spec.envVar}=${fromEnv} does not exist`);
    return fromEnv;
  }
  const fromPath = onPath(name, env);
  if (fromPath) return fromPath;
  const cached = pinnedPath(name, spec.version, env);
  if (existsSync(cached)) return cached;
  await mkdir(path.dirname(cached), { recursive: true });
  const platform = thisPlatform();
  const started = Date.now();
  const why = spec.noRelease ?? (!spec.release ? 'it has no release listed here' : !platform ? `no release is published for ${process.platform}-${process.arch}` : await downloadRelease(spec.release, platform, cached, env));
  if (why === null) {
    log(`downloaded ${name} ${spec.version}, its official release for ${platform} (SHA-256 verified), in ${((Date.now() - started) / 1000).toFixed(1)} s -> ${cached}`);
    return cached;
  }
  // GO_BIN names the toolchain explicitly (an empty or missing path means "no Go").
  const go = env.GO_BIN !== undefined
    ? (env.GO_BIN && existsSync(env.GO_BIN) ? env.GO_BIN : undefined)
    : onPath('go', env) ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) {
    throw new Error(
      `${name} not found, and not downloaded: ${why}. Install Go (https://go.dev/dl) so the stack can build it, or run\n` +
      `  go install ${spec.module}@${spec.version}\nand set ${spec.envVar} to the binary.`,
    );
  }
  log(`building ${name} from its Go module, not downloading it: ${why}`);
  await goInstall(go, name, spec, cached, log, env);
  return cached;
}

async function goInstall(go: string, name: string, spec: BinarySpec, target: string, log: (line: string) => void, env: NodeJS.ProcessEnv): Promise<void> {
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
