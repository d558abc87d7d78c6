/** How webhook endpoints, events and deliveries are shown (API and operator CLI), and what an endpoint URL may be. */
import { errors } from '../errors.ts';
import { isoTime } from '../../storage/ids.ts';
import type { WebhookDeliveryRow, WebhookEndpointRow, WebhookEventRow } from '../../storage/db/webhooks.ts';
import { literalNotPublic } from '../../kernel/http/guardedLookup.ts';
import type { WebhookUrlRules } from '../../kernel/config.ts';

export function endpointView(e: WebhookEndpointRow, secret?: string) {
  return {
    object: 'webhook_endpoint', endpoint_id: e.id, url: e.url, events: e.events, description: e.description,
    ...(secret ? { secret } : {}),
    previous_secret_expires_at: e.previous_secret_expires_at && new Date(e.previous_secret_expires_at).getTime() > Date.now() ? isoTime(e.previous_secret_expires_at) : null,
    created_at: isoTime(e.created_at), updated_at: isoTime(e.updated_at),
  };
}

export const eventView = (e: WebhookEventRow) => ({ object: 'webhook_event', id: e.id, type: e.type, created_at: isoTime(e.created_at), data: e.data });

export function deliveryView(d: WebhookDeliveryRow & { type?: string }) {
  return {
    object: 'webhook_delivery', delivery_id: d.id, event_id: d.event_id, event_type: d.type ?? null, endpoint_id: d.endpoint_id, status: d.status,
    attempts: d.attempts, last_status: d.last_status, last_error: d.last_error, last_attempt_at: isoTime(d.last_attempt_at),
    delivered_at: isoTime(d.delivered_at), dead_at: isoTime(d.dead_at), replays: d.generation - 1, created_at: isoTime(d.created_at),
  };
}

/**
 * An endpoint must be https without credentials (plain http only in the local stack), and
 * public unless this is the test configuration.
 */
export function checkWebhookUrl(raw: string, rules: WebhookUrlRules): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw errors.validation('parameter_invalid_format', 'url is not a valid URL.', 'url');
  }
  if (!['https:', 'http:'].includes(url.protocol)) throw errors.validation('parameter_invalid_format', 'url must be http or https.', 'url');
  if (url.protocol === 'http:' && !rules.allowHttp) {
    throw errors.validation('url_not_https', 'url must be https: deliveries carry your events and are sent only over TLS.', 'url');
  }
  if (url.username || url.password) throw errors.validation('parameter_invalid_format', 'url must not carry credentials.', 'url');
  if (!rules.allowPrivateAddresses && (literalNotPublic(url) || /^(localhost|.*\.localhost|.*\.internal|.*\.local)$/i.test(url.hostname))) {
    throw errors.validation('url_not_public', 'url must reach a public address: deliveries never go to private, loopback or link-local addresses.', 'url');
  }
  return url.toString();
}
