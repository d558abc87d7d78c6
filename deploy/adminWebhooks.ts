import type { Db } from '../storage/db/knex.ts';
import { WEBHOOK_EVENT_TYPES, createEndpoint, getDelivery, getEndpoint, listDeliveries, listEndpoints, removeEndpoint, replayDelivery, rotateEndpointSecret, type WebhookEventType } from '../storage/db/webhooks.ts';
import { newWebhookSecret } from '../storage/webhookSecrets.ts';
import { newId } from '../storage/ids.ts';
import type { SecretsKeyring } from '../kernel/sealedSecrets.ts';
import { webhookUrlRules } from '../kernel/config.ts';
import { ApiError } from '../api/errors.ts';
import { checkWebhookUrl, deliveryView, endpointView } from '../api/webhooks/view.ts';
import { DEFAULT_OVERLAP_SECONDS } from '../api/webhooks/operations.ts';

export const WEBHOOKS_USAGE = `  webhooks add --account NS --url URL [--events a,b,...|all] [--note TEXT]   (the secret is printed once)
  webhooks list --account NS
  webhooks rotate-secret ENDPOINT_ID --account NS [--overlap-seconds N]  (the old secret also signs for N s, default 86400)
  webhooks remove ENDPOINT_ID --account NS
  webhooks deliveries --account NS [--status pending|delivered|dead]   (newest first)
  webhooks replay DELIVERY_ID --account NS       (a dead or delivered one, sent again as its next generation)
  events: ${WEBHOOK_EVENT_TYPES.join(', ')}`;

/**
 * `npm run admin -- webhooks ...`: the same endpoints the account manages through
 * /v1/webhook-endpoints, from the operator's side, under the api's URL rules (kernel/config.ts webhookUrlRules).
 */
export async function adminWebhooks(db: Db, secrets: () => SecretsKeyring, cmd: string, arg: string | undefined, o: { accountId: string; url?: string; events?: string; note?: string; overlapSeconds?: string; status?: string }, usage: (m: string) => Error): Promise<unknown> {
  switch (cmd) {
    case 'add': {
      if (!o.url) throw usage('webhooks add needs --url');
      const events = !o.events || o.events === 'all' ? [...WEBHOOK_EVENT_TYPES] : o.events.split(',').map((e) => e.trim()).filter(Boolean);
      const unknown = events.filter((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
      if (unknown.length) throw usage(`unknown events: ${unknown.join(', ')}`);
      // The api's rule: https outside the local stack, and its test-only switch refused there.
      const rules = webhookUrlRules(process.env);
      let url: string;
      try {
        url = checkWebhookUrl(o.url, rules);
      } catch (err) {
        throw err instanceof ApiError ? usage(err.message) : err;
      }
      const secret = newWebhookSecret();
      const e = await createEndpoint(db, secrets(), { id: newId('whe'), account_id: o.accountId, url, events: events as WebhookEventType[], description: o.note ?? null, secret });
      return { ...endpointView(e, secret), note: 'The secret is shown once; store it now.' };
    }
    case 'list':
      return (await listEndpoints(db, o.accountId, { limit: 1000 })).rows.map((e) => endpointView(e));
    case 'rotate-secret': {
      if (!arg || !(await getEndpoint(db, o.accountId, arg))) throw usage(`no endpoint ${arg ?? '(none given)'} of this account`);
      const overlap = o.overlapSeconds === undefined ? DEFAULT_OVERLAP_SECONDS : Number(o.overlapSeconds);
      if (!Number.isInteger(overlap) || overlap < 0) throw usage('--overlap-seconds must be a non-negative integer');
      const secret = newWebhookSecret();
      const e = (await rotateEndpointSecret(db, secrets(), o.accountId, arg, secret, overlap))!;
      return { ...endpointView(e, secret), note: 'The new secret is shown once; the previous one also signs until previous_secret_expires_at.' };
    }
    case 'remove': {
      const e = arg ? await removeEndpoint(db, o.accountId, arg) : undefined;
      if (!e) throw usage(`no endpoint ${arg ?? '(none given)'} of this account`);
      return { ...endpointView(e), removed: true };
    }
    case 'deliveries':
      if (o.status && !['pending', 'delivered', 'dead'].includes(o.status)) throw usage('--status must be pending, delivered or dead');
      return (await listDeliveries(db, o.accountId, { status: o.status ?? null, limit: 1000 })).rows.map(deliveryView);
    case 'replay': {
      const d = arg ? await getDelivery(db, o.accountId, arg) : undefined;
      if (!d) throw usage(`no delivery ${arg ?? '(none given)'} of this account`);
      const replayed = await replayDelivery(db, o.accountId, d.id);
      if (!replayed) throw usage(`delivery ${d.id} is still being attempted; replay one that is dead or delivered`);
      return deliveryView({ ...replayed, type: d.type });
    }
    default:
      throw usage(`unknown command: webhooks ${cmd}`);
  }
}
