import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy, type Client } from '@temporalio/client';
import { workflowMetadata } from '../kernel/workflowMetadata.ts';
import type { Logger } from 'pino';
import type { WebhookConfig } from '../kernel/config.ts';
import type { Db } from '../storage/db/knex.ts';
import { createNotificationListener } from '../storage/db/notifications.ts';
import { markDispatched, undispatchedDeliveries } from '../storage/db/webhooks.ts';
import { CONTROL_TASK_QUEUE, webhookDeliveryWorkflowId } from '../kernel/workflowNames.ts';
import { webhookDeliveryWorkflow } from '../workflows/webhookDelivery.ts';

const BATCH = 100;
/** The sweep that catches what a notice missed (a dropped LISTEN connection, a crash between start and mark). */
const SWEEP_MS = 5000;

/**
 * Starts one delivery workflow per delivery the database recorded (the transactional
 * outbox the webhook triggers fill): woken by `silico_webhook_deliveries` and by a sweep.
 * Every worker runs one; the workflow id (`webhook-delivery-<id>-<generation>`), never
 * reused once its workflow completed, makes a second start of the same delivery a no-op,
 * so they never deliver twice.
 */
export async function startWebhookDispatcher(deps: { db: Db; client: Client; databaseUrl: string; baseUrl: string; config: WebhookConfig; log: Logger }): Promise<{ stop: () => Promise<void> }> {
  const { db, client, config, log } = deps;
  let running = false;
  let again = false;
  const sweep = async (): Promise<void> => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        const rows = await undispatchedDeliveries(db, BATCH);
        for (const row of rows) {
          try {
            await client.workflow.start(webhookDeliveryWorkflow, {
              taskQueue: CONTROL_TASK_QUEUE,
              workflowId: webhookDeliveryWorkflowId(row.id, row.generation),
              // A dispatcher that read the row before another marked it dispatched must not
              // start that generation again once its workflow has completed (by default a
              // closed id may run anew: the endpoint would get the event twice). One that
              // failed or was terminated may.
              workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
              args: [{ deliveryId: row.id, generation: row.generation, firstRetryMs: config.firstRetryMs, maxRetryMs: config.maxRetryMs, retryForMs: config.retryForMs }],
              ...workflowMetadata(deps.baseUrl, {
                attributes: { account: row.account_id, kind: 'webhook_delivery' },
                summary: `webhook delivery of ${row.event_type} to endpoint ${row.endpoint_id} for ${row.account_id}${row.generation > 1 ? ` (replay ${row.generation - 1})` : ''}`,
                facts: [`Delivery ${row.id} of event ${row.event_id}, generation ${row.generation}: retried with backoff until it is answered 2xx or ${config.retryForMs >= 3_600_000 ? `${Math.round(config.retryForMs / 3_600_000)} h` : `${Math.round(config.retryForMs / 1000)} s`} pass.`],
                resource: `/webhook-deliveries?endpoint_id=${row.endpoint_id}`,
              }),
            });
          } catch (err) {
            if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
          }
          await markDispatched(db, row.id, row.generation);
        }
        if (rows.length === BATCH) again = true;
      } while (again);
    } catch (err) {
      log.warn({ err }, 'webhook dispatch failed; the next sweep retries');
    } finally {
      running = false;
    }
  };
  const listener = await createNotificationListener(deps.databaseUrl, ['silico_webhook_deliveries']);
  listener.on('silico_webhook_deliveries', () => void sweep());
  listener.onState((up) => { if (up) void sweep(); });
  const timer = setInterval(() => void sweep(), SWEEP_MS);
  timer.unref();
  void sweep();
  return {
    async stop() {
      clearInterval(timer);
      await listener.close();
    },
  };
}
