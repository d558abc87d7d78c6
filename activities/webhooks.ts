import { Agent, request } from 'undici';
import type { Db } from '../storage/db/knex.ts';
import type { WebhookConfig } from '../kernel/config.ts';
import { deliveryToAttempt, markDead, recordAttempt, signingSecrets } from '../storage/db/webhooks.ts';
import type { SecretsKeyring } from '../kernel/sealedSecrets.ts';
import { webhookSignature } from '../storage/webhookSecrets.ts';
import { isoTime } from '../storage/ids.ts';
import { guardedLookup, literalNotPublic } from '../kernel/http/guardedLookup.ts';

export interface WebhookDeps { db: Db; config: WebhookConfig; secrets: SecretsKeyring }

/** A delivery's identity as its workflow knows it: a replay is a later generation. */
export interface DeliveryRef { deliveryId: string; generation: number }

/** What to tell the receiver about a failure, short: the body of a failed answer is the receiver's, never stored. */
function problemOf(err: unknown): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') return 'no answer within the timeout';
  return (e.cause?.message ?? e.message ?? String(err)).slice(0, 300);
}

/**
 * One attempt of one delivery: the event as JSON, signed with the endpoint's secret (and
 * its previous one while a rotation overlaps), POSTed under the timeout to an address
 * checked after DNS resolution, never following a redirect. Only a 2xx answer delivers.
 */
export function createWebhookActivities(deps: WebhookDeps) {
  const { db, config, secrets } = deps;
  const refused = (host: string, address: string) => new Error(`${host} resolves to ${address}, which is not a public address`);
  const agent = new Agent({
    connect: { lookup: guardedLookup(config.allowPrivateAddresses, refused), timeout: config.timeoutMs },
    headersTimeout: config.timeoutMs, bodyTimeout: config.timeoutMs,
  });
  return {
    async webhookAttempt(ref: DeliveryRef): Promise<{ done: boolean; delivered: boolean }> {
      const found = await deliveryToAttempt(db, ref.deliveryId);
      if (!found || found.delivery.generation !== ref.generation || found.delivery.status !== 'pending') return { done: true, delivered: false };
      const { event, endpoint } = found;
      if (endpoint.removed_at) {
        await recordAttempt(db, ref.deliveryId, ref.generation, { delivered: false, status: null, error: 'the endpoint was removed' });
        await markDead(db, ref.deliveryId, ref.generation);
        return { done: true, delivered: false };
      }
      const body = JSON.stringify({ id: event.id, type: event.type, created_at: isoTime(event.created_at), data: event.data });
      let outcome: { delivered: boolean; status: number | null; error: string | null };
      try {
        // A secret that does not open here (sealed under a key this worker lacks, or not
        // this endpoint's) is a failed attempt: retried, and in the end a dead letter.
        let signature: string;
        try {
          signature = webhookSignature(signingSecrets(secrets, endpoint), body, Math.floor(Date.now() / 1000));
        } catch (err) {
          throw new Error(`the endpoint's signing secret cannot be opened: ${(err as Error).message}`);
        }
        const url = new URL(endpoint.url);
        if (!config.allowPrivateAddresses && literalNotPublic(url)) throw new Error(`${url.host} is not a public address`);
        const res = await request(url, {
          method: 'POST', body, dispatcher: agent, signal: AbortSignal.timeout(config.timeoutMs),
          headers: { 'content-type': 'application/json', 'user-agent': 'Silico-Webhooks/1.0', 'silico-signature': signature, 'silico-event-id': event.id, 'silico-event-type': event.type },
        });
        await res.body.dump();
        const ok = res.statusCode >= 200 && res.statusCode < 300;
        outcome = { delivered: ok, status: res.statusCode, error: ok ? null : `the endpoint answered ${res.statusCode}` };
      } catch (err) {
        outcome = { delivered: false, status: null, error: problemOf(err) };
      }
      await recordAttempt(db, ref.deliveryId, ref.generation, outcome);
      return { done: outcome.delivered, delivered: outcome.delivered };
    },

    async webhookDeadLetter(ref: DeliveryRef): Promise<void> {
      await markDead(db, ref.deliveryId, ref.generation);
    },
  };
}

export type WebhookActivities = ReturnType<typeof createWebhookActivities>;
