import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Secrets the service must keep readable (a webhook endpoint's signing secret: it signs
 * every delivery) are stored sealed with AES-256-GCM under the service's secrets key, so a
 * copy of the database alone reveals none of them. The key that seals is the current one;
 * keys kept from before a rotation still open what they sealed until it is sealed again.
 * A sealed value names its key (the first 8 bytes of the key's SHA-256, hex) and is bound
 * to what it belongs to (`context`, authenticated): moved to another row it does not open.
 */
export interface SecretsKeyring {
  current: { id: string; key: Buffer };
  byId: Map<string, Buffer>;
}

const PREFIX = 'sealed.v1';

const keyId = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 16);

/** A keyring from base64 keys of 32 bytes each, the first one current; throws naming `what` on a malformed key. */
export function secretsKeyring(current: string, previous: readonly string[] = [], what = 'SILICO_SECRETS_KEY'): SecretsKeyring {
  const decode = (b64: string) => {
    const key = Buffer.from(b64.trim(), 'base64');
    if (key.length !== 32) throw new Error(`${what} must be 32 random bytes in base64 (openssl rand -base64 32), got ${key.length} bytes`);
    return key;
  };
  const keys = [current, ...previous].map(decode);
  return { current: { id: keyId(keys[0]!), key: keys[0]! }, byId: new Map(keys.map((k) => [keyId(k), k])) };
}

/** A new secrets key, base64: what the local stack makes for its data dir. */
export function newSecretsKey(): string {
  return randomBytes(32).toString('base64');
}

export function sealSecret(ring: SecretsKeyring, plaintext: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', ring.current.key, iv).setAAD(Buffer.from(context));
  const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [PREFIX, ring.current.id, iv.toString('base64url'), sealed.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
}

/** True when `stored` is sealed with the keyring's current key (nothing to do on a re-seal). */
export function sealedWithCurrent(ring: SecretsKeyring, stored: string): boolean {
  return stored.startsWith(`${PREFIX}.${ring.current.id}.`);
}

/**
 * The plaintext of a stored secret. A value stored before secrets were sealed is returned
 * as it is (the worker seals those at start); one sealed under a key the ring no longer
 * has, or not for this context, throws.
 */
export function openSecret(ring: SecretsKeyring, stored: string, context: string): string {
  if (!stored.startsWith(`${PREFIX}.`)) return stored;
  const [, , id, iv, sealed, tag] = stored.split('.');
  const key = ring.byId.get(id ?? '');
  if (!key || !iv || !sealed || !tag) throw new Error(`a secret of ${context} is sealed with key ${id}, which this service does not have (SILICO_SECRETS_KEY_PREVIOUS keeps a rotated key)`);
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url')).setAAD(Buffer.from(context));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString('utf8');
}
