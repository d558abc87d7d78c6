import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where `silico configure` keeps the base URL and key (XDG config, readable only by you). */
export function configFile(env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.SILICO_CONFIG_DIR ?? path.join(env.XDG_CONFIG_HOME ?? path.join(os.homedir(), '.config'), 'silico');
  return path.join(dir, 'config.json');
}

export interface Settings { baseUrl?: string; apiKey?: string }

export function readSettings(file = configFile()): Settings {
  try {
    const raw = JSON.parse(readFileSync(file, 'utf8')) as { base_url?: unknown; api_key?: unknown };
    return {
      baseUrl: typeof raw.base_url === 'string' ? raw.base_url : undefined,
      apiKey: typeof raw.api_key === 'string' ? raw.api_key : undefined,
    };
  } catch {
    return {};
  }
}

export function writeSettings(s: Settings, file = configFile()): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify({ base_url: s.baseUrl, api_key: s.apiKey }, null, 2)}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
}

export const DEFAULT_BASE_URL = 'http://localhost:8080/v1';

/** Flags win over the environment, which wins over the saved configuration. */
export function resolveSettings(flags: Settings, env: NodeJS.ProcessEnv = process.env): Required<Pick<Settings, 'baseUrl'>> & Settings {
  const saved = readSettings(configFile(env));
  return {
    baseUrl: flags.baseUrl ?? env.SILICO_BASE_URL ?? saved.baseUrl ?? DEFAULT_BASE_URL,
    apiKey: flags.apiKey ?? env.SILICO_API_KEY ?? saved.apiKey,
  };
}
