import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { readProtocol } from '../../activities/execution/labProcess.ts';

test('a protocol line past its bound ends the reading at once, the stop saying why (it once waited forever)', { timeout: 10_000 }, async () => {
  const protocol = new PassThrough();
  const stops: string[] = [];
  const seen: unknown[] = [];
  const reading = readProtocol(protocol, { protocolBytes: 1 << 20, lineBytes: 1000, logBytes: 1 << 20 }, () => stops.length > 0, (why) => stops.push(why.code), { onMessage: (m) => void seen.push(m) });
  protocol.write(`${JSON.stringify({ type: 'hello' })}\n${JSON.stringify({ type: 'progress', fraction: 0.5 })}\n`);
  await new Promise((r) => setImmediate(r));
  // One message that never ends within its bound, and the lab still alive behind it.
  protocol.write(`{"type": "output", "value": "${'x'.repeat(5000)}`);
  const { hello, result } = await reading;
  assert.equal(hello, true);
  assert.equal(result, null);
  assert.deepEqual(stops, ['output_limit_exceeded']);
  assert.deepEqual(seen, [{ type: 'progress', fraction: 0.5 }]);
});
