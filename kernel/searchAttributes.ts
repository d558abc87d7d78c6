import { defineSearchAttributeKey, SearchAttributeType, TypedSearchAttributes } from '@temporalio/common';

// Keys of the custom search attributes registered at stack start (constants.ts).
export const ACCOUNT_KEY = defineSearchAttributeKey('SilicoAccount', SearchAttributeType.KEYWORD);
export const KIND_KEY = defineSearchAttributeKey('SilicoKind', SearchAttributeType.KEYWORD);
export const CAPABILITY_REF_KEY = defineSearchAttributeKey('SilicoCapabilityRef', SearchAttributeType.KEYWORD);
/** A workflow's one-line summary, as a column the Temporal UI's list can show (its static summary shows only on the workflow's page). */
export const SUMMARY_KEY = defineSearchAttributeKey('SilicoSummary', SearchAttributeType.KEYWORD);

/**
 * Search attributes of every workflow the service starts: its account, its kind, the lab
 * reference or name it concerns (where it has them), and its one-line summary.
 */
export function workflowSearchAttributes(a: { account?: string; kind?: string; ref?: string; summary?: string }): TypedSearchAttributes {
  return new TypedSearchAttributes([
    ...(a.account ? [{ key: ACCOUNT_KEY, value: a.account }] : []),
    ...(a.kind ? [{ key: KIND_KEY, value: a.kind }] : []),
    ...(a.ref ? [{ key: CAPABILITY_REF_KEY, value: a.ref }] : []),
    ...(a.summary ? [{ key: SUMMARY_KEY, value: a.summary }] : []),
  ]);
}
