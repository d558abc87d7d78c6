import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { canonicalJson as serverCanonical } from '../../storage/digest.ts';
import { createKeyringKey, keyIdOf, readKeyringKey } from '../../storage/passportKeys.ts';
import { checked, signPassport, signedText, type UnsignedPassport } from '../../storage/passportDocument.ts';
import { canonicalJson, verifyPassport } from '../../sdk/src/index.ts';

test('the SDK\'s canonical JSON is the server\'s RFC 8785 text for any JSON value', () => {
  fc.assert(fc.property(fc.jsonValue(), (v) => canonicalJson(v) === serverCanonical(v)), { numRuns: 2000 });
  assert.equal(canonicalJson({ b: [1e21, 0.1, -0], a: '\u2028é', '\u00e9': null, A: true }), '{"A":true,"a":"\u2028é","b":[1e+21,0.1,0],"é":null}');
});

test('a passport signed with a keyring key verifies with its public key offline; any change or another key does not', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'keyring-'));
  const key = await createKeyringKey(dir);
  const again = (await readKeyringKey(dir, key.keyId))!;
  assert.equal(again.keyId, key.keyId, 'read back from the keyring under its id');
  assert.equal(keyIdOf(again.privateKey), key.keyId, 'the id is the public key\'s fingerprint');
  const unsigned: UnsignedPassport = {
    object: 'passport', passport_id: 'pp_test', subject: { kind: 'run', run_id: crypto.randomUUID() },
    checks: [checked('artifact_hashes', 'passed', { artifacts: [{ file_name: 'é.csv', sha256: 'a'.repeat(64) }] })], created_at: new Date().toISOString(), key_id: key.keyId,
  };
  const passport = signPassport(unsigned, key);
  const keys = [{ key_id: key.keyId, public_key_pem: key.publicKeyPem }];
  assert.deepEqual(verifyPassport(passport as never, keys), { valid: true, key_id: key.keyId, reason: null });
  assert.equal(signedText(passport), canonicalJson({ ...unsigned }), 'the signed text leaves the signature out');
  const withEnvelope = { ...passport, request_id: crypto.randomUUID(), warnings: [], next_actions: [], links: {}, schema_version: 'x' };
  assert.equal(verifyPassport(withEnvelope as never, { items: keys }).valid, true, 'the response envelope is not part of what is signed');
  const changed = structuredClone(passport);
  (changed.checks[0]!.evidence.artifacts as Array<{ sha256: string }>)[0]!.sha256 = `b${'a'.repeat(63)}`;
  assert.equal(verifyPassport(changed as never, keys).valid, false, 'one changed character');
  const other = await createKeyringKey(dir);
  assert.equal(verifyPassport(passport as never, [{ key_id: key.keyId, public_key_pem: other.publicKeyPem }]).valid, false, 'another key');
  assert.match(verifyPassport(passport as never, []).reason!, /no public key/);
});
