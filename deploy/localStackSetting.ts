import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { StackInfo } from './local/stack.ts';

/**
 * A setting the operator's tools need: its environment variable when set, else what the
 * local stack (`npm start`) wrote to its state file in `dataDir`; undefined when neither
 * says (each caller says what to do about it).
 */
export function stackSetting(dataDir: string, env: string, key: keyof StackInfo): string | undefined {
  if (process.env[env]) return process.env[env];
  try {
    const value = (JSON.parse(readFileSync(path.join(dataDir, 'local.json'), 'utf8')) as Partial<StackInfo>)[key];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}
