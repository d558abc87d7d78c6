import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheDir } from './binaries.ts';
import { REPO_ROOT } from './bootstrap.ts';
import { pythonTool } from './pythonTools.ts';

const run = promisify(execFile);

/** The Kubernetes release whose API the manifests are checked against. */
export const KUBERNETES_VERSION = 'v1.33.5';
const TOOLS_LOCK = path.join(REPO_ROOT, 'deploy/k8s/schema-tools.lock');

/**
 * JSON schemas of the pinned Kubernetes API, strict (unknown fields are errors), in the
 * layout kubeconform reads (`deployment-apps-v1.json`): Kubernetes' own OpenAPI document
 * from its Go module, converted by openapi2jsonschema from PyPI, made once into the cache
 * (no network at validation time). Returns the folder.
 */
export async function kubernetesSchemas(log: (l: string) => void, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const dir = path.join(cacheDir(env), 'kubernetes-schemas', `${KUBERNETES_VERSION}-strict`);
  if (existsSync(path.join(dir, 'deployment-apps-v1.json'))) return dir;
  log(`making the Kubernetes ${KUBERNETES_VERSION} JSON schemas (first run only)`);
  const go = env.GO_BIN || 'go';
  const { stdout } = await run(go, ['mod', 'download', '-json', `k8s.io/kubernetes@${KUBERNETES_VERSION}`], { maxBuffer: 16 << 20 });
  const swagger = path.join((JSON.parse(stdout) as { Dir: string }).Dir, 'api/openapi-spec/swagger.json');
  const convert = await pythonTool(TOOLS_LOCK, 'openapi2jsonschema', env);
  await mkdir(path.dirname(dir), { recursive: true });
  const work = await mkdtemp(`${dir}.build-`);
  try {
    // It resolves references against its working directory: the output path must be relative.
    await run(convert, ['--kubernetes', '--strict', '--stand-alone', '--expanded', '-o', 'out', swagger], { cwd: work, maxBuffer: 64 << 20 });
    await rm(dir, { recursive: true, force: true });
    await rename(path.join(work, 'out'), dir);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  return dir;
}
