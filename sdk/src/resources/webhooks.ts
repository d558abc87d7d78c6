/** Webhooks: endpoints for signed event deliveries, the account's events, and deliveries (with replay of dead letters). */
import type { RequestOptions } from '../core/http.ts';
import type { PageRequest } from '../core/pagination.ts';
import { path } from '../core/url.ts';
import type { CursorPageBody } from '../models.ts';
import type { ListItem, QueryParams, RequestBody, ResponseBody, WithEnvelope } from '../types.ts';
import { Resource } from './resource.ts';

export type WebhookEndpoint = ListItem<'webhook_endpoint_list'>;
export type WebhookEvent = ListItem<'webhook_event_list'>;
export type WebhookDelivery = ListItem<'webhook_delivery_list'>;

export class Webhooks extends Resource {
  /** POST /webhook-endpoints: the answer carries the signing `secret`, shown this once. */
  createEndpoint(body: RequestBody<'webhook_endpoint_create'>, opts?: RequestOptions): Promise<ResponseBody<'webhook_endpoint_create'>> {
    return this.postJson('/webhook-endpoints', body, opts);
  }

  /** GET /webhook-endpoints. */
  listEndpoints(params: QueryParams<'webhook_endpoint_list'> = {}, opts?: RequestOptions): PageRequest<WebhookEndpoint, WithEnvelope<CursorPageBody<WebhookEndpoint>>> {
    return this.cursorList<WebhookEndpoint>('/webhook-endpoints', params, opts);
  }

  /** DELETE /webhook-endpoints/{endpoint_id}. */
  removeEndpoint(endpointId: string, opts?: RequestOptions): Promise<ResponseBody<'webhook_endpoint_remove'>> {
    return this.http.json({ method: 'DELETE', path: path`/webhook-endpoints/${endpointId}` }, opts);
  }

  /** POST /webhook-endpoints/{endpoint_id}/secret-rotations: a new secret (shown once); the old one signs too until the overlap ends. */
  rotateSecret(endpointId: string, body: RequestBody<'webhook_endpoint_secret_rotate'> = {}, opts?: RequestOptions): Promise<ResponseBody<'webhook_endpoint_secret_rotate'>> {
    return this.postJson(path`/webhook-endpoints/${endpointId}/secret-rotations`, body, opts);
  }

  /** GET /webhook-events: the account's events, newest first. */
  listEvents(params: QueryParams<'webhook_event_list'> = {}, opts?: RequestOptions): PageRequest<WebhookEvent, WithEnvelope<CursorPageBody<WebhookEvent>>> {
    return this.cursorList<WebhookEvent>('/webhook-events', params, opts);
  }

  /** GET /webhook-deliveries (`status: 'dead'` for the dead letters). */
  listDeliveries(params: QueryParams<'webhook_delivery_list'> = {}, opts?: RequestOptions): PageRequest<WebhookDelivery, WithEnvelope<CursorPageBody<WebhookDelivery>>> {
    return this.cursorList<WebhookDelivery>('/webhook-deliveries', params, opts);
  }

  /** POST /webhook-deliveries/{delivery_id}/replay. */
  replayDelivery(deliveryId: string, opts?: RequestOptions): Promise<ResponseBody<'webhook_delivery_replay'>> {
    return this.postJson(path`/webhook-deliveries/${deliveryId}/replay`, undefined, opts);
  }
}
