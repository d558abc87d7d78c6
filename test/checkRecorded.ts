import { readFileSync } from 'node:fs';
import path from 'node:path';
import { makeAjv } from '../kernel/ajv.ts';
import { ROUTES } from '../api/routeTable.ts';
import { TOOLS } from '../api/tools/index.ts';
import { successSchema } from '../api/schemas/answer.ts';

/**
 * Checks response bodies a test run recorded (`SILICO_RECORD_RESPONSES=<dir> npm test`, see
 * test/responseSchemas.ts) against the operations' schemas as they are now: how a schema
 * is written or changed against every answer the suite saw, without running it again.
 * Usage: node test/checkRecorded.ts <dir> [tool ...]
 */
const [dir, ...only] = process.argv.slice(2);
const ajv = makeAjv(false);
let bad = 0;
for (const route of ROUTES) {
  const tool = TOOLS.get(route.tool)!;
  if (tool.output === 'bytes' || (only.length && !only.includes(tool.name))) continue;
  const strict = tool.output && (tool.output as any).additionalProperties === false;
  let lines: string[] = [];
  try { lines = readFileSync(path.join(dir!, `${tool.name}.jsonl`), 'utf8').trim().split('\n'); } catch {}
  const validate = ajv.compile(successSchema(tool, route));
  const problems = new Map<string, number>();
  for (const l of lines) {
    const { body } = JSON.parse(l);
    if (!validate(body)) { const t = ajv.errorsText(validate.errors); problems.set(t, (problems.get(t) ?? 0) + 1); }
  }
  console.log(`${strict ? 'strict' : 'LOOSE '} ${tool.name} samples=${lines.length} failing=${[...problems.values()].reduce((a, b) => a + b, 0)}`);
  for (const [t, n] of problems) { bad++; console.log(`   ${n}× ${t.slice(0, 400)}`); }
}
process.exitCode = bad ? 1 : 0;
