import type { Priority } from '@temporalio/common';

/**
 * The share of the workers an account's work gets: every workflow the api starts for an
 * account carries the account as its fairness key, and its activities (lab executions,
 * a study's batches) inherit it, so Temporal hands queued tasks of accounts with work
 * waiting out in turns, each account the same weight whatever its plan: a lone run goes
 * ahead of another account's backlog of batches (docs/decisions.md, "Fair shares").
 */
export function fairShare(account: string): Priority {
  return { fairnessKey: account, fairnessWeight: 1 };
}
