// The root postinstall's first step. npm scripts run the first `node` on their PATH,
// node_modules/.bin/node: the Node of .node-version, installed from the registry where npm
// has a build of it for this platform (Linux, Windows). Elsewhere (macOS) that is the
// machine's own Node: if it is not that version's line, stop now, saying the one thing to do.
// Plain JavaScript: it must run on whatever Node the machine has.
import { readFileSync } from 'node:fs';

const wanted = readFileSync(new URL('../../.node-version', import.meta.url), 'utf8').trim();
const major = (v) => Number(v.split('.')[0]);
if (major(process.versions.node) !== major(wanted)) {
  console.error(`Silico runs on Node ${wanted} (.node-version), which npm installs only on Linux (x64, arm64) and Windows (x64) and not with --omit=optional; this is ${process.platform}-${process.arch} on Node ${process.versions.node}. Install Node ${major(wanted)}, then run npm install again.`);
  process.exit(1);
}
