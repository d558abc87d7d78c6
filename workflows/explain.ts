import { defineQuery, setCurrentDetails, setHandler } from '@temporalio/workflow';

/**
 * The `state` query every long-lived workflow answers (the Temporal UI's Queries tab):
 * where it stands, in the API's words, from the workflow's own state, so an operator needs
 * no database to read it. Ids, statuses, counts and times only, as the metadata.
 */
export const stateQuery = defineQuery<Record<string, unknown>>('state');

/**
 * Answers `state` with `view()` and writes `details(view())` as the workflow's current
 * details (Markdown in the UI); returns the function that writes them again, for the
 * workflow to call whenever where it stands changes. Neither makes a command, so adding
 * them replays every history.
 */
export function explained<T extends Record<string, unknown>>(view: () => T, details: (v: T) => string): () => void {
  setHandler(stateQuery, view);
  const tell = () => setCurrentDetails(details(view()));
  tell();
  return tell;
}
