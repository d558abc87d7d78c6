/**
 * Output schemas of the webhook routes: endpoints (endpointView, with its secret only
 * where one was just made), events (eventView) and deliveries (deliveryView). An
 * event's `data` is written by the database triggers of migration 027, one shape per
 * event type, and is the same `data` a receiver gets in the signed delivery.
 */
import { arr, count, cursorPage, id, nullableStr, nullableTime, nullableUsd, obj, record, str, time, uuid, type JsonSchema } from '../schemas/common.ts';
import { RUN_STATUSES, runError } from '../runs/schemas.ts';
import { EXPERIMENT_STATUSES } from '../experiments/schemas.ts';
import { HOSTING_STATUSES } from '../hosting/schemas.ts';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../storage/db/webhooks.ts';

/** storage/db/webhooks.ts WebhookDeliveryRow status (the table's check constraint). */
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'dead'] as const;

const eventType = { enum: [...WEBHOOK_EVENT_TYPES] };
const endpointId = id('whe');
const eventId = id('evt');
/** Amounts the triggers write as `settled_micros / 1e6`: null until settled. */
const settledUsd: JsonSchema = { ...nullableUsd, description: 'US dollars charged; null if not settled when the event was written.' };

const endpointProperties: Record<string, JsonSchema> = {
  object: { const: 'webhook_endpoint' },
  endpoint_id: endpointId,
  url: { type: 'string', format: 'uri', description: 'Where deliveries are POSTed (normalised).' },
  events: arr(eventType, { minItems: 1, description: 'The event types delivered to it.' }),
  description: nullableStr(500),
  previous_secret_expires_at: {
    ...nullableTime,
    description: 'While a rotation overlaps: when the previous secret stops signing (until then deliveries carry two v1= values). Null otherwise.',
  },
  created_at: time,
  updated_at: time,
};

/** An endpoint as lists and removal show it: never its secret. */
export const webhookEndpoint: JsonSchema = record(endpointProperties);

/** POST /webhook-endpoints and a secret rotation: the endpoint with the secret just made. */
export const webhookEndpointWithSecret: JsonSchema = record({
  ...endpointProperties,
  secret: {
    type: 'string', pattern: '^whsec_[A-Za-z0-9_-]+$',
    description: 'The signing secret (HMAC-SHA256 key of Silico-Signature). Shown only in this answer, on create and on rotate: no route shows it again, so store it now.',
  },
});

/** DELETE /webhook-endpoints/{endpoint_id}: the endpoint as it was, marked removed. */
export const webhookEndpointRemoved: JsonSchema = record({
  ...endpointProperties,
  removed: { const: true },
  removed_at: time,
});

export const webhookEndpointPage: JsonSchema = cursorPage(webhookEndpoint);

/** A run's `error` as stored (null when it completed). */
const nullableRunError: JsonSchema = { oneOf: [{ type: 'null' }, runError] };

/** `data` of run.completed / run.failed / run.cancelled / run.timed_out: the run at its end. */
const runEventData = obj({
  object: { const: 'run' },
  run_id: uuid,
  status: { enum: RUN_STATUSES.filter((s) => ['completed', 'failed', 'cancelled', 'timed_out'].includes(s)) },
  ref: str(300),
  resolved_ref: str(300),
  package_sha256: str(80),
  error: nullableRunError,
  experiment_id: nullableStr(64),
  credits_settled: settledUsd,
  finished_at: time,
}, ['object', 'run_id', 'status', 'ref', 'resolved_ref', 'package_sha256', 'error', 'experiment_id', 'credits_settled', 'finished_at']);

/** `data` of experiment.completed. */
const experimentEventData = obj({
  object: { const: 'experiment' },
  experiment_id: str(64),
  name: { type: 'string' },
  status: { enum: [...EXPERIMENT_STATUSES] },
  completed_at: time,
}, ['object', 'experiment_id', 'name', 'status', 'completed_at']);

/** `data` of hosting.status_changed. */
const hostingEventData = obj({
  object: { const: 'hosting' },
  lab_id: str(64),
  reference: { type: 'string' },
  status: { enum: [...HOSTING_STATUSES] },
  previous_status: { enum: [...HOSTING_STATUSES, null], description: 'Null when the hosting was just requested.' },
  revision: { type: 'integer', minimum: 1 },
}, ['object', 'lab_id', 'reference', 'status', 'previous_status', 'revision']);

/** `data` of invocation.completed. */
const invocationEventData = obj({
  object: { const: 'hosted_invocation' },
  invocation_id: str(64),
  reference: { type: 'string' },
  status: { const: 'completed' },
  credits_settled: settledUsd,
  finished_at: time,
}, ['object', 'invocation_id', 'reference', 'status', 'credits_settled', 'finished_at']);

function eventOf(types: WebhookEventType[], data: JsonSchema): JsonSchema {
  return record({
    object: { const: 'webhook_event' },
    id: { ...eventId, description: 'The event\'s id: also the Silico-Event-Id of its deliveries, the same on a replay (deduplicate on it).' },
    type: { enum: types },
    created_at: time,
    data: { ...data, description: 'The event\'s payload, exactly as delivered.' },
  });
}

/** One event, by type: what was (or would be) delivered. */
export const webhookEvent: JsonSchema = {
  oneOf: [
    eventOf(['run.completed', 'run.failed', 'run.cancelled', 'run.timed_out'], runEventData),
    eventOf(['experiment.completed'], experimentEventData),
    eventOf(['hosting.status_changed'], hostingEventData),
    eventOf(['invocation.completed'], invocationEventData),
  ],
};

export const webhookEventPage: JsonSchema = cursorPage(webhookEvent);

/** One delivery of an event to an endpoint (deliveryView). */
export const webhookDelivery: JsonSchema = record({
  object: { const: 'webhook_delivery' },
  delivery_id: id('whd'),
  event_id: eventId,
  event_type: eventType,
  endpoint_id: endpointId,
  status: {
    enum: [...WEBHOOK_DELIVERY_STATUSES],
    description: '`pending` while being attempted (with retries), `delivered` on a 2xx answer, `dead` once the retry window ended (replay it).',
  },
  attempts: { ...count, description: 'Attempts so far, over every replay.' },
  last_status: { type: ['integer', 'null'], description: 'The HTTP status of the last attempt; null before one or when no answer came.' },
  last_error: { type: ['string', 'null'], description: 'Why the last attempt failed; null when it succeeded or none was made.' },
  last_attempt_at: nullableTime,
  delivered_at: nullableTime,
  dead_at: nullableTime,
  replays: { ...count, description: 'How many times it was replayed.' },
  created_at: time,
});

export const webhookDeliveryPage: JsonSchema = cursorPage(webhookDelivery);
