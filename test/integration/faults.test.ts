import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { BASE_URL, call, closeTestDb, newAccount, publishFixtureLab, spawnApi, testDb, waitForRun, driverPid, workspaceOfLab, hostedLabOwner, retireHosting, until } from '../helpers.ts';
import { createTcpFaultProxy, type ProxyMode, type TcpFaultProxy } from '../tcpFaultProxy.ts';
import { REPO_ROOT } from '../../deploy/local/paths.ts';

// Nothing half done: a replica api reaches Postgres, MinIO and Temporal through relays
// this test switches off (`down`: refused) or freezes (`paused`: accepts, never answers)
// just before a write. The answer is 503 with Retry-After naming the dependency, nothing
// of the write is left in Postgres or the object store, and once the dependency is back a
// retry with the same Idempotency-Key completes it exactly once.

type Dep = 'postgres' | 'object_store' | 'temporal';
let proxies: Record<Dep, TcpFaultProxy>;
let replica: Awaited<ReturnType<typeof spawnApi>>;
let owner: Awaited<ReturnType<typeof newAccount>>;
let slowRef = '';

before(async () => {
  const pg = new URL(process.env.DATABASE_URL!);
  const s3 = new URL(process.env.S3_ENDPOINT!);
  const [tHost, tPort] = process.env.TEMPORAL_ADDRESS!.split(':');
  proxies = {
    postgres: await createTcpFaultProxy({ host: pg.hostname, port: Number(pg.port) }),
    object_store: await createTcpFaultProxy({ host: s3.hostname, port: Number(s3.port) }),
    temporal: await createTcpFaultProxy({ host: tHost!, port: Number(tPort) }),
  };
  const pgUrl = new URL(pg);
  pgUrl.hostname = '127.0.0.1';
  pgUrl.port = String(proxies.postgres.port);
  replica = await spawnApi({
    DATABASE_URL: pgUrl.toString(), S3_ENDPOINT: `http://127.0.0.1:${proxies.object_store.port}`, TEMPORAL_ADDRESS: `127.0.0.1:${proxies.temporal.port}`,
    SILICO_DEPENDENCY_TIMEOUT_SECONDS: '2', SILICO_IDEMPOTENCY_LOCK_SECONDS: '2',
  });
  owner = await newAccount({ usd: 20 });
  slowRef = await publishFixtureLab(owner, 'slow-lab');
});
after(async () => {
  if (invocable) await retireHosting(owner.key, (await invocable).lab.labId);
  await replica?.stop();
  await Promise.all(Object.values(proxies ?? {}).map((p) => p.close()));
  await closeTestDb();
});

