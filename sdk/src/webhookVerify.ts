/**
 * Verifying a webhook delivery on the receiving side, offline, in Node or a browser: the
 * `Silico-Signature` header is `t=<unix seconds>,v1=<hex>` with one `v1` per signing
 * secret (two during a rotation); each is the HMAC-SHA256 of `"<t>." + raw body` keyed by
 * the endpoint's secret. Pass the body exactly as received (before any JSON parsing).
 */
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SilicoError } from './errors.ts';

/** A delivery that did not verify: `reason` says why (no signature, too old, no match). */
export class WebhookSignatureError extends SilicoError {
  override name = 'WebhookSignatureError';
}

/** A verified delivery's event. */
export interface WebhookEventPayload {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}

export interface VerifyWebhookOptions {
  /** How old (or how far ahead) `t` may be, in seconds (default 300). */
  toleranceSeconds?: number;
  /** Now, in unix seconds (for tests). */
  now?: number;
}

function sameHex(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** Returns the event when some `v1` matches under `secret` and `t` is within tolerance; throws WebhookSignatureError otherwise. */
export function verifyWebhook(rawBody: string | Uint8Array, signatureHeader: string | null | undefined, secret: string, options: VerifyWebhookOptions = {}): WebhookEventPayload {
  if (!signatureHeader) throw new WebhookSignatureError('no Silico-Signature header');
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  const parts = signatureHeader.split(',').map((p) => {
    const at = p.indexOf('=');
    return [p.slice(0, at).trim(), p.slice(at + 1).trim()] as const;
  });
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  const signatures = parts.filter(([k]) => k === 'v1').map(([, v]) => v.toLowerCase());
  if (!Number.isInteger(t) || signatures.length === 0) throw new WebhookSignatureError('the Silico-Signature header has no t= and v1= values');
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? 300;
  if (Math.abs(now - t) > tolerance) throw new WebhookSignatureError(`the signature's timestamp is ${now - t} s away from now (tolerance ${tolerance} s): a replayed or delayed delivery`);
  const enc = new TextEncoder();
  const expected = bytesToHex(hmac(sha256, enc.encode(secret), enc.encode(`${t}.${body}`)));
  if (!signatures.some((s) => sameHex(s, expected))) throw new WebhookSignatureError('no v1 signature matches this secret and body');
  return JSON.parse(body) as WebhookEventPayload;
}
