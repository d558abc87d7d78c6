import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { call, closeTestDb, newAccount, waitForRun } from '../helpers.ts';

after(closeTestDb);
const idem = () => ({ 'Idempotency-Key': crypto.randomUUID() });
let key = '';
before(async () => {
  key = (await newAccount({ usd: 10 })).key;
});

/** Runs a lab twice (through an approved plan, and directly) and returns both runs' results. */
async function runBothWays(name: string, inputs: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<any[]> {
  const p = await call('POST', '/run-plans', { key, body: { capability_ref: `platform/${name}@1.0.0`, inputs, max_runtime_seconds: 300, ...extra } });
  assert.equal(p.status, 200, p.text);
  assert.equal(p.body.status, 'ready', JSON.stringify(p.body.findings));
  const viaPlan = await call('POST', '/runs', { key, headers: idem(), body: { plan_id: p.body.plan_id, plan_sha256: p.body.plan_sha256 } });
  const direct = await call('POST', '/runs', { key, headers: idem(), body: { ref: `platform/${name}`, inputs, max_runtime_seconds: 300, ...extra } });
  const results: any[] = [];
  for (const started of [viaPlan, direct]) {
    assert.equal(started.status, 200, started.text);
    const run = await waitForRun(key, started.body.id, 120000);
    assert.equal(run.status, 'completed', `${name}: ${JSON.stringify(run.error)}`);
    const res = await call('GET', `/runs/${run.id}/results`, { key });
    results.push(res.body);
  }
  return results;
}

const close = (a: number, b: number, rel: number) => Math.abs(a - b) <= rel * Math.max(1, Math.abs(b));

test('GET /capabilities lists the built-in labs with contracts and digests', async () => {
  const res = await call('GET', '/capabilities?limit=100', { key });
  const refs = res.body.items.map((c: any) => c.ref);
  for (const n of ['microbial-growth', 'sir-epidemic', 'gene-toggle-switch', 'enzyme-kinetics', 'predator-prey']) assert.ok(refs.includes(`platform/${n}@1.0.0`), n);
  for (const c of res.body.items.filter((x: any) => x.ref.startsWith('platform/'))) {
    assert.match(c.package_sha256, /^sha256:[0-9a-f]{64}$/);
    assert.ok(c.outputs.length > 0);
  }
  // Each input as its lab.yaml declares it, to fill it in without reading the manifest.
  const beta = res.body.items.find((c: any) => c.ref === 'platform/sir-epidemic@1.0.0').inputs.find((i: any) => i.name === 'beta');
  assert.deepEqual(beta, {
    name: 'beta', value_type: 'number', required: false, description: 'Contact (transmission) rate beta (1/day).', units: '1/day', default: null,
    schema: { type: 'number', minimum: 0, maximum: 10 },
  });
});

test('microbial-growth reproduces the closed-form logistic curve set by the substrate', async () => {
  for (const r of await runBothWays('microbial-growth', { initial_biomass: 0.5, initial_substrate: 20, growth_rate: 0.4 })) {
    const k = 0.5 + 0.5 * 20;
    assert.ok(close(r.outputs.biomass, k / (1 + ((k - 0.5) / 0.5) * Math.exp(-0.4 * 24)), 1e-9));
    assert.ok(close(r.outputs.biomass + 0.5 * r.outputs.substrate, k, 1e-9), 'X + Y·S is conserved');
  }
});

test('sir-epidemic conserves S+I+R and satisfies the final-size relation', async () => {
  const N = 1e6, I0 = 100, beta = 0.6, gamma = 0.2, R0 = beta / gamma, S0 = N - I0;
  for (const r of await runBothWays('sir-epidemic', { population: N, initial_infected: I0, beta, gamma })) {
    const { susceptible: S, infected: I, recovered: R } = r.outputs;
    assert.ok(close(S + I + R, N, 1e-6), 'S + I + R = N');
    assert.ok(Math.abs(Math.log(S / S0) + R0 * (R / N)) < 1e-6, 'ln(S/S0) = -R0 R/N');
    assert.ok(Math.abs(Math.log(S / S0) + R0 * (1 - S / N)) < 1e-6, 'final size: ln(S∞/S0) = -R0 (1 - S∞/N)');
  }
});

test('enzyme-kinetics matches the integrated Michaelis–Menten (Lambert W) solution', async () => {
  const S0 = 100, vmax = 5, km = 0.5, T = 20;
  for (const r of await runBothWays('enzyme-kinetics', { initial_substrate: S0, vmax, km })) {
    const S = r.outputs.substrate;
    assert.ok(Math.abs(S0 - S + km * Math.log(S0 / S) - vmax * T) < 1e-6, 'S0 − S + Km ln(S0/S) = Vmax t');
    assert.ok(close(S, 1.9648716344023085, 1e-6));
    assert.ok(close(S + r.outputs.product, S0, 1e-9), 'S + P = S0');
    assert.ok(close(r.outputs.rate, (vmax * S) / (km + S), 1e-12));
  }
});

test('gene-toggle-switch: the SSA is reproducible by seed, and without repression its mean is α/(2γ)', async () => {
  const inputs = { alpha: 50, hill: 0, gamma: 1, initial_u: 25, initial_v: 25 };
  const [a, b] = await runBothWays('gene-toggle-switch', inputs, { seed: 1 });
  assert.deepEqual(a.outputs, b.outputs, 'equal seeds give equal results');
  assert.equal(a.provenance.seed, 1);
  for (const r of [a, b]) {
    assert.ok(Math.abs(r.outputs.mean_u - 25) < 2.5, `mean_u ${r.outputs.mean_u}`);
    assert.ok(Math.abs(r.outputs.mean_v - 25) < 2.5, `mean_v ${r.outputs.mean_v}`);
  }
  const [c] = await runBothWays('gene-toggle-switch', inputs, { seed: 2 });
  assert.notDeepEqual(c!.outputs, a.outputs, 'another seed, another trajectory');
});

test('predator-prey: two wired models and a plot model conserve the Lotka–Volterra invariant', async () => {
  const inputs = { initial_prey: 5, initial_predator: 2, alpha: 0.8, beta: 0.05, gamma: 1.2, delta: 0.04 };
  for (const r of await runBothWays('predator-prey', inputs)) {
    assert.ok(r.outputs.invariant_drift < 1e-4, `drift ${r.outputs.invariant_drift}`);
    const v0 = 0.04 * 5 - 1.2 * Math.log(5) + 0.05 * 2 - 0.8 * Math.log(2);
    assert.ok(close(r.outputs.invariant, v0, 1e-4), `V ${r.outputs.invariant} vs V0 ${v0}`);
    assert.ok(r.artifacts.some((x: any) => x.file_name === 'visuals.json'), 'the plot model\'s visuals are stored');
  }
});