/** A request to the replica, JSON or multipart, with the owner's key. */
async function viaReplica(method: string, p: string, opts: { body?: unknown; form?: FormData; key?: string } = {}) {
  const headers: Record<string, string> = { Authorization: `Bearer ${owner.key}` };
  if (opts.key) headers['Idempotency-Key'] = opts.key;
  if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${replica.base}${p}`, { method, headers, body: opts.form ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)) });
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, body, retryAfter: res.headers.get('retry-after') };
}

/** How many rows of `table` match `where` (the owner's, unless `where` says otherwise). */
const countOf = async (table: string, where: Record<string, unknown> = {}) =>
  Number((await testDb()(table).where({ account_id: owner.account.id, ...where }).count<{ count: string }[]>('* as count'))[0]!.count);

interface WriteCase {
  route: string;
  deps: Dep[];
  /** Builds the request (fixtures made through the main api, never the replica). */
  request: () => Promise<{ method: string; path: string; body?: unknown; form?: () => FormData }>;
  /** The route takes an Idempotency-Key (route table); else a retry is a plain retry. */
  keyed: boolean;
  /** Sending the completed request again makes nothing new (by its key, its plan or its digest). */
  replaySafe: boolean;
  /** What the write leaves behind, to compare before, after the 503 and after the retry. */
  state: () => Promise<unknown>;
  /** The state after exactly one successful write, from the state before. */
  once: (before: any) => unknown;
  /** Undoes what the write started that would outlive the test (a deployment's instances). */
  cleanup?: () => Promise<void>;
}

/** A workspace holding the enzyme-kinetics lab, ready to publish. */
const publishable = (title: string) => workspaceOfLab(owner.key, `${title} ${crypto.randomUUID().slice(0, 8)}`, path.join(REPO_ROOT, 'labs/enzyme-kinetics'));

async function publicationPlan() {
  const ws = await publishable('Faulty');
  const prep = await call('POST', '/publication-plans', { key: owner.key, body: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, version: '1.0.0' } });
  assert.equal(prep.body.status, 'ready', JSON.stringify(prep.body.findings));
  return prep.body;
}

async function uploaded(text: string) {
  const form = new FormData();
  form.append('file', new Blob([text]), 'cells.csv');
  return (await (await fetch(`${BASE_URL}/files`, { method: 'POST', headers: { Authorization: `Bearer ${owner.key}` }, body: form })).json()) as any;
}

/**
 * A client's retry as the SDK makes it: again after Retry-After while the answer is 503
 * (a connection coming back) or 409 in progress (the key of an attempt whose release
 * Postgres could not record is held for its lock time).
 */
async function retried(send: () => ReturnType<typeof viaReplica>): ReturnType<typeof viaReplica> {
  let res = await send();
  for (let attempt = 0; attempt < 20 && (res.status === 503 || res.status === 409); attempt++) {
    await new Promise((r) => setTimeout(r, 500));
    res = await send();
  }
  return res;
}

let lastPlan: any;
let lastWorkspace = '';
let lastLab = '';
let lastExperiment = '';
let lastHosted = '';

/** One of the owner's labs published and planned for hosting (no warm instances kept: min 0). */
async function hostingPlan() {
  const lab = await hostedLabOwner(undefined, owner);
  lastHosted = lab.labId;
  const plan = (await call('POST', `/labs/${lab.labId}/hosting-plans`, {
    key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { release: { reference: lab.reference, sha256: lab.sha256 }, min_instances: 0, max_instances: 1 },
  })).body;
  assert.equal(plan.status, 'ready', JSON.stringify(plan.findings));
  return { lab, plan };
}

/** A ready deployment of one of the owner's labs (a new one per call). */
async function readyHosting() {
  const { lab, plan } = await hostingPlan();
  assert.equal((await call('POST', '/hosting-requests', { key: owner.key, body: { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 } })).status, 201);
  const ready = await until(120_000, async () => {
    const h = (await call('GET', `/labs/${lab.labId}/hosting`, { key: owner.key })).body;
    return h.status === 'ready' ? h : undefined;
  });
  return { lab, ready };
}

/** The deployment the invocation cases invoke, made once (and retired after the file). */
let invocable: Promise<Awaited<ReturnType<typeof readyHosting>>> | undefined;
const invocationTarget = () => (invocable ??= readyHosting());
const hostingOf = async (labId: string) => testDb()('hostings').where({ lab_id: labId }).first();

const CASES: WriteCase[] = [
  {
    route: 'POST /runs', deps: ['postgres', 'temporal'],
    keyed: true, replaySafe: true,
    request: async () => ({ method: 'POST', path: '/runs', body: { ref: 'platform/microbial-growth@1.0.0', inputs: {}, max_runtime_seconds: 60 } }),
    state: async () => ({ runs: await countOf('runs'), reserved: await countOf('ledger_txns', { kind: 'reserve' }) }),
    once: (b) => ({ runs: b.runs + 1, reserved: b.reserved + 1 }),
  },
  {
    route: 'POST /publications', deps: ['postgres', 'temporal'], keyed: false, replaySafe: true,
    request: async () => {
      lastPlan = await publicationPlan();
      return { method: 'POST', path: '/publications', body: { plan_id: lastPlan.plan_id, plan_sha256: lastPlan.plan_sha256 } };
    },
    state: async () => ({ publications: await countOf('publications'), planUsed: Boolean((await testDb()('plans').where({ id: lastPlan.plan_id }).first()).consumed_at) }),
    once: (b) => ({ publications: b.publications + 1, planUsed: true }),
  },
  {
    route: 'POST /datasets', deps: ['postgres', 'temporal'], keyed: false, replaySafe: true,
    request: async () => {
      const f = await uploaded(`gene,count\nlacI,${Math.random()}\n`);
      const member = { file_id: f.file_id, sha256: f.sha256, size_bytes: f.size_bytes, sample_id: 's1', group_id: 'g1', role: 'table', split: 'train' };
      return { method: 'POST', path: '/datasets', body: { name: `faults-${crypto.randomUUID().slice(0, 8)}`, source: 'bench', license: 'CC0-1.0', attribution: 'us', annotation_version: 'v1', members: [member] } };
    },
    state: async () => ({ datasets: await countOf('datasets') }),
    once: (b) => ({ datasets: b.datasets + 1 }),
  },
  {
    route: 'POST /files', deps: ['postgres', 'object_store'], keyed: false, replaySafe: false,
    request: async () => {
      const text = `t,x\n0,${Math.random()}\n`;
      return { method: 'POST', path: '/files', form: () => {
        const form = new FormData();
        form.append('file', new Blob([text]), 'series.csv');
        return form;
      } };
    },
    state: async () => ({ files: await countOf('files') }),
    once: (b) => ({ files: b.files + 1 }),
  },
  {
    route: 'POST /workspaces/{workspace_id}/change-plans', deps: ['postgres', 'object_store'], keyed: true, replaySafe: true,
    request: async () => {
      const ws = (await call('POST', '/workspaces', { key: owner.key, body: { title: `Plans ${crypto.randomUUID().slice(0, 8)}` } })).body;
      return { method: 'POST', path: `/workspaces/${ws.workspace_id}/change-plans`, body: { base_revision_id: ws.head_revision_id, operations: [{ kind: 'file_put', path: 'README.md', content: `# ${Math.random()}\n` }] } };
    },
    state: async () => ({ plans: await countOf('plans', { kind: 'workspace_change' }) }),
    once: (b) => ({ plans: b.plans + 1 }),
  },
  {
    route: 'POST /workspaces', deps: ['postgres'], keyed: true, replaySafe: true,
    request: async () => ({ method: 'POST', path: '/workspaces', body: { title: `Faults ${crypto.randomUUID().slice(0, 8)}` } }),
    state: async () => ({ workspaces: await countOf('workspaces') }),
    once: (b) => ({ workspaces: b.workspaces + 1 }),
  },
  {
    route: 'POST /workspace-revisions', deps: ['postgres'], keyed: false, replaySafe: true,
    request: async () => {
      const ws = (await call('POST', '/workspaces', { key: owner.key, body: { title: `Revisions ${crypto.randomUUID().slice(0, 8)}` } })).body;
      lastWorkspace = ws.workspace_id;
      const plan = (await call('POST', `/workspaces/${ws.workspace_id}/change-plans`, { key: owner.key, body: { base_revision_id: ws.head_revision_id, operations: [{ kind: 'file_put', path: 'notes.md', content: 'n' }] } })).body;
      return { method: 'POST', path: '/workspace-revisions', body: { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 } };
    },
    state: async () => ({ revisions: Number((await testDb()('revisions').where({ workspace_id: lastWorkspace }).count<{ count: string }[]>('* as count'))[0]!.count) }),
    once: (b) => ({ revisions: b.revisions + 1 }),
  },
  {
    route: 'POST /run-plans', deps: ['postgres'], keyed: false, replaySafe: false,
    request: async () => ({ method: 'POST', path: '/run-plans', body: { capability_ref: 'platform/microbial-growth@1.0.0', inputs: {} } }),
    state: async () => ({ plans: await countOf('plans', { kind: 'run' }) }),
    once: (b) => ({ plans: b.plans + 1 }),
  },
  {
    route: 'POST /publication-plans', deps: ['postgres', 'object_store'], keyed: true, replaySafe: true,
    request: async () => {
      const ws = await publishable('Plans');
      return { method: 'POST', path: '/publication-plans', body: { workspace_id: ws.workspace_id, revision_id: ws.revision_id, version: '1.0.0' } };
    },
    state: async () => ({ plans: await countOf('plans', { kind: 'publication' }) }),
    once: (b) => ({ plans: b.plans + 1 }),
  },
  {
    route: 'POST /files/from-run', deps: ['postgres', 'object_store'], keyed: false, replaySafe: true,
    request: async () => {
      const res = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: 'platform/microbial-growth@1.0.0', inputs: {} } });
      const run = await waitForRun(owner.key, res.body.id);
      const art = (await call('GET', `/runs/${run.id}/results`, { key: owner.key })).body.artifacts.find((a: any) => a.file_name === 'outputs.json');
      return { method: 'POST', path: '/files/from-run', body: { run_id: run.id, artifact_id: art.artifact_id, expected_sha256: art.sha256 } };
    },
    state: async () => ({ files: await countOf('files') }),
    once: (b) => ({ files: b.files + 1 }),
  },
  {
    route: 'PUT /labs/{lab_id}/visibility', deps: ['postgres'], keyed: false, replaySafe: true,
    request: async () => {
      const ws = (await call('POST', '/workspaces', { key: owner.key, body: { title: `Scope ${crypto.randomUUID().slice(0, 8)}` } })).body;
      lastLab = ws.lab_id;
      return { method: 'PUT', path: `/labs/${ws.lab_id}/visibility`, body: { visibility: 'team' } };
    },
    state: async () => ({ visibility: (await testDb()('labs').where({ id: lastLab }).first()).visibility }),
    once: () => ({ visibility: 'team' }),
  },
  {
    route: 'POST /experiment-plans', deps: ['postgres', 'object_store'], keyed: true, replaySafe: true,
    request: async () => ({ method: 'POST', path: '/experiment-plans', body: await studyBody('Study plans') }),
    state: async () => ({ plans: await countOf('plans', { kind: 'experiment' }) }),
    once: (b) => ({ plans: b.plans + 1 }),
  },
  {
    route: 'POST /experiments', deps: ['postgres', 'temporal'], keyed: true, replaySafe: true,
    request: async () => {
      lastPlan = (await call('POST', '/experiment-plans', { key: owner.key, body: await studyBody('Studies') })).body;
      assert.equal(lastPlan.status, 'ready', JSON.stringify(lastPlan.findings));
      return { method: 'POST', path: '/experiments', body: { plan_id: lastPlan.plan_id, plan_sha256: lastPlan.plan_sha256 } };
    },
    state: async () => ({ experiments: await countOf('experiments'), runs: await countOf('runs'), reserved: await countOf('ledger_txns', { kind: 'reserve' }) }),
    once: (b) => ({ experiments: b.experiments + 1, runs: b.runs + 2, reserved: b.reserved + 2 }),
  },
  {
    route: 'PATCH /experiments/{experiment_id}', deps: ['postgres'], keyed: false, replaySafe: true,
    request: async () => {
      const plan = (await call('POST', '/experiment-plans', { key: owner.key, body: await studyBody('Renamed study') })).body;
      lastExperiment = (await call('POST', '/experiments', { key: owner.key, body: { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 } })).body.id;
      return { method: 'PATCH', path: `/experiments/${lastExperiment}`, body: { name: 'Renamed', goal: 'after the outage' } };
    },
    state: async () => {
      const e = await testDb()('experiments').where({ id: lastExperiment }).first();
      return { name: e.name, goal: e.goal };
    },
    once: () => ({ name: 'Renamed', goal: 'after the outage' }),
  },
  {
    route: 'POST /labs/{lab_id}/hosting-plans', deps: ['postgres'], keyed: true, replaySafe: true,
    request: async () => {
      const lab = await hostedLabOwner(undefined, owner);
      return { method: 'POST', path: `/labs/${lab.labId}/hosting-plans`, body: { release: { reference: lab.reference, sha256: lab.sha256 }, min_instances: 0, max_instances: 1 } };
    },
    state: async () => ({ plans: await countOf('plans', { kind: 'hosting' }) }),
    once: (b) => ({ plans: b.plans + 1 }),
  },
  {
    route: 'POST /hosting-requests', deps: ['postgres', 'temporal'], keyed: false, replaySafe: true,
    request: async () => {
      lastPlan = (await hostingPlan()).plan;
      return { method: 'POST', path: '/hosting-requests', body: { plan_id: lastPlan.plan_id, plan_sha256: lastPlan.plan_sha256 } };
    },
    state: async () => ({ hostings: await countOf('hostings'), planUsed: Boolean((await testDb()('plans').where({ id: lastPlan.plan_id }).first()).consumed_at) }),
    once: (b) => ({ hostings: b.hostings + 1, planUsed: true }),
    cleanup: () => retireHosting(owner.key, lastHosted),
  },
  {
    route: 'PATCH /labs/{lab_id}/hosting', deps: ['postgres', 'temporal'], keyed: false, replaySafe: true,
    request: async () => {
      const { lab, ready } = await readyHosting();
      return { method: 'PATCH', path: `/labs/${lab.labId}/hosting`, body: { revision: ready.revision, action: 'pause' } };
    },
    state: async () => ({ revision: (await hostingOf(lastHosted)).revision }),
    once: (b) => ({ revision: b.revision + 1 }),
    cleanup: () => retireHosting(owner.key, lastHosted),
  },
  {
    route: 'POST /hosted-invocation-plans', deps: ['postgres'], keyed: true, replaySafe: true,
    request: async () => {
      const { lab } = await invocationTarget();
      return { method: 'POST', path: '/hosted-invocation-plans', body: { reference: lab.reference, sha256: lab.sha256, inputs: { growth_rate: Math.random() / 2 } } };
    },
    state: async () => ({ plans: await countOf('plans', { kind: 'hosted_invocation' }) }),
    once: (b) => ({ plans: b.plans + 1 }),
  },
  {
    // A served deployment's invocation is carried by its worker: accepted with Temporal down (below).
    route: 'POST /hosted-invocations', deps: ['postgres'], keyed: false, replaySafe: true,
    request: async () => {
      const { lab } = await invocationTarget();
      lastPlan = (await call('POST', '/hosted-invocation-plans', {
        key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { reference: lab.reference, sha256: lab.sha256, inputs: { growth_rate: 0.1 } },
      })).body;
      assert.equal(lastPlan.status, 'ready', JSON.stringify(lastPlan.findings));
      return { method: 'POST', path: '/hosted-invocations', body: { plan_id: lastPlan.plan_id, plan_sha256: lastPlan.plan_sha256 } };
    },
    state: async () => ({ invocations: await countOf('hosted_invocations'), reserved: await countOf('ledger_txns', { kind: 'reserve' }) }),
    once: (b) => ({ invocations: b.invocations + 1, reserved: b.reserved + 1 }),
  },
];

