// Lint rules that guard correctness: promises are awaited, and workflow code stays
// deterministic (no Node builtins or I/O modules inside workflows/).
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', '.data-cluster/**', 'console/dist/**', '.tmp/**', 'labs/**/*.py', '**/*.cjs'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // node:test's test() returns a promise the runner itself awaits.
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] }],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    ignores: ['workflows/constants.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [...nodeBuiltins, 'pg', 'knex', '@aws-sdk/client-s3', 'pino'].map((name) => ({ name, message: 'Workflows are deterministic: do I/O in activities.' })),
        patterns: [{ group: ['../storage/*', '../api/*', '../deploy/*'], message: 'Workflows may not import storage, api or deploy.' }],
      }],
      '@typescript-eslint/consistent-type-imports': ['error', { prefer: 'type-imports' }],
    },
  },
);
