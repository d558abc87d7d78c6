import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './local/bootstrap.ts';

/**
 * `npm run lock:complete`. The registry this project installs from does not serve every
 * platform build of packages such as @swc/core (darwin, win32, ppc64, s390x answer 404),
 * so `npm install` leaves them out of package-lock.json, and `npm ci` then refuses the
 * lock ("Missing: @swc/core-darwin-arm64 from lock file"). This adds each missing
 * platform-specific optional dependency as an optional entry with its os/cpu, which
 * `npm ci` skips on other platforms, exactly as npm would have written it.
 */
const PLATFORM = /-(darwin|linux|win32|freebsd|android)-(x64|arm64|arm|ia32|ppc64|s390x|riscv64)(-|$)/;

const file = path.join(REPO_ROOT, 'package-lock.json');
const lock = JSON.parse(readFileSync(file, 'utf8')) as { packages: Record<string, { version?: string; optionalDependencies?: Record<string, string>; license?: string }> };
const added: string[] = [];
for (const [key, pkg] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const m = PLATFORM.exec(name);
    const entry = `node_modules/${name}`;
    if (!m || lock.packages[entry] || lock.packages[`${key}/${entry}`]) continue;
    lock.packages[entry] = { version, cpu: [m[2]], license: pkg.license, optional: true, os: [m[1]] } as never;
    added.push(`${name}@${version}`);
  }
}
const sorted = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)));
writeFileSync(file, `${JSON.stringify({ ...lock, packages: sorted }, null, 2)}\n`);
console.log(added.length ? `added to package-lock.json: ${added.join(', ')}` : 'package-lock.json already complete');
