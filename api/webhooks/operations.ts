import type { ToolContext, ToolDef } from '../tools/tool.ts';
import { arr, cursor, id, limit, nullableStr, obj, str } from '../schemas/common.ts';
import { errors } from '../errors.ts';
import { decodeCursor, pageBody } from '../pagination.ts';
import { isoTime, newId } from '../../storage/ids.ts';
import {
  WEBHOOK_EVENT_TYPES, createEndpoint, getDelivery, getEndpoint, listDeliveries, listEndpoints, listEvents, removeEndpoint, replayDelivery, rotateEndpointSecret,
  type WebhookEndpointRow,
} from '../../storage/db/webhooks.ts';
import { newWebhookSecret } from '../../storage/webhookSecrets.ts';
import { checkWebhookUrl, deliveryView, endpointView, eventView } from './view.ts';
import { webhookDelivery, webhookDeliveryPage, webhookEndpointPage, webhookEndpointRemoved, webhookEndpointWithSecret, webhookEventPage } from './schemas.ts';

const endpointPath = { endpoint_id: id('whe') };
const eventType = { enum: [...WEBHOOK_EVENT_TYPES] };
/** The overlap during which a rotated-out secret still signs (one day unless asked). */
export const DEFAULT_OVERLAP_SECONDS = 86_400;

export const webhookTools: ToolDef[] = [
  {
    name: 'webhook_endpoint_create', scope: 'runs:write', readOnly: false,
    description: 'Register an HTTPS endpoint for signed event deliveries (run.completed, run.failed, ...). The answer shows its signing secret once; deliveries carry Silico-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>." + body>.',
    input: { body: obj({ url: str(2000, { minLength: 1, format: 'uri' }), events: arr(eventType, { minItems: 1, maxItems: WEBHOOK_EVENT_TYPES.length, uniqueItems: true }), description: nullableStr(500) }, ['url', 'events']) },
    output: webhookEndpointWithSecret,
  },
  { name: 'webhook_endpoint_list', scope: 'runs:read', readOnly: true, description: 'List the account\'s webhook endpoints (secrets are never shown again).', input: { query: { limit, cursor } }, output: webhookEndpointPage },
  {
    name: 'webhook_endpoint_remove', scope: 'runs:write', readOnly: false, idempotent: true, destructive: true,
    description: 'Remove a webhook endpoint: nothing more is sent to it; its deliveries stay listed.', input: { path: endpointPath },
    output: webhookEndpointRemoved,
  },
  {
    name: 'webhook_endpoint_secret_rotate', scope: 'runs:write', readOnly: false, destructive: true,
    description: 'Give an endpoint a new signing secret (shown once); the previous one also signs, as a second v1= value, until the overlap ends.',
    input: { path: endpointPath, body: obj({ overlap_seconds: { type: 'integer', minimum: 0, maximum: 7 * 86_400 } }) },
    output: webhookEndpointWithSecret,
  },
  {
    name: 'webhook_event_list', scope: 'runs:read', readOnly: true, description: 'List the account\'s events, newest first (or oldest first after a cursor with order=asc): what was or would be delivered.',
    input: { query: { type: { enum: [...WEBHOOK_EVENT_TYPES, null] }, order: { enum: ['asc', 'desc', null] }, limit, cursor } },
    output: webhookEventPage,
  },
  {
    name: 'webhook_delivery_list', scope: 'runs:read', readOnly: true, description: 'List deliveries to the account\'s endpoints, newest first; status=dead lists the dead letters.',
    input: { query: { status: { enum: ['pending', 'delivered', 'dead', null] }, endpoint_id: nullableStr(64), limit, cursor } },
    output: webhookDeliveryPage,
  },
  {
    name: 'webhook_delivery_replay', scope: 'runs:write', readOnly: false,
    description: 'Deliver a dead (or delivered) event again to its endpoint, with a fresh retry window; the event keeps its id, so a receiver that already has it can drop it.',
    input: { path: { delivery_id: id('whd') } },
    output: webhookDelivery,
  },
];

