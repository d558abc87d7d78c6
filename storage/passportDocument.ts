import { createPublicKey, sign, verify } from 'node:crypto';
import { canonicalJson } from './digest.ts';
import type { SigningKey } from './passportKeys.ts';

/** The seven checks of a passport, in the order a passport lists them (docs/contract/gaps.md, Passports). */
export const CHECKS = [
  'package_integrity', 'input_contract', 'execution_completed', 'artifact_hashes', 'output_contract', 'provenance_chain', 'reproducibility',
] as const;
export type CheckName = typeof CHECKS[number];
export type CheckStatus = 'passed' | 'failed' | 'not_applicable' | 'unknown';

/** One check: its own verdict and the evidence it was reached from. Never a score. */
export interface CheckResult { check: CheckName; status: CheckStatus; evidence: Record<string, unknown>; checked_at: string }

/** What a passport is about: identifiers only (the workflow carries nothing bigger). */
export type PassportSubject =
  | { kind: 'run'; run_id: string }
  | { kind: 'workspace_revision'; workspace_id: string; revision_id: string }
  | { kind: 'experiment'; experiment_id: string };

/** A subject of one lab's bytes: a run or a workspace revision (a study is checked through its own). */
export type LabSubject = Exclude<PassportSubject, { kind: 'experiment' }>;

/** A passport before it is signed. */
export interface UnsignedPassport {
  object: 'passport';
  passport_id: string;
  subject: Record<string, unknown>;
  checks: CheckResult[];
  created_at: string;
  key_id: string;
}

export interface Passport extends UnsignedPassport {
  signature: { alg: 'Ed25519'; key_id: string; value: string };
}

/** A check's result, timed now. */
export function checked(check: CheckName, status: CheckStatus, evidence: Record<string, unknown>): CheckResult {
  return { check, status, evidence, checked_at: new Date().toISOString() };
}

/** A check that means nothing for this subject (a revision has no execution), saying why. */
export function notApplicable(check: CheckName, why: string): CheckResult {
  return checked(check, 'not_applicable', { reason: why });
}

/**
 * The bytes a passport's signature covers: the RFC 8785 canonical JSON of the passport
 * without its `signature` member (`openssl pkeyutl -verify -rawin` checks exactly these).
 */
export function signedText(passport: UnsignedPassport | Passport): string {
  const rest: Partial<Passport> = { ...passport };
  delete rest.signature;
  return canonicalJson(rest);
}

/** Signs a passport with Ed25519 (no prehash: the canonical bytes themselves). */
export function signPassport(unsigned: UnsignedPassport, key: SigningKey): Passport {
  if (unsigned.key_id !== key.keyId) throw new Error(`passport names key ${unsigned.key_id}, signing with ${key.keyId}`);
  const value = sign(null, Buffer.from(signedText(unsigned), 'utf8'), key.privateKey).toString('base64');
  return { ...unsigned, signature: { alg: 'Ed25519', key_id: key.keyId, value } };
}

/**
 * Whether a stored passport's signature verifies against the public key it names
 * (retired keys included: what they signed stays valid). The reason when it does not.
 */
export function verifyPassport(document: string, keys: Array<{ key_id: string; public_key_pem: string }>): { valid: boolean; key_id: string | null; reason: string | null } {
  let passport: Passport;
  try {
    passport = JSON.parse(document) as Passport;
  } catch {
    return { valid: false, key_id: null, reason: 'the stored passport is not JSON' };
  }
  const keyId = passport.signature?.key_id ?? null;
  const key = keys.find((k) => k.key_id === keyId);
  if (!key) return { valid: false, key_id: keyId, reason: `no public key ${keyId ?? '(none named)'} is recorded` };
  const ok = verify(null, Buffer.from(signedText(passport), 'utf8'), createPublicKey(key.public_key_pem), Buffer.from(passport.signature.value, 'base64'));
  return ok ? { valid: true, key_id: keyId, reason: null } : { valid: false, key_id: keyId, reason: `the signature does not verify with key ${keyId}` };
}
