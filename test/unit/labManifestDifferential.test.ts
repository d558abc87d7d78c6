import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { labCaseArb } from '../differential/generator.ts';
import { JudgePool } from '../differential/judges.ts';
import { ServiceChecks } from '../differential/service.ts';
import { describe, FAILURES, judgeCase, type Outcome, type Sides } from '../differential/compare.ts';

/**
 * Differential test of lab.yaml (issue 43): generated lab source trees judged by the
 * runtime (biosimulant's validate_lab_source, the service's pack step, the start of a
 * run) and by the service's plan-time checks; test/differential/compare.ts says which
 * verdict pairs fail. Fixed seed and two hundred labs here, so every run judges the same
 * ones; `npm run bench:manifests` judges 100,000 from any seed.
 */
const SEED = 43;
const RUNS = 200;
const python = process.env.SILICO_PYTHON;

test('generated labs: the service blocks none the runtime accepts and runs none it refuses', { skip: python ? false : 'needs SILICO_PYTHON, the lab runtime (npm test sets it)' }, async () => {
  const sides: Sides = { runtime: new JudgePool(python!, 1), service: new ServiceChecks(python!, 1) };
  const tally = new Map<Outcome, number>();
  try {
    await fc.assert(fc.asyncProperty(labCaseArb, async (lab) => {
      const judged = await judgeCase(sides, lab);
      tally.set(judged.outcome, (tally.get(judged.outcome) ?? 0) + 1);
      // fast-check shrinks a failing lab; the message is the smallest one's.
      assert.ok(!FAILURES.has(judged.outcome), describe(lab, judged));
    }), { seed: SEED, numRuns: RUNS, includeErrorInReport: true });
  } finally {
    await sides.runtime.close();
    sides.service.close();
  }
  // Not vacuous: the runtime accepts many of the labs and refuses many.
  const count = (...o: Outcome[]) => o.reduce((n, x) => n + (tally.get(x) ?? 0), 0);
  const accepted = count('both_accept', 'both_accept_unstartable', 'plan_blocks_unstartable', 'plan_blocks_runnable', 'gate_refuses');
  const refused = count('both_refuse', 'caught_at_gate', 'caught_at_start', 'runs_unjudged');
  assert.ok(accepted >= RUNS / 4 && refused >= RUNS / 4, `the generator lost its mix: ${JSON.stringify(Object.fromEntries(tally))}`);
});
