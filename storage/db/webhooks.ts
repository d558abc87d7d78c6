import type { Db } from './knex.ts';
import { keysetPage, type KeysetPage } from './pagination.ts';
import { openSecret, sealedWithCurrent, sealSecret, type SecretsKeyring } from '../../kernel/sealedSecrets.ts';

export const WEBHOOK_EVENT_TYPES = [
  'run.completed', 'run.failed', 'run.cancelled', 'run.timed_out', 'experiment.completed', 'hosting.status_changed', 'invocation.completed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export interface WebhookEndpointRow {
  id: string;
  account_id: string;
  url: string;
  events: WebhookEventType[];
  description: string | null;
  /** Sealed (kernel/sealedSecrets.ts): `signingSecrets` opens them. */
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  removed_at: Date | null;
}

export interface WebhookEventRow { id: string; account_id: string; type: WebhookEventType; data: Record<string, unknown>; created_at: Date }

export interface WebhookDeliveryRow {
  id: string;
  account_id: string;
  event_id: string;
  endpoint_id: string;
  status: 'pending' | 'delivered' | 'dead';
  generation: number;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  last_attempt_at: Date | null;
  dispatched_at: Date | null;
  delivered_at: Date | null;
  dead_at: Date | null;
  created_at: Date;
}

const CREATED = `to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;

/** What an endpoint's sealed secrets are bound to: a sealed secret opens only on its own row. */
const sealContext = (endpointId: string) => `webhook_endpoint:${endpointId}`;

/** Records an endpoint with its signing secret, sealed. */
export async function createEndpoint(db: Db, ring: SecretsKeyring, e: Pick<WebhookEndpointRow, 'id' | 'account_id' | 'url' | 'events' | 'description' | 'secret'>): Promise<WebhookEndpointRow> {
  const [row] = await db('webhook_endpoints').insert({ ...e, secret: sealSecret(ring, e.secret, sealContext(e.id)) }).returning('*');
  return row as WebhookEndpointRow;
}

/** The secrets that sign a delivery to the endpoint now: its secret, and its previous one while a rotation overlaps. */
export function signingSecrets(ring: SecretsKeyring, e: WebhookEndpointRow, now = Date.now()): string[] {
  const overlapping = e.previous_secret && e.previous_secret_expires_at && new Date(e.previous_secret_expires_at).getTime() > now;
  return [e.secret, ...(overlapping ? [e.previous_secret!] : [])].map((s) => openSecret(ring, s, sealContext(e.id)));
}

/**
 * Seals again under the current key every endpoint secret that is not (stored before
 * secrets were sealed, or under a key since rotated): run at worker start, so a previous
 * key can be dropped once its workers have started. Returns how many endpoints changed.
 */
export async function resealEndpointSecrets(db: Db, ring: SecretsKeyring): Promise<number> {
  const rows: Array<Pick<WebhookEndpointRow, 'id' | 'secret' | 'previous_secret'>> = await db('webhook_endpoints').select('id', 'secret', 'previous_secret');
  let changed = 0;
  for (const r of rows) {
    const stale = (s: string | null) => s !== null && !sealedWithCurrent(ring, s);
    if (!stale(r.secret) && !stale(r.previous_secret)) continue;
    const reseal = (s: string | null) => (s === null ? null : sealSecret(ring, openSecret(ring, s, sealContext(r.id)), sealContext(r.id)));
    // Only if unchanged since read: a rotation in between keeps its own, already sealed.
    changed += await db('webhook_endpoints').where({ id: r.id, secret: r.secret }).update({ secret: reseal(r.secret), previous_secret: reseal(r.previous_secret) });
  }
  return changed;
}

/** One of the account's endpoints that has not been removed (another account's is none). */
export async function getEndpoint(db: Db, accountId: string, id: string): Promise<WebhookEndpointRow | undefined> {
  return db('webhook_endpoints').where({ id, account_id: accountId }).whereNull('removed_at').first();
}

export async function listEndpoints(db: Db, accountId: string, f: { limit: number; after?: Array<string | number> | null }): Promise<KeysetPage<WebhookEndpointRow>> {
  const q = db('webhook_endpoints').where({ account_id: accountId }).whereNull('removed_at').select('*', db.raw(`${CREATED} as sort_at`));
  return keysetPage<WebhookEndpointRow>(q, { columns: ['sort_at', 'id'], direction: 'desc', limit: f.limit, after: f.after, sortExpr: { sort_at: CREATED } });
}

/** Removes an endpoint: nothing more is sent to it, its pending deliveries end at their next attempt. */
export async function removeEndpoint(db: Db, accountId: string, id: string): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db('webhook_endpoints').where({ id, account_id: accountId }).whereNull('removed_at')
    .update({ removed_at: db.fn.now(), updated_at: db.fn.now() }).returning('*');
  return row as WebhookEndpointRow | undefined;
}

/** A new secret signs from now on; the old one also signs until `overlapSeconds` have passed. */
export async function rotateEndpointSecret(db: Db, ring: SecretsKeyring, accountId: string, id: string, secret: string, overlapSeconds: number): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db('webhook_endpoints').where({ id, account_id: accountId }).whereNull('removed_at').update({
    previous_secret: db.ref('secret'), secret: sealSecret(ring, secret, sealContext(id)),
    previous_secret_expires_at: db.raw(`now() + make_interval(secs => ?)`, [overlapSeconds]), updated_at: db.fn.now(),
  }).returning('*');
  return row as WebhookEndpointRow | undefined;
}

export async function listEvents(db: Db, accountId: string, f: { type?: string | null; limit: number; after?: Array<string | number> | null; direction?: 'asc' | 'desc' }): Promise<KeysetPage<WebhookEventRow>> {
  const q = db('webhook_events').where({ account_id: accountId }).select('*', db.raw(`${CREATED} as sort_at`));
  if (f.type) q.andWhere({ type: f.type });
  return keysetPage<WebhookEventRow>(q, { columns: ['sort_at', 'id'], direction: f.direction ?? 'desc', limit: f.limit, after: f.after, sortExpr: { sort_at: CREATED } });
}

export async function listDeliveries(db: Db, accountId: string, f: { status?: string | null; endpointId?: string | null; limit: number; after?: Array<string | number> | null }): Promise<KeysetPage<WebhookDeliveryRow & { type: string }>> {
  const expr = `to_char(d.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US')`;
  const q = db('webhook_deliveries as d').join('webhook_events as e', 'e.id', 'd.event_id').where({ 'd.account_id': accountId })
    .select('d.*', 'e.type', db.raw(`${expr} as sort_at`));
  if (f.status) q.andWhere({ 'd.status': f.status });
  if (f.endpointId) q.andWhere({ 'd.endpoint_id': f.endpointId });
  return keysetPage(q, { columns: ['sort_at', 'd.id'], direction: 'desc', limit: f.limit, after: f.after, sortExpr: { sort_at: expr } });
}

