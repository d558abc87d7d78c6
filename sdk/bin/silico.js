#!/usr/bin/env node
// The `silico` command. The SDK is TypeScript run in place by tsx, so the command works on
// whatever Node its user has (the service itself runs on Node 24, which strips types on its
// own); a published build would point this at compiled output instead.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
