import type { TypedSearchAttributes } from '@temporalio/common';
import { workflowSearchAttributes } from './searchAttributes.ts';

/**
 * What a workflow says about itself in the Temporal UI (Temporal's user metadata): a
 * one-line summary (what it is, whose, which release and profile, what was reserved) and
 * details in Markdown that link the API resource and its console page. Every operator of
 * the cluster sees them, so they hold ids, references, profiles, counts and amounts only:
 * never a secret, an email, a title or an input value (test/unit/workflowMetadata.test.ts).
 */
export interface WorkflowMetadata {
  staticSummary: string;
  staticDetails: string;
  /** The summary again as the SilicoSummary search attribute (a column of the UI's list), with the account, kind and reference. */
  typedSearchAttributes: TypedSearchAttributes;
}

export interface Description {
  /** One line: "run of acme/sir@1.2.0 on cpu-small for acct_…, $0.04 reserved". */
  summary: string;
  /** The API resource it owns, under the API's base URL (`/runs/<id>`). */
  resource?: string;
  /** Its page in the console, under `/console/` (`runs/<id>`). */
  page?: string;
  /** Further lines of details (Markdown). */
  facts?: string[];
  /** Its account, kind and the lab reference or name it concerns, to search by. */
  attributes?: { account?: string; kind?: string; ref?: string };
}

/** The UI shows a summary on one line, and a Keyword search attribute holds 255 characters: longer ones are cut, never rejected. */
const SUMMARY_MAX = 200;

/** The console's root for an API base URL (`https://host/v1` → `https://host/console/`). */
export function consoleRoot(baseUrl: string): string {
  return `${baseUrl.replace(/\/v1\/?$/, '')}/console/`;
}

/** The start options that carry a workflow's summary and details. */
export function workflowMetadata(baseUrl: string, d: Description): WorkflowMetadata {
  const summary = d.summary.length > SUMMARY_MAX ? `${d.summary.slice(0, SUMMARY_MAX - 1)}…` : d.summary;
  const links = [
    d.resource ? `[API](${baseUrl}${d.resource})` : undefined,
    d.page ? `[console](${consoleRoot(baseUrl)}${d.page})` : undefined,
  ].filter(Boolean);
  return {
    staticSummary: summary,
    staticDetails: [...(d.facts ?? []), ...(links.length ? [links.join(' · ')] : [])].join('\n\n') || summary,
    typedSearchAttributes: workflowSearchAttributes({ ...d.attributes, summary }),
  };
}
