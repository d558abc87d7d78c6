import { Context } from '@temporalio/activity';
import { parse as parseCsv } from 'csv-parse/sync';
import pLimit from 'p-limit';
import type { Db } from '../../storage/db/knex.ts';
import type { ObjectStore } from '../../storage/objects.ts';
import { blobKey } from '../../storage/objects.ts';
import { cancelQueuedExperimentRuns, completeExperiment, getExperiment, type ExperimentRow } from '../../storage/db/experiments.ts';
import { listArtifacts, runOutputs } from '../../storage/db/runs.ts';
import {
  assignBatch, batchRunIds, batchRunPage, firstCompletedRun, hasPoints, pointOutcomePages, pointsEnded, progressOfPhase, runsAwaitingPoints, setStudyAnalysis, studyPoints,
  tellPoints, untoldPointPages, type StudyPoint,
} from '../../storage/db/studies.ts';
import { outputKey, PETAB_EXPORT, PETAB_PHASE, type PetabCalibrationDesign, type PetabStartEnd, type SensitivityDesign, type StudyDesign } from '../../storage/studyDesign.ts';
import { storeStudyArtifacts } from '../../storage/studyArtifacts.ts';
import { SENSITIVITY_METHODS } from '../../kernel/sensitivityMethods.ts';
import type { Analysis } from './analysis.ts';
import { calibrationLoss, converged, seriesAt, summarise, type Series } from './outcomes.ts';
import { calibrationAnalysis, sensitivityAnalysis } from './findings.ts';
import { readSensitivitySample } from './sensitivitySample.ts';
import { askPetab, petabAnalysis, tellPetab } from './petab.ts';
import { petabExportZip } from './petabExport.ts';

type Asked = Array<{ params: Record<string, number>; attrs: Record<string, unknown> }>;

/** Where a study stands, for its workflow's details: its runs in all, and those ended so far. */
export interface StudyStanding {
  runs: number;
  completed: number;
  notCompleted: number;
}

/** A slice of a batch's runs, in the order they were given their sets. */
export interface RunPage { offset: number; limit: number }

/** Runs whose outcomes one tell reads at once. */
const TELL_CONCURRENCY = 8;

/**
 * Runs an activity's work heartbeating every few seconds while it is alive, so a worker
 * that dies mid-batch is noticed within the heartbeat timeout and the work retried
 * elsewhere; a cancel reaches the work as `signal` (it stops the analysis process).
 */
