/**
 * What only the stack deploy/local starts may do (npm start, npm test: its api and worker
 * carry the local stack's marker): honour the test-only switches SILICO_*_ALLOW_PRIVATE and
 * take plain-http webhook endpoints. Any other api or worker refuses to start with a switch
 * set, naming it, and takes https endpoints only.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import getPort from 'get-port';
import { call, closeTestDb, errorOf, newAccount, spawnApi } from '../helpers.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';
import { serviceArgs } from '../../deploy/local/serviceProcess.ts';

after(closeTestDb);

/** A process started as a deployment starts it: none of the local stack's own settings. */
const OUTSIDE = { SILICO_LOCAL_STACK: '', SILICO_WEBHOOK_ALLOW_PRIVATE: '', SILICO_BIOLOGY_ALLOW_PRIVATE: '', SILICO_STRIPE_API_BASE: '' };
const SWITCHES = ['SILICO_WEBHOOK_ALLOW_PRIVATE', 'SILICO_BIOLOGY_ALLOW_PRIVATE', 'SILICO_STRIPE_API_BASE'];

/**
 * Starts `script` outside the local stack with `env`, and waits for it to end by itself.
 * It is pointed at no Temporal (a port nothing listens on), so a process that wrongly
 * starts never joins the shared stack; one still up after 20 s is stopped and reported.
 */
async function startOutside(script: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string; started: boolean }> {
  const proc = spawn(process.execPath, serviceArgs(script), {
    cwd: REPO_ROOT,
    env: { ...process.env, ...OUTSIDE, TEMPORAL_ADDRESS: `127.0.0.1:${await getPort()}`, SILICO_API_PORT: String(await getPort()), SILICO_WORKER_HEALTH_PORT: String(await getPort()), SILICO_COMPUTE_PROFILES: 'none-of-the-stack', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<number | null>((r) => proc.once('exit', (c) => r(c)));
  const timer = new Promise<'running'>((r) => setTimeout(() => r('running'), 20_000).unref());
  const outcome = await Promise.race([exited, timer]);
  if (outcome === 'running') {
    proc.kill('SIGKILL');
    await exited;
    return { code: null, stderr, started: true };
  }
  return { code: outcome, stderr, started: false };
}

for (const [what, script] of [['api', 'deploy/api.ts'], ['worker', 'deploy/worker.ts']] as const) {
  for (const name of SWITCHES) {
    test(`outside the local stack the ${what} refuses to start with ${name} set, naming it`, { timeout: 60_000 }, async () => {
      const out = await startOutside(script, { [name]: '1' });
      assert.equal(out.started, false, `the ${what} started with ${name}=1 outside the local stack; its stderr: ${out.stderr.slice(-2000)}`);
      assert.notEqual(out.code, 0);
      assert.match(out.stderr, new RegExp(`${name}.*only in the stack deploy/local starts`), out.stderr.slice(-2000));
    });
  }
}

test('outside the local stack a webhook endpoint must be https (422 url_not_https on url); the local stack takes http', async () => {
  const owner = await newAccount();
  const api = await spawnApi(OUTSIDE);
  try {
    for (const url of ['http://example.org/hook', 'HTTP://example.org:8080/hook']) {
      const res = await call('POST', '/webhook-endpoints', { key: owner.key, base: api.base, body: { url, events: ['run.completed'] } });
      assert.equal(res.status, 422, `${url}: ${res.text}`);
      const e = errorOf(res);
      assert.deepEqual([e.type, e.code, e.param], ['validation_error', 'url_not_https', 'url']);
      assert.match(e.message, /https/);
    }
    const ok = await call('POST', '/webhook-endpoints', { key: owner.key, base: api.base, body: { url: 'https://example.org/hook', events: ['run.completed'] } });
    assert.equal(ok.status, 201, ok.text);
    await call('DELETE', `/webhook-endpoints/${ok.body.endpoint_id}`, { key: owner.key, base: api.base });
  } finally {
    await api.stop();
  }
  // The local stack's own api (the marker set) still takes a plain-http receiver.
  const local = await call('POST', '/webhook-endpoints', { key: owner.key, body: { url: 'http://example.org/hook', events: ['run.completed'] } });
  assert.equal(local.status, 201, local.text);
  await call('DELETE', `/webhook-endpoints/${local.body.endpoint_id}`, { key: owner.key });
});

test('outside the local stack the operator CLI refuses a plain-http endpoint, and the switch, naming it', async () => {
  const owner = await newAccount();
  const adminOutside = (args: string[], env: Record<string, string> = {}) => promisify(execFile)(process.execPath, [...serviceArgs('deploy/admin.ts'), ...args, '--json'], { env: { ...process.env, ...OUTSIDE, ...env } })
    .then((r) => ({ code: 0, out: r.stdout + r.stderr }), (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }));
  const http = await adminOutside(['webhooks', 'add', '--account', owner.account.namespace, '--url', 'http://example.org/hook', '--events', 'run.completed']);
  assert.notEqual(http.code, 0, http.out);
  assert.match(http.out, /https/);
  const switched = await adminOutside(['webhooks', 'add', '--account', owner.account.namespace, '--url', 'https://example.org/hook', '--events', 'run.completed'], { SILICO_WEBHOOK_ALLOW_PRIVATE: '1' });
  assert.notEqual(switched.code, 0, switched.out);
  assert.match(switched.out, /SILICO_WEBHOOK_ALLOW_PRIVATE/);
  assert.equal((await call('GET', '/webhook-endpoints', { key: owner.key })).body.items.length, 0, 'nothing was registered');
});