export async function getDelivery(db: Db, accountId: string, id: string): Promise<(WebhookDeliveryRow & { type: string }) | undefined> {
  return db('webhook_deliveries as d').join('webhook_events as e', 'e.id', 'd.event_id').where({ 'd.id': id, 'd.account_id': accountId }).first('d.*', 'e.type');
}

/** Starts a delivery that has ended (delivered or dead) again, as its next generation; undefined if it is still pending. */
export async function replayDelivery(db: Db, accountId: string, id: string): Promise<WebhookDeliveryRow | undefined> {
  const [row] = await db('webhook_deliveries').where({ id, account_id: accountId }).whereIn('status', ['delivered', 'dead']).update({
    status: 'pending', generation: db.raw('generation + 1'), dispatched_at: null, delivered_at: null, dead_at: null,
  }).returning('*');
  if (row) await db.raw(`SELECT pg_notify('silico_webhook_deliveries', ?)`, [id]);
  return row as WebhookDeliveryRow | undefined;
}

/** Deliveries whose workflow has not been started, oldest first. */
export async function undispatchedDeliveries(db: Db, limit: number): Promise<Array<Pick<WebhookDeliveryRow, 'id' | 'generation' | 'account_id' | 'endpoint_id' | 'event_id'> & { event_type: string }>> {
  return db('webhook_deliveries as d').join('webhook_events as e', 'e.id', 'd.event_id').whereNull('d.dispatched_at').orderBy('d.created_at').limit(limit)
    .select('d.id', 'd.generation', 'd.account_id', 'd.endpoint_id', 'd.event_id', 'e.type as event_type');
}

export async function markDispatched(db: Db, id: string, generation: number): Promise<void> {
  await db('webhook_deliveries').where({ id, generation }).whereNull('dispatched_at').update({ dispatched_at: db.fn.now() });
}

/** What one attempt needs: the delivery, its event and its endpoint (removed or not). */
export async function deliveryToAttempt(db: Db, id: string): Promise<{ delivery: WebhookDeliveryRow; event: WebhookEventRow; endpoint: WebhookEndpointRow } | undefined> {
  const delivery: WebhookDeliveryRow | undefined = await db('webhook_deliveries').where({ id }).first();
  if (!delivery) return undefined;
  const [event, endpoint] = await Promise.all([
    db('webhook_events').where({ id: delivery.event_id }).first(),
    db('webhook_endpoints').where({ id: delivery.endpoint_id }).first(),
  ]);
  return { delivery, event, endpoint };
}

/** Records one attempt of a pending delivery of this generation: delivered on a 2xx answer. */
export async function recordAttempt(db: Db, id: string, generation: number, outcome: { delivered: boolean; status: number | null; error: string | null }): Promise<void> {
  await db('webhook_deliveries').where({ id, generation, status: 'pending' }).update({
    attempts: db.raw('attempts + 1'), last_status: outcome.status, last_error: outcome.error, last_attempt_at: db.fn.now(),
    ...(outcome.delivered ? { status: 'delivered', delivered_at: db.fn.now() } : {}),
  });
}

/** A delivery that kept failing for its whole retry window: the account can list and replay it. */
export async function markDead(db: Db, id: string, generation: number): Promise<void> {
  await db('webhook_deliveries').where({ id, generation, status: 'pending' }).update({ status: 'dead', dead_at: db.fn.now() });
}