/** A study of one arm, two replicates, on a fresh workspace of a lab. */
async function studyBody(title: string) {
  const ws = await publishable(title);
  return { name: title, arms: [{ label: 'a', workspace_id: ws.workspace_id, revision_id: ws.revision_id, max_runtime_seconds: 60, replicates: 2 }] };
}

for (const c of CASES) {
  for (const dep of c.deps) {
    for (const mode of ['down', 'paused'] as ProxyMode[]) {
      test(`${c.route} with ${dep} ${mode}: 503 with Retry-After, nothing left behind; once it is back the same key completes it once`, { timeout: 120_000 }, async () => {
        const req = await c.request();
        const key = c.keyed ? crypto.randomUUID() : undefined;
        const before = await c.state();
        proxies[dep].setMode(mode);
        let failed;
        try {
          failed = await viaReplica(req.method, req.path, { body: req.body, form: req.form?.(), key });
        } finally {
          proxies[dep].setMode('pass');
        }
        assert.equal(failed.status, 503, JSON.stringify(failed.body));
        assert.equal(failed.body.error.code, 'service_unavailable');
        assert.equal(failed.body.error.details.dependency, dep);
        assert.ok(Number(failed.retryAfter) > 0, 'Retry-After');
        assert.deepEqual(await c.state(), before, 'no partial state');
        const done = await retried(() => viaReplica(req.method, req.path, { body: req.body, form: req.form?.(), key }));
        assert.ok(done.status === 200 || done.status === 201, `${done.status} ${JSON.stringify(done.body)}`);
        assert.deepEqual(await c.state(), c.once(before), 'exactly one result');
        if (c.replaySafe) {
          await viaReplica(req.method, req.path, { body: req.body, form: req.form?.(), key });
          assert.deepEqual(await c.state(), c.once(before), 'sending it again makes nothing new');
        }
        await c.cleanup?.();
      });
    }
  }
}

