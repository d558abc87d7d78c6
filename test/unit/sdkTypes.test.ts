import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { renderSdkTypes, SDK_TYPES_FILE } from '../../deploy/sdkTypes.ts';

test('sdk/src/generated/openapi.ts is what `npm run sdk:types` renders from the current OpenAPI document', async () => {
  const committed = readFileSync(SDK_TYPES_FILE, 'utf8');
  const fresh = await renderSdkTypes();
  assert.ok(committed === fresh, 'the SDK types are stale: run `npm run sdk:types` and commit sdk/src/generated/openapi.ts');
});
