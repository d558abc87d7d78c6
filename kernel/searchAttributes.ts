import { defineSearchAttributeKey, SearchAttributeType, TypedSearchAttributes } from '@temporalio/common';

// Keys of the custom search attributes registered at stack start (constants.ts).
export const ACCOUNT_KEY = defineSearchAttributeKey('SilicoAccount', SearchAttributeType.KEYWORD);
export const KIND_KEY = defineSearchAttributeKey('SilicoKind', SearchAttributeType.KEYWORD);
export const CAPABILITY_REF_KEY = defineSearchAttributeKey('SilicoCapabilityRef', SearchAttributeType.KEYWORD);

/**
 * Search attributes of every workflow the api starts (runs, publications, dataset
 * registrations): its account, its kind, and the lab reference or name it concerns.
 */
export function workflowSearchAttributes(a: { account: string; kind: string; ref: string }): TypedSearchAttributes {
  return new TypedSearchAttributes([
    { key: ACCOUNT_KEY, value: a.account },
    { key: KIND_KEY, value: a.kind },
    { key: CAPABILITY_REF_KEY, value: a.ref },
  ]);
}