async function alive<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat();
  const timer = setInterval(() => ctx.heartbeat(), 5_000);
  try {
    return await work(ctx.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}

/** A study's activities on the control queue: ask a batch, tell its results, store what it found. */
export function createStudyActivities(deps: { db: Db; objects: ObjectStore; analysis: Analysis; maxConcurrentRuns: number }) {
  const { db, objects, analysis } = deps;

  async function studyOf(experimentId: string): Promise<ExperimentRow & { design: StudyDesign }> {
    const e = await getExperiment(db, experimentId);
    if (!e?.design) throw new Error(`no study ${experimentId} with a design`);
    return e as ExperimentRow & { design: StudyDesign };
  }

  /** The run's time series of each named output, from its CSV artifacts in the object store. */
  async function seriesOf(runId: string, outputs: string[]): Promise<Map<string, Series>> {
    const out = new Map<string, Series>();
    const artifacts = (await listArtifacts(db, runId)).filter((a) => a.format === 'csv' && outputs.includes(a.role));
    for (const a of artifacts) {
      const rows: string[][] = parseCsv(await objects.getBytes(blobKey(a.sha256)), { from_line: 2, skip_empty_lines: true });
      const t: number[] = [];
      const y: number[] = [];
      for (const [tt, v] of rows) {
        if (v === '' || v === undefined) continue;
        t.push(Number(tt));
        y.push(Number(v));
      }
      out.set(a.role, { t, y });
    }
    return out;
  }

  /**
   * The times each `series` output's indices are stated at: its design's, or the series'
   * own times as the study's first completed run (by sample order) gave them, the same
   * whichever tell or finish asks.
   */
  async function seriesGrids(experimentId: string, d: SensitivityDesign): Promise<Map<string, number[]>> {
    const grids = new Map<string, number[]>();
    const own = d.outputs.filter((o) => o.summary === 'series' && !o.times);
    const first = own.length ? await firstCompletedRun(db, experimentId) : undefined;
    const series = first ? await seriesOf(first, own.map((o) => o.output)) : new Map<string, Series>();
    for (const o of d.outputs) if (o.summary === 'series') grids.set(o.output, o.times ?? series.get(o.output)?.t ?? []);
    return grids;
  }

  /** The best loss after each batch, in batch order (told points only). */
  function bestByBatch(points: StudyPoint[]): number[] {
    const batches = [...new Set(points.map((p) => p.batch))].sort((a, b) => a - b);
    let best = Infinity;
    return batches.map((b) => {
      for (const p of points) if (p.batch === b && typeof p.outcome?.loss === 'number') best = Math.min(best, p.outcome.loss);
      return best;
    });
  }

  return {
    /** The study's owner, its lab's reference and how many runs it may keep in flight. */
    async studySchedule(experimentId: string): Promise<{ account: string; ref: string; window: number }> {
      const e = await studyOf(experimentId);
      return { account: e.account_id, ref: e.arms[0]!.resolved_ref, window: Math.max(1, deps.maxConcurrentRuns) };
    },

    /**
     * The run ids of batch `batch`, each given its parameter set: the sets given before
     * when this batch was asked already; else asked now (the whole sample of a
     * sensitivity study at once; the optimizer's next sets for a calibration, from every
     * trial told so far) and given to waiting runs. None when the study is done: closed,
     * its runs all given, or (a calibration) converged. With `page`, only those of the
     * batch's runs (a 100,000-run sample's ids would outgrow a Temporal payload), and how
     * many the batch has.
     */
    async studyAsk(experimentId: string, batch: number, page?: RunPage): Promise<{ runIds: string[]; runs?: number; standing: StudyStanding }> {
      return alive(async (signal) => {
        // A batch given before (each page of a 100,000-run batch asks again) is its ids alone: that page of them, when paged.
        if (page) {
          const given = await batchRunPage(db, experimentId, batch, page);
          if (given.runs) return { ...given, standing: await standingOf(experimentId) };
        } else {
          const given = await batchRunIds(db, experimentId, batch);
          if (given.length) return { runIds: given, standing: await standingOf(experimentId) };
        }
        const { runIds } = await ask(experimentId, batch, signal);
        const standing = await standingOf(experimentId);
        return page ? { runIds: runIds.slice(page.offset, page.offset + page.limit), runs: runIds.length, standing } : { runIds, standing };
      });
    },

    /**
     * Records what each run of the batch gave: a sensitivity study's output numbers, or a
     * calibration's fitted values and loss; a run that did not complete tells its status.
     */
    async studyTell(experimentId: string, batch: number): Promise<void> {
      return alive(() => tell(experimentId, batch));
    },

    /**
     * Ends the study: runs never given a parameter set end as cancelled (nothing charged,
     * their reservations released), the analysis of what was found is stored with its
     * files, and the study is marked completed once every run has ended.
     */
    async finishStudy(experimentId: string): Promise<void> {
      return alive((signal) => finish(experimentId, signal));
    },
  };

  /** The study's runs in all, and how many of those given a parameter set have ended so far. */
  async function standingOf(experimentId: string): Promise<StudyStanding> {
    const e = await studyOf(experimentId);
    return { runs: e.design.run_count, ...await pointsEnded(db, experimentId) };
  }

  /** A batch not given before, asked now and given to waiting runs: none when the study is done. */
  async function ask(experimentId: string, batch: number, signal: AbortSignal): Promise<{ runIds: string[] }> {
    const e = await studyOf(experimentId);
    const waiting = await runsAwaitingPoints(db, experimentId);
    if (e.status === 'closed' || !waiting) return { runIds: [] };
    const d = e.design;
    let asked: Asked;
    if (d.kind === 'sensitivity') {
      // Its one batch is its whole sample: once given, there is no other to ask.
      if (await hasPoints(db, experimentId)) return { runIds: [] };
      const { points: sample } = await analysis<{ points: number[][] }>('sample', {
        method: d.method, parameters: d.parameters, base_sample: d.base_sample, num_levels: d.num_levels, seed: d.seed,
        sample_options: SENSITIVITY_METHODS[d.method].sampleOptions ?? {},
      }, signal);
      asked = sample.map((row) => ({ params: Object.fromEntries(d.parameters.map((p, i) => [p.name, row[i]!])), attrs: {} }));
    } else if (d.kind === 'petab_calibration') {
      const points = await studyPoints(db, experimentId);
      // The profiles wait until every start is told: they begin at the best end point.
      if (points.some((p) => !p.outcome)) return { runIds: [] };
      asked = await askPetab(analysis, d, points, batch, signal);
    } else {
      const points = await studyPoints(db, experimentId);
      if (converged(d.stop, bestByBatch(points))) return { runIds: [] };
      const told = points.filter((p) => p.outcome);
      const lossOf = (p: StudyPoint) => (typeof p.outcome!.loss === 'number' ? p.outcome!.loss : null);
      // CMA-ES resumes from the state kept with its last batch's first set; TPE from every trial.
      const lastBatch = told.length ? told.filter((p) => p.batch === told.at(-1)!.batch) : [];
      ({ asked } = await analysis<{ asked: Asked }>('ask', {
        optimizer: d.optimizer, parameters: d.parameters, seed: d.seed, batch, batch_size: Math.min(d.batch_size, waiting), popsize: d.batch_size,
        ...(d.optimizer === 'cmaes'
          ? { last_batch: lastBatch.length ? { state: lastBatch[0]!.attrs.cma, params: lastBatch.map((p) => p.params), values: lastBatch.map(lossOf) } : null }
          : { trials: told.map((p) => ({ params: p.params, value: lossOf(p) })) }),
      }, signal));
    }
    const assigned = await assignBatch(db, experimentId, batch, asked, e.arms[0]!.inputs);
    return { runIds: assigned.map((a) => a.run_id) };
  }

  async function tell(experimentId: string, batch: number): Promise<void> {
    const e = await studyOf(experimentId);
    const d = e.design;
    // A few runs' series read side by side: one after another, a batch's reads are a round
    // trip each to Postgres and the object store while the next batch waits.
    const limit = pLimit(TELL_CONCURRENCY);
    const grids = d.kind === 'sensitivity' ? await seriesGrids(experimentId, d) : new Map<string, number[]>();
    const seriesOutputs = d.kind === 'sensitivity' ? d.outputs.filter((o) => o.summary !== 'value').map((o) => o.output) : [];
    // A page of the batch at a time (a sensitivity study's batch is its whole sample): the
    // same memory whatever the study's size.
    for await (const pending of untoldPointPages(db, experimentId, batch)) {
      // Every run's outputs record in a few statements, not one each; series only where a summary needs them.
      const outputsOf = d.kind === 'calibration' ? new Map() : await runOutputs(db, pending.map((p) => p.run_id));
      const told = await Promise.all(pending.map((p) => limit(async (): Promise<{ idx: number; outcome: Record<string, unknown> }> => {
        if (d.kind === 'petab_calibration') {
          const ended = p.status === 'completed' ? [] : (await progressOfPhase(db, p.run_id, PETAB_PHASE)).flatMap((e) => (e.start_end ? [e.start_end as PetabStartEnd] : []));
          return { idx: p.idx, outcome: tellPetab(p.status, outputsOf.get(p.run_id) ?? null, ended) };
        }
        if (p.status !== 'completed') return { idx: p.idx, outcome: { failed: p.status } };
        if (d.kind === 'sensitivity') {
          const outputs = outputsOf.get(p.run_id) as Record<string, unknown> | null | undefined;
          const series = seriesOutputs.length ? await seriesOf(p.run_id, seriesOutputs) : new Map<string, Series>();
          return { idx: p.idx, outcome: Object.fromEntries(d.outputs.map((o) => {
            const s = series.get(o.output);
            // A series output tells its values at the grid; a run without the series tells null, and the study states no index, as for a run that failed.
            if (o.summary === 'series') return [outputKey(o), s ? seriesAt(s, grids.get(o.output)!) : null];
            return [outputKey(o), summarise(o.summary, outputs?.[o.output], s)];
          })) };
        }
        const fit = calibrationLoss(d, await seriesOf(p.run_id, d.observations.map((o) => o.output)));
        return { idx: p.idx, outcome: fit ?? { failed: 'no_series' } };
      })));
      await tellPoints(db, experimentId, told);
    }
  }

  async function finish(experimentId: string, signal: AbortSignal): Promise<void> {
    await cancelQueuedExperimentRuns(db, experimentId, { unassigned: true });
    const e = await studyOf(experimentId);
    const d = e.design;
    const call: Analysis = (command, request) => analysis(command, request, signal);
    let found: Record<string, unknown>;
    if (d.kind === 'sensitivity') {
      // Read packed, a page at a time: a few numbers a run in the worker, whatever the study's size.
      const grids = await seriesGrids(experimentId, d);
      found = await sensitivityAnalysis(call, d, await readSensitivitySample(pointOutcomePages(db, experimentId), d, grids), grids);
    } else {
      const points = await studyPoints(db, experimentId);
      found = d.kind === 'petab_calibration' ? petabAnalysis(d, points, { closed: e.status === 'closed' })
        : await calibrationAnalysis(call, d, points, { closed: e.status === 'closed', converged: converged(d.stop, bestByBatch(points)) });
    }
    await setStudyAnalysis(db, experimentId, found);
    // A PEtab calibration that found a best point exports as a PEtab problem nominal there.
    const best = e.design.kind === 'petab_calibration' ? (found.best as { parameters: Record<string, number> } | null) : null;
    const more = best ? [{ file_name: PETAB_EXPORT, content_type: 'application/zip', format: 'zip', bytes: await petabExportZip(objects, e.design as PetabCalibrationDesign, best.parameters) }] : [];
    await storeStudyArtifacts({ db, objects }, e, found, more);
    await completeExperiment(db, experimentId);
  }
}

export type StudyActivities = ReturnType<typeof createStudyActivities>;
