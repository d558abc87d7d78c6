import { fileURLToPath } from 'node:url';

/** The pinned resolver (uv), with its hashes. */
export const RESOLVER_LOCK_FILE = fileURLToPath(new URL('./resolver.lock', import.meta.url));

/** How lab environments are resolved, built and kept (kernel/config.ts reads them from the environment). */
export interface EnvironmentSettings {
  /** uv: the resolver and installer (SILICO_UV). */
  uv: string;
  /** The package index environments resolve against and install from (SILICO_PACKAGE_INDEX_URL). */
  indexUrl: string;
  /** Hosts beside the index's own that a build may reach, where it serves files from (SILICO_PACKAGE_INDEX_HOSTS). */
  indexHosts: string[];
  /** The Python versions this deployment provides, `major.minor` → interpreter (SILICO_PYTHONS). */
  pythons: Record<string, string>;
  /** Where built environments are kept by lock digest, and uv's download cache (SILICO_ENVIRONMENTS_DIR). */
  dir: string;
  /** What the built environments of a host may take together; least recently used go first (SILICO_ENVIRONMENTS_MAX_BYTES). */
  maxBytes: number;
  /** What one build may write: the environment and its downloads (SILICO_ENVIRONMENT_BUILD_MAX_BYTES). */
  buildMaxBytes: number;
  /** Bound of one resolution or build (SILICO_ENVIRONMENT_BUILD_SECONDS). */
  timeoutSeconds: number;
  /**
   * The PEtab toolkit's interpreter (activities/petab/toolkit.lock), made by the deployment
   * from its committed lock (SILICO_PETAB_PYTHON); null where none is provided. Labs whose
   * declared runtime it satisfies run in it: petab and fides publish no wheels, so an
   * environment of their own could not be built here.
   */
  toolkitPython: string | null;
}

/** `3.12=/usr/bin/python3.12,3.11=/usr/bin/python3.11` → { '3.12': ..., '3.11': ... }. */
export function parsePythons(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^(\d+\.\d+)=(.+)$/.exec(part);
    if (!m) throw new Error(`SILICO_PYTHONS takes version=interpreter pairs separated by commas; got ${JSON.stringify(part)}`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

/**
 * The environment uv runs with: no user or project configuration, never a downloaded
 * interpreter, and the machine's own trust store (an operator's CA for the index's
 * proxy is in it), with its locations when the host names them.
 */
export function uvEnv(s: EnvironmentSettings, host: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const trust = Object.fromEntries(['SSL_CERT_FILE', 'SSL_CERT_DIR'].filter((k) => host[k]).map((k) => [k, host[k]!]));
  return {
    PATH: '/usr/bin:/bin', HOME: s.dir, UV_CACHE_DIR: `${s.dir}/.uv-cache`, UV_NO_CONFIG: '1',
    UV_PYTHON_DOWNLOADS: 'never', UV_NO_PROGRESS: '1', NO_COLOR: '1', UV_SYSTEM_CERTS: '1', ...trust,
  };
}
