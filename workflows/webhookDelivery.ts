import { proxyActivities, sleep } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.ts';
import { explained } from './explain.ts';

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
  const now = { status: 'attempting' as 'attempting' | 'waiting' | 'delivered' | 'dead' | 'ended', attempt: 1, next_attempt_at: null as string | null };
  const tell = explained(() => ({ object: 'webhook_delivery', delivery_id: a.deliveryId, generation: a.generation, ...now, gives_up_at: new Date(started + a.retryForMs).toISOString() }), (v) => {
    switch (v.status) {
      case 'attempting': return `**Attempt ${v.attempt}** under way.`;
      case 'waiting': return `**Attempt ${v.attempt - 1} failed**; retry ${v.attempt} at ${v.next_attempt_at}. Dead-lettered if still failing at ${v.gives_up_at}.`;
      case 'dead': return `**Dead** after ${v.attempt} attempts: the account can list and replay it.`;
      default: return `**${v.status}** after ${v.attempt} ${v.attempt === 1 ? 'attempt' : 'attempts'}.`;
    }
  });
  const end = <S extends 'delivered' | 'dead' | 'ended'>(status: S): S => {
    now.status = status;
    tell();
    return status;
  };
  for (let attempt = 1; ; attempt++) {
    now.attempt = attempt;
    now.status = 'attempting';
    tell();
    const { done, delivered } = await acts.webhookAttempt(ref);
    if (done) return end(delivered ? 'delivered' : 'ended');
    const wait = Math.min(a.firstRetryMs * 2 ** (attempt - 1), a.maxRetryMs);
    if (Date.now() + wait - started > a.retryForMs) {
      await acts.webhookDeadLetter(ref);
      return end('dead');
    }
    now.status = 'waiting';
    now.attempt = attempt + 1;
    now.next_attempt_at = new Date(Date.now() + wait).toISOString();
    tell();
    await sleep(wait);
  }
}
