import { workflowMetadata } from '../../kernel/workflowMetadata.ts';
import type { InvocationRow } from '../../storage/db/hostedInvocations.ts';
import { microsToUsd } from '../../storage/ledger.ts';

/** What an invocation's workflow tells operators (kernel/workflowMetadata.ts). */
export function invocationMetadata(baseUrl: string, row: Pick<InvocationRow, 'id' | 'account_id' | 'lab_id' | 'hosting_generation' | 'reference' | 'reserved_micros'>) {
  return workflowMetadata(baseUrl, {
    attributes: { account: row.account_id, kind: 'invocation', ref: row.reference },
    summary: `hosted invocation of ${row.reference} for ${row.account_id}, $${microsToUsd(row.reserved_micros)} reserved`,
    facts: [`Invocation ${row.id} on lab ${row.lab_id}'s deployment, generation ${row.hosting_generation}.`],
    resource: `/hosted-invocations/${row.id}`,
  });
}
