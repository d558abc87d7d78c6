import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { resolveBinary } from '../../deploy/local/binaries.ts';
import { FAIR_SHARES } from '../../deploy/local/fairShares.ts';
import { kubernetesSchemas } from '../../deploy/local/kubernetesSchemas.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { pythonTool } from '../../deploy/local/pythonTools.ts';
import { LOCAL_STACK_MARKER, LOCAL_STACK_ONLY } from '../../kernel/config.ts';

// deploy/k8s checked offline with kubeconform against the pinned Kubernetes API, strict
// (an unknown field or a wrong type is an error), and deploy/docker/Dockerfile with hadolint.

const K8S = path.join(REPO_ROOT, 'deploy/k8s');
let kubeconform: string;
let schemas: string;

before(async () => {
  [kubeconform, schemas] = await Promise.all([resolveBinary('kubeconform', () => undefined), kubernetesSchemas(() => undefined)]);
}, { timeout: 900_000 });

async function validate(files: string[]): Promise<{ code: number; summary: { valid: number; invalid: number; errors: number; skipped: number }; out: string }> {
  const args = ['-strict', '-summary', '-output', 'json', '-schema-location', path.join(schemas, '{{ .ResourceKind }}{{ .KindSuffix }}.json'), ...files];
  const res = await promisify(execFile)(kubeconform, args).then((r) => ({ code: 0, out: r.stdout }), (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }));
  return { ...res, summary: JSON.parse(res.out).summary };
}

test('every Kubernetes manifest in deploy/k8s is valid against the pinned API, with nothing skipped', async () => {
  const files = (await readdir(K8S)).filter((f) => f.endsWith('.yaml')).map((f) => path.join(K8S, f));
  assert.ok(files.length >= 4, files.join(', '));
  const { code, summary, out } = await validate(files);
  assert.equal(code, 0, out);
  assert.deepEqual([summary.invalid, summary.errors, summary.skipped], [0, 0, 0], out);
  assert.equal(summary.valid, 10, 'config, three secrets (the Temporal UI\'s sign-in among them), api (deployment, service, budget), worker (deployment, budget, autoscaler)');
});

test('the check can fail: an unknown field and a wrong type are refused', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'k8s-bad-'));
  const bad = path.join(dir, 'bad.yaml');
  await writeFile(bad, 'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: x }\nspec:\n  replica: 2\n  selector: { matchLabels: { a: b } }\n  template: { metadata: { labels: { a: b } }, spec: { containers: [{ name: c, image: i, ports: [{ containerPort: "80" }] }] } }\n');
  const { code, summary } = await validate([bad]);
  assert.notEqual(code, 0);
  assert.equal(summary.invalid, 1);
});

test('the Dockerfile passes hadolint; a Dockerfile that breaks its rules does not', { timeout: 300_000 }, async () => {
  const hadolint = await pythonTool(path.join(REPO_ROOT, 'deploy/docker/lint-tools.lock'), 'hadolint');
  const lint = (file: string) => promisify(execFile)(hadolint, ['--no-color', file]).then((r) => ({ code: 0, out: r.stdout }), (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }));
  const ours = await lint(path.join(REPO_ROOT, 'deploy/docker/Dockerfile'));
  assert.deepEqual(ours, { code: 0, out: '' });
  const dir = await mkdtemp(path.join(tmpdir(), 'dockerfile-bad-'));
  await writeFile(path.join(dir, 'Dockerfile'), 'FROM debian:latest\nRUN cd /tmp && apt-get install curl\n');
  const bad = await lint(path.join(dir, 'Dockerfile'));
  assert.notEqual(bad.code, 0);
  assert.match(bad.out, /DL3007/);
});

test('no image or manifest marks itself the local stack or sets a test-only setting', async () => {
  const files: string[] = [];
  for (const dir of ['deploy/docker', 'deploy/k8s']) {
    for (const e of await readdir(path.join(REPO_ROOT, dir), { recursive: true, withFileTypes: true })) if (e.isFile()) files.push(path.join(e.parentPath, e.name));
  }
  assert.ok(files.some((f) => f.endsWith('Dockerfile')) && files.some((f) => f.endsWith('config.yaml')), files.join(', '));
  for (const f of files) {
    const text = await readFile(f, 'utf8');
    for (const name of [LOCAL_STACK_MARKER, ...LOCAL_STACK_ONLY]) assert.ok(!text.includes(name), `${path.relative(REPO_ROOT, f)} names ${name}, which only deploy/local may set`);
  }
});

test('the image holds every file the api and the worker import', async () => {
  const dockerfile = await readFile(path.join(REPO_ROOT, 'deploy/docker/Dockerfile'), 'utf8');
  const final = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  const copied = [...final.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((m) => m[1]!.split(' '));
  // Every module reachable from the two entry points by relative imports, by top-level folder.
  const reached = new Set<string>();
  const queue = ['deploy/api.ts', 'deploy/worker.ts'];
  while (queue.length) {
    const file = queue.pop()!;
    if (reached.has(file)) continue;
    reached.add(file);
    const text = await readFile(path.join(REPO_ROOT, file), 'utf8');
    for (const m of text.matchAll(/(?:^|\s)(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+\.ts)'/gm)) queue.push(path.relative(REPO_ROOT, path.resolve(REPO_ROOT, path.dirname(file), m[1]!)));
  }
  const folders = [...new Set([...reached].map((f) => f.split('/')[0]!))].sort();
  assert.ok(folders.includes('kernel') && folders.includes('storage'), folders.join(', '));
  assert.deepEqual(folders.filter((f) => !copied.includes(f)), [], `copied: ${copied.join(', ')}`);
});

test('the Temporal chart\'s values give a deployment\'s store the fair shares the local stack\'s has', async () => {
  const values = YAML.parse(await readFile(path.join(K8S, 'helm/temporal-values.yaml'), 'utf8')) as { server: { dynamicConfig: Record<string, Array<{ value: unknown; constraints?: unknown }>> } };
  const dynamic = values.server.dynamicConfig;
  for (const [key, value] of FAIR_SHARES) {
    assert.ok(dynamic[key]?.length, `${key} is not set in the chart's values`);
    // Partition counts are the deployment's own (docs/scaling.md); the switch itself is the local stack's, for every queue.
    if (typeof value === 'boolean') assert.deepEqual(dynamic[key], [{ value }], key);
  }
});
