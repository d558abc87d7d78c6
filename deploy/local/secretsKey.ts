import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { newSecretsKey } from '../../kernel/sealedSecrets.ts';

/** Where a local stack keeps its secrets key (SILICO_SECRETS_KEY of its processes). */
export const secretsKeyFile = (dataDir: string) => path.join(dataDir, 'secrets.key');

/** The data dir's secrets key, made on its first start (readable by its owner only) and kept after. */
export function ensureSecretsKey(dataDir: string): Promise<string> {
  return keptSecret(secretsKeyFile(dataDir), newSecretsKey);
}

/** A secret kept in `file`: made by `make` the first time (readable by its owner only), read back every time after. */
export async function keptSecret(file: string, make: () => string): Promise<string> {
  try {
    await writeFile(file, `${make()}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return (await readFile(file, 'utf8')).trim();
}
