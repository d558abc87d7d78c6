/**
 * Offline verification of a passport: Node's crypto and the RFC 8785 canonical JSON of
 * the passport without its `signature`, checked against the public key it names. No call
 * to the service is needed once the keys are at hand (GET /passports/keys, or a file).
 */
import { createPublicKey, verify } from 'node:crypto';
import { canonicalJson } from './core/canonicalJson.ts';

/** A public key as GET /passports/keys lists it (retired keys included: they verify what they signed). */
export interface PassportKey { key_id: string; alg?: string; public_key_pem: string; created_at?: string; retired_at?: string | null }

/** A signed passport (as returned by `passports.get()`, whose envelope fields are not signed and are set aside). */
export interface SignedPassport {
  object: 'passport';
  passport_id: string;
  key_id: string;
  signature: { alg: string; key_id: string; value: string };
  [member: string]: unknown;
}

export interface PassportVerification {
  valid: boolean;
  /** The key that verified (or was named). */
  key_id: string | null;
  /** Why it did not verify. */
  reason: string | null;
}

/** Fields the API adds around every record; they are not part of the signed passport. */
const ENVELOPE = ['schema_version', 'request_id', 'warnings', 'next_actions', 'links'];

/** The passport itself: a response body without its envelope. */
export function passportOf(body: Record<string, unknown>): SignedPassport {
  const out: Record<string, unknown> = { ...body };
  for (const k of ENVELOPE) delete out[k];
  return out as SignedPassport;
}

/** The exact text the signature covers: canonical JSON of the passport without `signature`. */
export function passportSignedText(passport: Record<string, unknown>): string {
  const rest = passportOf(passport) as Record<string, unknown>;
  delete rest.signature;
  return canonicalJson(rest);
}

/**
 * Verifies a passport's Ed25519 signature with the listed keys (an array, or the
 * `{items}` body of GET /passports/keys), offline.
 */
export function verifyPassport(passport: Record<string, unknown>, keys: readonly PassportKey[] | { items: readonly PassportKey[] }): PassportVerification {
  const p = passportOf(passport);
  const sig = p.signature;
  const keyId = typeof sig?.key_id === 'string' ? sig.key_id : null;
  const fail = (reason: string): PassportVerification => ({ valid: false, key_id: keyId, reason });
  if (!sig || sig.alg !== 'Ed25519' || typeof sig.value !== 'string') return fail('the passport has no Ed25519 signature');
  if (p.key_id !== keyId) return fail(`the passport names key ${String(p.key_id)} but its signature key ${String(keyId)}`);
  const key = ('items' in keys ? keys.items : keys).find((k) => k.key_id === keyId);
  if (!key) return fail(`no public key ${keyId} among the keys given`);
  const signature = Buffer.from(sig.value, 'base64');
  if (signature.length !== 64) return fail('the signature is not 64 bytes of base64');
  let ok: boolean;
  try {
    ok = verify(null, Buffer.from(passportSignedText(p), 'utf8'), createPublicKey(key.public_key_pem), signature);
  } catch (err) {
    return fail(`the key or passport cannot be used: ${(err as Error).message}`);
  }
  return ok ? { valid: true, key_id: keyId, reason: null } : fail('the signature does not match the passport: it was changed, or signed by another key');
}