test('POST /hosted-invocations with Temporal down or paused: a served deployment\'s invocation is accepted, carried to its ending by its worker and settled once', { timeout: 120_000 }, async () => {
  const { lab } = await invocationTarget();
  for (const mode of ['down', 'paused'] as ProxyMode[]) {
    const plan = (await call('POST', '/hosted-invocation-plans', {
      key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { reference: lab.reference, sha256: lab.sha256, inputs: { growth_rate: 0.1 } },
    })).body;
    proxies.temporal.setMode(mode);
    let inv;
    try {
      const accepted = await viaReplica('POST', '/hosted-invocations', { body: { plan_id: plan.plan_id, plan_sha256: plan.plan_sha256 } });
      assert.equal(accepted.status, 201, JSON.stringify(accepted.body));
      inv = await until(30_000, async () => {
        const r = await call('GET', `/hosted-invocations/${accepted.body.invocation_id}`, { key: owner.key });
        return ['completed', 'failed', 'cancelled', 'expired'].includes(r.body.status) ? r.body : undefined;
      });
    } finally {
      proxies.temporal.setMode('pass');
    }
    assert.equal(inv.status, 'completed', JSON.stringify(inv.error));
    const kinds = await testDb()('ledger_txns').where({ ref: `invocation:${inv.invocation_id}` }).pluck('kind');
    assert.deepEqual(kinds.sort(), ['reserve', 'settle']);
  }
});

