import type { Connection } from '@temporalio/client';
import protoPkg from '@temporalio/proto';
import { waitFor } from './processes.ts';
import { SEARCH_ATTRIBUTES } from '../../kernel/workflowNames.ts';

/**
 * Registers the custom search attributes a namespace lacks (a cluster, or a dev server's
 * database, made by an earlier version of the stack that had fewer), then waits until the
 * frontend knows every one: its namespace cache refreshes on its own interval.
 */
export async function ensureSearchAttributes(conn: Connection, namespace: string): Promise<void> {
  const have = await conn.operatorService.listSearchAttributes({ namespace });
  const missing = Object.entries(SEARCH_ATTRIBUTES).filter(([name]) => !have.customAttributes?.[name]);
  if (missing.length) {
    await conn.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map(([name, type]) => [name, protoPkg.temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${type.toUpperCase()}` as 'INDEXED_VALUE_TYPE_KEYWORD']])),
    });
  }
  await waitFor('the search attributes', async () => {
    await conn.workflowService.describeNamespace({ namespace });
    const sa = await conn.operatorService.listSearchAttributes({ namespace });
    return Object.keys(SEARCH_ATTRIBUTES).every((n) => sa.customAttributes?.[n]);
  }, 60000);
}
