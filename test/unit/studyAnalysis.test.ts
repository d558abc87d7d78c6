import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createAnalysis, type Analysis } from '../../activities/studies/analysis.ts';

// The optimizer's asks depend only on the study's seed and what was told: two analysis
// processes, one of which has answered other requests first, ask the same sets batch after
// batch from the state Postgres would hold (a replayed or retried ask must ask the same).
const PARAMETERS = [{ name: 'r', low: 0.2, high: 0.6 }, { name: 's', low: 4, high: 12 }];
type Asked = Array<{ params: Record<string, number>; attrs: Record<string, unknown> }>;

async function calibrate(analysis: Analysis, batches: number): Promise<Asked[]> {
  const out: Asked[] = [];
  let last: unknown = null;
  for (let batch = 0; batch < batches; batch++) {
    const { asked } = await analysis<{ asked: Asked }>('ask', { optimizer: 'cmaes', parameters: PARAMETERS, seed: 7, batch, batch_size: 6, popsize: 6, last_batch: last });
    out.push(asked);
    last = { state: asked[0]!.attrs.cma, params: asked.map((a) => a.params), values: asked.map((a) => (a.params.r! - 0.4) ** 2 + (a.params.s! / 20 - 0.4) ** 2) };
  }
  return out;
}

test('CMA-ES asks the same sets from the same seed and tells, whichever process answers and whatever it answered before', { skip: !process.env.SILICO_ANALYSIS_PYTHON }, async () => {
  const [one, other] = [createAnalysis(process.env.SILICO_ANALYSIS_PYTHON!), createAnalysis(process.env.SILICO_ANALYSIS_PYTHON!)];
  try {
    await other('sample', { method: 'sobol', parameters: PARAMETERS.map((p) => ({ ...p, distribution: 'uniform' })), base_sample: 8, num_levels: 4, seed: 3 });
    const [a, b] = [await calibrate(one, 4), await calibrate(other, 4)];
    assert.deepEqual(a.map((x) => x.map((s) => s.params)), b.map((x) => x.map((s) => s.params)));
    assert.notDeepEqual(a[1], a[2], 'the batches move on');
  } finally {
    one.close();
    other.close();
  }
});

test('a request cancelled while the analysis process is still starting rejects for its caller and for no one else', { skip: !process.env.SILICO_ANALYSIS_PYTHON }, async () => {
  const analysis = createAnalysis(process.env.SILICO_ANALYSIS_PYTHON!);
  const unhandled: unknown[] = [];
  const hear = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', hear);
  try {
    const cancel = new AbortController();
    const asked = analysis('sample', { method: 'sobol', parameters: PARAMETERS.map((p) => ({ ...p, distribution: 'uniform' })), base_sample: 8, num_levels: 4, seed: 3 }, cancel.signal)
      .then(() => 'answered', (err: Error) => err.message);
    // Cancelled before the process has said it is ready (it imports SciPy first): the
    // caller hears at once, and nothing inside is left rejected without a handler.
    const at = Date.now();
    cancel.abort(new Error('cancelled by the study'));
    assert.equal(await asked, 'cancelled by the study');
    assert.ok(Date.now() - at < 500, 'at once, not once the process is ready');
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(unhandled, []);
    // The process serves the next request.
    const { points } = await analysis<{ points: unknown[] }>('sample', { method: 'sobol', parameters: PARAMETERS.map((p) => ({ ...p, distribution: 'uniform' })), base_sample: 8, num_levels: 4, seed: 3 });
    assert.ok(points.length > 0);
  } finally {
    process.off('unhandledRejection', hear);
    analysis.close();
  }
});
