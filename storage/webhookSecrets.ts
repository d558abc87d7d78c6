import { createHmac, randomBytes } from 'node:crypto';

/** A new endpoint signing secret (`whsec_` and 32 random bytes): shown to its owner when made, kept to sign. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/**
 * `Silico-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body>`, one `v1=` per
 * secret that signs (two while a rotation overlaps), as the ecosystem's clients verify it.
 */
export function webhookSignature(secrets: readonly string[], body: string, t: number): string {
  return [`t=${t}`, ...secrets.map((s) => `v1=${createHmac('sha256', s).update(`${t}.${body}`).digest('hex')}`)].join(',');
}
