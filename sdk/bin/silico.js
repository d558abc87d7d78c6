#!/usr/bin/env node
// The `silico` command. The SDK is TypeScript run in place by tsx (as the rest of the
// repository is); a published build would point this at compiled output instead.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
