import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { canonicalJson, digestJson, sha256Hex, HashingStream } from '../../storage/digest.ts';

test('canonical JSON follows RFC 8785: sorted keys, no whitespace, ES number forms', () => {
  assert.equal(canonicalJson({ b: 1, a: [true, null, 'x'], c: { z: 1e21, y: 0.000001, x: -0 } }), '{"a":[true,null,"x"],"b":1,"c":{"x":0,"y":0.000001,"z":1e+21}}');
  assert.equal(canonicalJson({ '\u00e9': 1, e: 2, '\u20ac': 3 }), '{"e":2,"é":1,"€":3}');
});

test('digests are lowercase hex SHA-256 of canonical JSON or raw bytes', () => {
  assert.equal(sha256Hex(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.equal(digestJson({ b: 2, a: 1 }), sha256Hex('{"a":1,"b":2}'));
  fc.assert(fc.property(fc.jsonValue(), (v) => digestJson(v) === digestJson(JSON.parse(JSON.stringify(v)))));
});

test('HashingStream hashes and counts while streaming', async () => {
  const chunks = [Buffer.from('hello '), Buffer.alloc(70000, 7), Buffer.from('world')];
  const h = new HashingStream();
  const seen: Buffer[] = [];
  await pipeline(Readable.from(chunks), h, async function* (src) {
    for await (const c of src) seen.push(c as Buffer);
  });
  const all = Buffer.concat(chunks);
  assert.equal(h.bytes, all.length);
  assert.equal(h.digest(), createHash('sha256').update(all).digest('hex'));
  assert.deepEqual(Buffer.concat(seen), all);
});
