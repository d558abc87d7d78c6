import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout's root folder, wherever the process was started from. */
export const REPO_ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
