import { proxyActivities, ActivityFailure, ApplicationFailure, CancellationScope, patched, sleep } from '@temporalio/workflow';
import type { BiologyActivities, BiologyHit, FetchedRecord } from '../activities/biology/activities.ts';

type SourceId = 'uniprot' | 'pdb' | 'ncbi_nucleotide';

/**
 * A source's requests: a busy or failing source (429 with its Retry-After, 5xx, no answer)
 * is tried three times, backing off from half a second; what it refused is final.
 */
const sources = proxyActivities<BiologyActivities>({
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: '20 seconds',
  retry: { maximumAttempts: 3, initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '5 seconds' },
});
const record = proxyActivities<BiologyActivities>({ startToCloseTimeout: '30 seconds', retry: { maximumAttempts: 5 } });

/** How long a search waits for its sources: those that have not answered by then are named as timed out. */
export const SEARCH_DEADLINE_MS = 20_000;
/** Fetches started from this version on remove what they staged when they fail. */
const FETCH_DISCARDS_STAGING = 'biology-fetch-discards-staging';
/** Records fetched at once within one fetch. */
const FETCH_CONCURRENCY = 4;

/** A source that gave no hits, and why. */
export interface SourceFailure { source_id: SourceId; code: string; message: string; retry_after_seconds?: number }

function failureOf(err: unknown): { code: string; message: string; retry_after_seconds?: number } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    const details = (cause.details?.[0] ?? {}) as { retry_after_seconds?: number };
    return { code: cause.type ?? 'source_unavailable', message: cause.message, ...(details.retry_after_seconds ? { retry_after_seconds: details.retry_after_seconds } : {}) };
  }
  return { code: 'source_unavailable', message: err instanceof Error ? err.message : 'The source did not answer.' };
}

/**
 * One search across the named sources at once (a short workflow the api awaits): each
 * source's hits, normalized; a source that fails is named with its reason, and the
 * others' hits still come back.
 */
export async function biologySearchWorkflow(a: { sourceIds: SourceId[]; query: string; limit: number }): Promise<{ hits: BiologyHit[]; failures: SourceFailure[] }> {
  const answers: Array<{ hits: BiologyHit[] } | SourceFailure | undefined> = a.sourceIds.map(() => undefined);
  const scope = new CancellationScope();
  const all = scope.run(() => Promise.all(a.sourceIds.map((sourceId, i) => sources.biologySearchSource({ sourceId, query: a.query, limit: a.limit }).then(
    (hits) => { answers[i] = { hits }; },
    (err) => { answers[i] = { source_id: sourceId, ...failureOf(err) }; },
  ))));
  await Promise.race([all, sleep(SEARCH_DEADLINE_MS)]);
  scope.cancel();
  const hits: BiologyHit[] = [];
  const failures: SourceFailure[] = [];
  answers.forEach((answer, i) => {
    if (!answer) failures.push({ source_id: a.sourceIds[i]!, code: 'source_timeout', message: `${a.sourceIds[i]} did not answer within ${SEARCH_DEADLINE_MS / 1000} s.` });
    else if ('hits' in answer) hits.push(...answer.hits);
    else failures.push(answer);
  });
  return { hits, failures };
}

/** Removes what a fetch staged, also when the fetch itself was cancelled (the api stopped waiting). */
function discard(fetchId: string): Promise<number> {
  return CancellationScope.nonCancellable(() => record.discardBiologyFetch({ fetchId }));
}

/**
 * One fetch of exact records from one source (a short workflow the api awaits): every
 * record fetched and staged under the fetch (a few at a time), then all recorded as
 * resources at once. Any record that cannot be fetched as asked ends the fetch with its
 * reason, once the rest of its batch has ended, and with what it staged removed: nothing
 * recorded, nothing stored.
 */
export async function biologyFetchWorkflow(a: {
  fetchId: string; accountId: string; sourceId: SourceId; recordIds: string[]; format: string; expectedSha256: string | null;
}): Promise<{ resourceIds: string[] }> {
  // Fetches started before staging was discarded on failure end as they began: the first
  // refusal ends them at once, and what they staged goes with the daily purge.
  const discards = patched(FETCH_DISCARDS_STAGING);
  const fetched: FetchedRecord[] = [];
  for (let i = 0; i < a.recordIds.length; i += FETCH_CONCURRENCY) {
    const batch = a.recordIds.slice(i, i + FETCH_CONCURRENCY);
    const fetchOne = (recordId: string) => sources.biologyFetchRecord({ fetchId: a.fetchId, sourceId: a.sourceId, recordId, format: a.format, expectedSha256: a.expectedSha256 });
    if (!discards) {
      try {
        fetched.push(...await Promise.all(batch.map(fetchOne)));
      } catch (err) {
        throw refusal(err);
      }
      continue;
    }
    const settled = await Promise.allSettled(batch.map(fetchOne));
    const refused = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (refused) {
      await discard(a.fetchId);
      throw refusal(refused.reason);
    }
    for (const s of settled) if (s.status === 'fulfilled') fetched.push(s.value);
  }
  const recording = record.recordBiologyResources({ accountId: a.accountId, fetchId: a.fetchId, sourceId: a.sourceId, format: a.format, records: fetched });
  if (!discards) return { resourceIds: await recording };
  try {
    return { resourceIds: await recording };
  } catch (err) {
    await discard(a.fetchId);
    throw err;
  }
}

/** The fetch's ending for a record its source refused: final, with the source's reason. */
function refusal(err: unknown): ApplicationFailure {
  const f = failureOf(err);
  return ApplicationFailure.create({ type: f.code, message: f.message, nonRetryable: true, details: [f] });
}