test('POST /runs/{id}/cancel with Temporal down or paused: 503, the run is not shown as cancelling; a retry cancels it', { timeout: 180_000 }, async () => {
  for (const mode of ['down', 'paused'] as ProxyMode[]) {
    const started = await call('POST', '/runs', { key: owner.key, headers: { 'Idempotency-Key': crypto.randomUUID() }, body: { ref: slowRef, inputs: { seconds_per_window: 0.2, busy_seconds: 60 }, max_runtime_seconds: 120 } });
    assert.equal(started.status, 200, started.text);
    await driverPid(owner.key, started.body.id);
    const key = crypto.randomUUID();
    proxies.temporal.setMode(mode);
    let failed;
    try {
      failed = await viaReplica('POST', `/runs/${started.body.id}/cancel`, { key });
    } finally {
      proxies.temporal.setMode('pass');
    }
    assert.equal(failed.status, 503, JSON.stringify(failed.body));
    assert.equal(failed.body.error.details.dependency, 'temporal');
    assert.equal((await call('GET', `/runs/${started.body.id}`, { key: owner.key })).body.status, 'running', 'not cancelling with nobody to end it');
    const retry = await retried(() => viaReplica('POST', `/runs/${started.body.id}/cancel`, { key }));
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    assert.equal((await waitForRun(owner.key, started.body.id)).status, 'cancelled');
  }
});
