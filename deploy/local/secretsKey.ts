import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { newSecretsKey } from '../../kernel/sealedSecrets.ts';

/** Where a local stack keeps its secrets key (SILICO_SECRETS_KEY of its processes). */
export const secretsKeyFile = (dataDir: string) => path.join(dataDir, 'secrets.key');

/** The data dir's secrets key, made on its first start (readable by its owner only) and kept after. */
export async function ensureSecretsKey(dataDir: string): Promise<string> {
  const file = secretsKeyFile(dataDir);
  try {
    await writeFile(file, `${newSecretsKey()}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return (await readFile(file, 'utf8')).trim();
}
