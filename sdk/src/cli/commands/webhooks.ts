import { createHmac, randomBytes } from 'node:crypto';
import type { Silico } from '../../client.ts';
import { EXIT, UsageError, table, type Out } from '../output.ts';

/** `silico webhooks listen|add|list|remove|rotate-secret|deliveries|replay`. */

type Row = Record<string, unknown>;

export async function webhooksAdd(client: Silico, url: string, flags: { events: string[] }, out: Out): Promise<number> {
  if (!flags.events.length) throw new UsageError('name the events with -e, --events (e.g. -e run.completed -e run.failed)');
  const e = await client.webhooks.createEndpoint({ url, events: flags.events } as never) as unknown as Row;
  out.result(e, () => `${String(e.endpoint_id)}  ${url}\nsecret: ${String(e.secret)}  (shown once: store it now)`);
  return EXIT.ok;
}

export async function webhooksList(client: Silico, out: Out): Promise<number> {
  const page = await client.webhooks.listEndpoints({ limit: 100 });
  out.result(page.items, () => (page.items.length ? table(page.items.map((e) => ({ ...e, events: (e.events as string[]).join(',') })), ['endpoint_id', 'url', 'events', 'created_at']) : 'No webhook endpoints.'));
  return EXIT.ok;
}

export async function webhooksRemove(client: Silico, id: string, out: Out): Promise<number> {
  const e = await client.webhooks.removeEndpoint(id) as unknown as Row;
  out.result(e, () => `removed ${id}`);
  return EXIT.ok;
}

export async function webhooksRotate(client: Silico, id: string, flags: { overlapSeconds?: number }, out: Out): Promise<number> {
  const e = await client.webhooks.rotateSecret(id, flags.overlapSeconds === undefined ? {} : { overlap_seconds: flags.overlapSeconds }) as unknown as Row;
  out.result(e, () => `new secret: ${String(e.secret)}  (shown once; the previous one also signs until ${String(e.previous_secret_expires_at ?? 'now')})`);
  return EXIT.ok;
}

export async function webhooksDeliveries(client: Silico, flags: { status?: string }, out: Out): Promise<number> {
  const page = await client.webhooks.listDeliveries({ limit: 100, ...(flags.status ? { status: flags.status } : {}) } as never);
  out.result(page.items, () => (page.items.length ? table(page.items as Row[], ['delivery_id', 'event_type', 'status', 'attempts', 'last_error', 'created_at']) : 'No deliveries.'));
  return EXIT.ok;
}

export async function webhooksReplay(client: Silico, id: string, out: Out): Promise<number> {
  const d = await client.webhooks.replayDelivery(id) as unknown as Row;
  out.result(d, () => `${id} is being delivered again`);
  return EXIT.ok;
}

/**
 * Development: forwards the account's new events to a local URL as the service would
 * deliver them (same body, same Silico-Signature scheme, signed with a secret of this
 * session: printed, or --secret), polling GET /webhook-events. Nothing needs to reach
 * your machine from outside. Stops on Ctrl-C, or after --max-events.
 */
export async function webhooksListen(client: Silico, flags: { forwardTo: string; events: string[]; secret?: string; intervalMs?: number; maxEvents?: number }, out: Out, signal?: AbortSignal): Promise<number> {
  let target: URL;
  try {
    target = new URL(flags.forwardTo);
  } catch {
    throw new UsageError(`--forward-to must be a URL, not ${flags.forwardTo}`);
  }
  const secret = flags.secret ?? `whsec_${randomBytes(24).toString('base64url')}`;
  const seen = new Set<string>();
  // Only what happens from now on: the events that exist already are marked seen.
  for (const e of (await client.webhooks.listEvents({ limit: 100 })).items) seen.add(String(e.id));
  out.note(`Forwarding new events${flags.events.length ? ` (${flags.events.join(', ')})` : ''} to ${target.href}, signed with ${secret}. Ctrl-C stops.`);
  let forwarded = 0;
  while (!signal?.aborted) {
    const fresh = (await client.webhooks.listEvents({ limit: 100 })).items.filter((e) => !seen.has(String(e.id))).reverse();
    for (const e of fresh) {
      seen.add(String(e.id));
      if (flags.events.length && !flags.events.includes(String(e.type))) continue;
      const body = JSON.stringify({ id: e.id, type: e.type, created_at: e.created_at, data: e.data });
      const t = Math.floor(Date.now() / 1000);
      const signature = `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
      let status: number | string;
      try {
        const res = await fetch(target, { method: 'POST', body, headers: { 'content-type': 'application/json', 'silico-signature': signature, 'silico-event-id': String(e.id), 'silico-event-type': String(e.type) } });
        status = res.status;
      } catch (err) {
        status = `not reached (${(err as Error).message})`;
      }
      if (out.json) process.stdout.write(`${JSON.stringify({ event_id: e.id, type: e.type, forwarded_to: target.href, status })}\n`);
      else process.stdout.write(`${String(e.type)} ${String(e.id)} -> ${typeof status === 'number' ? `[${status}]` : status}\n`);
      if (flags.maxEvents !== undefined && ++forwarded >= flags.maxEvents) return EXIT.ok;
    }
    await new Promise((r) => setTimeout(r, flags.intervalMs ?? 1000));
  }
  return EXIT.ok;
}