async function ownedEndpoint(ctx: ToolContext, endpointId: string): Promise<WebhookEndpointRow> {
  const e = await getEndpoint(ctx.deps.db, ctx.caller.account.id, endpointId);
  if (!e) throw errors.notFound('webhook_endpoint_not_found', 'webhook endpoint', 'endpoint_id');
  return e;
}

const HANDLERS: Record<string, ToolDef['handler']> = {
  async webhook_endpoint_create(input, ctx) {
    const url = checkWebhookUrl(input.url, ctx.deps.config.webhooks);
    const secret = newWebhookSecret();
    const e = await createEndpoint(ctx.deps.db, ctx.deps.config.secrets, { id: newId('whe'), account_id: ctx.caller.account.id, url, events: input.events, description: input.description ?? null, secret });
    return {
      body: endpointView(e, secret),
      warnings: [{ code: 'secret_shown_once', message: 'Keep the secret now: it is not shown again (rotate it to get a new one).' }],
    };
  },
  async webhook_endpoint_list(input, ctx) {
    const page = await listEndpoints(ctx.deps.db, ctx.caller.account.id, { limit: input.limit ?? ctx.deps.config.limits.pageDefault, after: decodeCursor(input.cursor, ['text', 'text']) });
    return { body: pageBody(page, page.rows.map((e) => endpointView(e))) };
  },
  async webhook_endpoint_remove(input, ctx) {
    const e = await removeEndpoint(ctx.deps.db, ctx.caller.account.id, input.endpoint_id);
    if (!e) throw errors.notFound('webhook_endpoint_not_found', 'webhook endpoint', 'endpoint_id');
    return { body: { ...endpointView(e), removed: true, removed_at: isoTime(e.removed_at) } };
  },
  async webhook_endpoint_secret_rotate(input, ctx) {
    await ownedEndpoint(ctx, input.endpoint_id);
    const secret = newWebhookSecret();
    const e = await rotateEndpointSecret(ctx.deps.db, ctx.deps.config.secrets, ctx.caller.account.id, input.endpoint_id, secret, input.overlap_seconds ?? DEFAULT_OVERLAP_SECONDS);
    if (!e) throw errors.notFound('webhook_endpoint_not_found', 'webhook endpoint', 'endpoint_id');
    return { body: endpointView(e, secret), warnings: [{ code: 'secret_shown_once', message: 'Keep the new secret now: it is not shown again.' }] };
  },
  async webhook_event_list(input, ctx) {
    const page = await listEvents(ctx.deps.db, ctx.caller.account.id, {
      type: input.type, direction: input.order ?? 'desc', limit: input.limit ?? ctx.deps.config.limits.pageDefault, after: decodeCursor(input.cursor, ['text', 'text']),
    });
    return { body: pageBody(page, page.rows.map(eventView)) };
  },
  async webhook_delivery_list(input, ctx) {
    const page = await listDeliveries(ctx.deps.db, ctx.caller.account.id, {
      status: input.status, endpointId: input.endpoint_id, limit: input.limit ?? ctx.deps.config.limits.pageDefault, after: decodeCursor(input.cursor, ['text', 'text']),
    });
    return { body: pageBody(page, page.rows.map(deliveryView)) };
  },
  async webhook_delivery_replay(input, ctx) {
    const d = await getDelivery(ctx.deps.db, ctx.caller.account.id, input.delivery_id);
    if (!d) throw errors.notFound('webhook_delivery_not_found', 'webhook delivery', 'delivery_id');
    const replayed = await replayDelivery(ctx.deps.db, ctx.caller.account.id, input.delivery_id);
    if (!replayed) throw errors.conflict('delivery_pending', 'The delivery is still being attempted: replay it once it is delivered or dead.');
    return { body: deliveryView({ ...replayed, type: d.type }) };
  },
};

for (const t of webhookTools) {
  const h = HANDLERS[t.name];
  if (h) t.handler = h;
}
