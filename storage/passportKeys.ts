import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from './db/knex.ts';
import { registerPassportKey } from './db/passports.ts';

/**
 * The passport keyring: a directory of Ed25519 private keys, one PKCS#8 PEM file per key
 * named `<key_id>.pem`. It is configuration (SILICO_PASSPORT_KEYS_DIR, a secret volume in
 * production); only workers sign, so only they and the operator CLI read it. Public
 * halves go to Postgres, where every api replica lists them.
 */
export interface SigningKey { keyId: string; privateKey: KeyObject; publicKeyPem: string }

/** A key's id: `ed25519-` and 16 hex digits of the SHA-256 of its public key (SPKI DER), so anyone can recompute it. */
export function keyIdOf(key: KeyObject): string {
  const spki = (key.type === 'public' ? key : createPublicKey(key)).export({ type: 'spki', format: 'der' });
  return `ed25519-${createHash('sha256').update(spki).digest('hex').slice(0, 16)}`;
}

function signingKey(privateKey: KeyObject): SigningKey {
  const publicKey = createPublicKey(privateKey);
  return { keyId: keyIdOf(publicKey), privateKey, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString() };
}

/** A new Ed25519 key, written to the keyring readable by its owner only. */
export async function createKeyringKey(dir: string): Promise<SigningKey> {
  const key = signingKey(generateKeyPairSync('ed25519').privateKey);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, `${key.keyId}.pem`);
  await writeFile(file, key.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  await chmod(file, 0o600);
  return key;
}

/** The private key of `keyId` from the keyring, or undefined when this keyring lacks it. */
export async function readKeyringKey(dir: string, keyId: string): Promise<SigningKey | undefined> {
  if (!/^[a-z0-9-]{1,64}$/.test(keyId)) return undefined;
  let pem: string;
  try {
    pem = await readFile(path.join(dir, `${keyId}.pem`), 'utf8');
  } catch {
    return undefined;
  }
  const key = signingKey(createPrivateKey(pem));
  // A file renamed to another key's id does not sign as that key.
  return key.keyId === keyId ? key : undefined;
}

/** Every key in the keyring, oldest file first. */
export async function keyringKeys(dir: string): Promise<SigningKey[]> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.pem'));
  const files = await Promise.all(names.map(async (n) => ({ n, at: (await stat(path.join(dir, n))).mtimeMs })));
  const keys: SigningKey[] = [];
  for (const { n } of files.sort((a, b) => a.at - b.at)) keys.push(signingKey(createPrivateKey(await readFile(path.join(dir, n), 'utf8'))));
  return keys;
}

/**
 * Records the public half of every keyring key Postgres does not know yet, oldest first:
 * the newest one recorded becomes the signing key (a key dropped into the keyring by the
 * operator rotates on the next worker start). Returns the ids recorded.
 */
export async function registerKeyring(db: Db, dir: string): Promise<string[]> {
  const recorded: string[] = [];
  for (const key of await keyringKeys(dir)) {
    if (await registerPassportKey(db, { key_id: key.keyId, public_key_pem: key.publicKeyPem })) recorded.push(key.keyId);
  }
  return recorded;
}

/** `npm start` and the test stack: a keyring with one key, made once when empty, and recorded. */
export async function ensureKeyring(db: Db, dir: string): Promise<string[]> {
  if (!(await keyringKeys(dir)).length) await createKeyringKey(dir);
  return registerKeyring(db, dir);
}

/** `passport-keys rotate`: a new signing key; the one before is retired (it verifies, never signs again). */
export async function rotatePassportKey(db: Db, dir: string): Promise<SigningKey> {
  const key = await createKeyringKey(dir);
  await registerPassportKey(db, { key_id: key.keyId, public_key_pem: key.publicKeyPem });
  return key;
}
