import { proxyActivities, sleep } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.ts';

/** Database trouble is retried by Temporal; an endpoint's failures are counted by the workflow itself. */
const acts = proxyActivities<WebhookActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export interface WebhookDeliveryArgs {
  deliveryId: string;
  generation: number;
  /** The wait after the first failed attempt; each later one doubles, up to maxRetryMs. */
  firstRetryMs: number;
  maxRetryMs: number;
  /** How long failures are retried before the delivery is dead-lettered. */
  retryForMs: number;
}

/**
 * One delivery of one event to one endpoint (`webhook-delivery-<id>-<generation>`):
 * attempts until the endpoint answers 2xx, backing off exponentially, for the retry
 * window; then a dead letter the account can list and replay (a replay is the next
 * generation, its own workflow). Its history grows by one attempt and one timer per
 * failure: about thirty over 24 hours with the default backoff.
 */
export async function webhookDeliveryWorkflow(a: WebhookDeliveryArgs): Promise<'delivered' | 'dead' | 'ended'> {
  const ref = { deliveryId: a.deliveryId, generation: a.generation };
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    const { done, delivered } = await acts.webhookAttempt(ref);
    if (done) return delivered ? 'delivered' : 'ended';
    const wait = Math.min(a.firstRetryMs * 2 ** (attempt - 1), a.maxRetryMs);
    if (Date.now() + wait - started > a.retryForMs) {
      await acts.webhookDeadLetter(ref);
      return 'dead';
    }
    await sleep(wait);
  }
}
