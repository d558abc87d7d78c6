import { serveMcpOverStdio } from './mcpBridge.ts';

// Placeholder entry until the CLI lands: only `silico mcp`.
const [cmd] = process.argv.slice(2);
if (cmd === 'mcp') {
  const apiKey = process.env.SILICO_API_KEY;
  if (!apiKey) {
    console.error('silico mcp: set SILICO_API_KEY');
    process.exit(2);
  }
  await serveMcpOverStdio({ baseUrl: process.env.SILICO_BASE_URL ?? 'http://localhost:8080/v1', apiKey, version: '0.1.0' });
} else {
  console.error('usage: silico mcp');
  process.exit(2);
}
