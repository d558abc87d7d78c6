import type { ToolContext } from '../tools/tool.ts';
import { errors } from '../errors.ts';
import { decodeCursor, pageBody } from '../pagination.ts';
import type { ExperimentRow } from '../../storage/db/experiments.ts';
import { listStudyRuns, type StudyRunSort } from '../../storage/db/studyRuns.ts';
import type { RunStatus } from '../../storage/db/runs.ts';
import { studyRunEntry, studySortKeys } from '../../storage/studyRunEntries.ts';

/**
 * What `sort` names, checked against the study: `position` (start order), `params.<name>`
 * for one of its parameters, `outputs.<key>` for one of a sensitivity study's outputs, or
 * `loss` for a calibration.
 */
function sortOf(e: ExperimentRow, sort: string | undefined): StudyRunSort {
  if (sort === undefined || sort === 'position') return { by: 'position' };
  const { params, outcomes } = studySortKeys(e.design);
  const [head, ...rest] = sort.split('.');
  const name = rest.join('.');
  if (head === 'params' && params.includes(name)) return { by: 'param', name };
  if (head === 'outputs' && e.design?.kind === 'sensitivity' && outcomes.includes(name)) return { by: 'outcome', key: name };
  if (sort === 'loss' && e.design && e.design.kind !== 'sensitivity') return { by: 'outcome', key: 'loss' };
  const accepted = ['position', ...params.map((p) => `params.${p}`), ...(e.design?.kind === 'sensitivity' ? outcomes.map((k) => `outputs.${k}`) : outcomes)];
  throw errors.validation('invalid_sort', `This study's runs sort by ${accepted.join(', ')}.`, 'sort', { accepted });
}

/** GET /experiments/{experiment_id}/runs: a page of the study's runs with their sets and what they told. */
export async function listRunsOfStudy(input: Record<string, any>, ctx: ToolContext, e: ExperimentRow) {
  const sort = sortOf(e, input.sort);
  const page = await listStudyRuns(ctx.deps.db, e.id, {
    sort, direction: input.order ?? 'asc', status: (input.status ?? undefined) as RunStatus | undefined,
    limit: input.limit ?? ctx.deps.config.limits.pageDefault, after: decodeCursor(input.cursor, ['nullableNumber', 'offset']) as [number | null, number] | null,
  });
  const arms = e.arms.map((a) => a.label);
  return { body: pageBody(page, page.rows.map((r) => studyRunEntry(e.design, arms, r))) };
}
