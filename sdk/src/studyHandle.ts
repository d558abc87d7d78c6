/**
 * A StudyHandle is a study's id plus the calls that act on it, the study counterpart of
 * RunHandle. A study has no event stream: waiting reads the study every `pollMs` and
 * reports its run totals whenever they change. Between calls it holds nothing but the
 * last record it read, so it is safe to keep (e.g. from a StudyTimeout) and wait again.
 */
import type { RequestOptions } from './core/http.ts';
import { sleep } from './core/retry.ts';
import { StudyTimeout } from './errors.ts';
import { isStudyFinished, type Comparison, type Experiment, type RunTotals, type StudyAnalysis } from './models.ts';
import type { WithEnvelope } from './types.ts';
import type { Experiments } from './resources/experiments.ts';

export interface StudyWaitOptions {
  /** Called with the run totals on the first read and whenever they change, with the study read. */
  onProgress?: (totals: RunTotals, study: Experiment) => void;
  /** Give up (StudyTimeout) after this long; the study's runs go on. Default: no limit. */
  timeoutMs?: number;
  /** Between reads of the study. Default 1000. */
  pollMs?: number;
  signal?: AbortSignal;
}

/** setTimeout's ceiling (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class StudyHandle {
  /** The last study record this handle read (or was created with). */
  lastSeen: Experiment | undefined;

  private readonly experiments: Experiments;
  readonly id: string;
  constructor(experiments: Experiments, id: string, lastSeen?: Experiment) {
    this.experiments = experiments;
    this.id = id;
    this.lastSeen = lastSeen;
  }

  /** Reads the study now: arms, run totals and comparison. */
  async refresh(opts?: RequestOptions): Promise<WithEnvelope<Experiment>> {
    return this.keep(await this.experiments.get(this.id, opts));
  }

  /**
   * Waits until every run of the study has ended (`completed_at` is set; a closed study
   * ends once its running runs have), reporting the run totals as they change. Resolves
   * with the study whatever its runs' endings (an arm may fail; its metrics are then
   * null). The study is read at least once, even with `timeoutMs: 0`; when `timeoutMs`
   * passes first, throws StudyTimeout carrying this handle.
   */
  async wait(options: StudyWaitOptions = {}): Promise<WithEnvelope<Experiment>> {
    const interval = options.pollMs ?? 1000;
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    let shown: string | undefined;
    for (;;) {
      const study = await this.refresh({ signal: options.signal });
      const totals = JSON.stringify(study.run_totals);
      if (totals !== shown) {
        shown = totals;
        options.onProgress?.(study.run_totals, study);
      }
      if (isStudyFinished(study)) return study;
      const left = deadline - Date.now();
      if (left <= 0) throw new StudyTimeout(this, study, options.timeoutMs ?? 0);
      await sleep(Math.min(interval, left, MAX_TIMER_MS), options.signal);
    }
  }

  /**
   * What a sensitivity or calibration study found: waits for the study to end (with
   * `options` as `wait` takes them), then its analysis (null for a study of arms).
   */
  async analysis(options: StudyWaitOptions = {}): Promise<StudyAnalysis> {
    return (await this.wait(options)).analysis;
  }

  /** The comparison across arms as it stands now (completed runs only; final once the study has finished). */
  async comparison(opts?: RequestOptions): Promise<Comparison> {
    return (await this.refresh(opts)).comparison;
  }

  /**
   * Closes the study: no new runs, queued ones are cancelled (nothing charged); running
   * ones go on unless `cancelRunning`. Deletes nothing.
   */
  async close(options: { cancelRunning?: boolean } = {}, opts?: RequestOptions): Promise<WithEnvelope<Experiment>> {
    return this.keep(await this.experiments.update(this.id, {
      status: 'closed', ...(options.cancelRunning !== undefined ? { cancel_running: options.cancelRunning } : {}),
    }, opts));
  }

  /** Detaches runs: they keep their records and charges but leave the study's totals and comparison. */
  async detach(runIds: string[], opts?: RequestOptions): Promise<WithEnvelope<Experiment>> {
    return this.keep(await this.experiments.update(this.id, { detach_run_ids: runIds }, opts));
  }

  private keep(study: WithEnvelope<Experiment>): WithEnvelope<Experiment> {
    this.lastSeen = study;
    return study;
  }
}
