import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createDecipheriv } from 'node:crypto';
import { newSecretsKey, openSecret, sealedWithCurrent, sealSecret, secretsKeyring } from '../../kernel/sealedSecrets.ts';

const SECRET = 'whsec_c2VjcmV0LXRoYXQtc2lnbnMtZXZlcnktZGVsaXZlcnk';

test('a sealed secret opens only with its key and on its own row, and shows nothing of the plaintext', () => {
  const ring = secretsKeyring(newSecretsKey());
  const sealed = sealSecret(ring, SECRET, 'webhook_endpoint:whe_a');
  assert.ok(!sealed.includes(SECRET) && !sealed.includes(Buffer.from(SECRET).toString('base64url')));
  assert.notEqual(sealSecret(ring, SECRET, 'webhook_endpoint:whe_a'), sealed, 'a fresh nonce each time');
  assert.equal(openSecret(ring, sealed, 'webhook_endpoint:whe_a'), SECRET);
  assert.throws(() => openSecret(ring, sealed, 'webhook_endpoint:whe_b'), /unable to authenticate/i, 'moved to another row it does not open');
  const [prefix, version, id, iv, body, tag] = sealed.split('.');
  assert.deepEqual([prefix, version, id], ['sealed', 'v1', ring.current.id]);
  const flipped = Buffer.from(body!, 'base64url');
  flipped[0] = flipped[0]! ^ 1;
  assert.throws(() => openSecret(ring, [prefix, version, id, iv, flipped.toString('base64url'), tag].join('.'), 'webhook_endpoint:whe_a'), /unable to authenticate/i, 'a changed byte is refused');
  assert.throws(() => openSecret(secretsKeyring(newSecretsKey()), sealed, 'webhook_endpoint:whe_a'), /does not have/, 'another service key cannot open it');
});

test('it is AES-256-GCM as specified: an independent decryption with the key, nonce, tag and context gives the plaintext', () => {
  const key = newSecretsKey();
  const sealed = sealSecret(secretsKeyring(key), SECRET, 'ctx');
  const [, , , iv, body, tag] = sealed.split('.');
  const d = createDecipheriv('aes-256-gcm', Buffer.from(key, 'base64'), Buffer.from(iv!, 'base64url')).setAAD(Buffer.from('ctx'));
  d.setAuthTag(Buffer.from(tag!, 'base64url'));
  assert.equal(Buffer.concat([d.update(Buffer.from(body!, 'base64url')), d.final()]).toString(), SECRET);
});

test('after a rotation the previous key still opens what it sealed, and new seals use the current key', () => {
  const old = newSecretsKey();
  const before = sealSecret(secretsKeyring(old), SECRET, 'c');
  const ring = secretsKeyring(newSecretsKey(), [old]);
  assert.equal(openSecret(ring, before, 'c'), SECRET);
  assert.equal(sealedWithCurrent(ring, before), false);
  assert.equal(sealedWithCurrent(ring, sealSecret(ring, SECRET, 'c')), true);
});

test('a value stored before sealing reads as it is; a malformed key is refused at start with its name', () => {
  assert.equal(openSecret(secretsKeyring(newSecretsKey()), SECRET, 'c'), SECRET);
  assert.throws(() => secretsKeyring('c2hvcnQ='), /SILICO_SECRETS_KEY must be 32 random bytes in base64.*got 5 bytes/);
});
