// Lint rules that guard correctness: promises are awaited, workflow code stays
// deterministic (no Node builtins or I/O modules inside workflows/), and the layers import
// only downward: deploy → api → workflows → activities → storage, with kernel/ (what every
// layer shares: configuration, workflow names, the guarded HTTP lookup...) beneath them
// all. The api may name an activity's types, never import its code: activities run on workers.
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

/** Import patterns that reach the named top-level folders from anywhere below the root. */
const reaching = (...folders) => folders.flatMap((f) => ['../', '../../', '../../../', '../../../../'].map((up) => `${up}${f}/**`));
const layer = (files, ...rules) => ({
  files,
  rules: { 'no-restricted-imports': ['error', { patterns: rules.map(([folders, message, extra = {}]) => ({ group: reaching(...folders), message, ...extra })) }] },
});

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
  layer(['kernel/**/*.ts'], [['api', 'activities', 'workflows', 'deploy', 'storage'], 'kernel/ is beneath every layer: it imports none of them.']),
  layer(['storage/**/*.ts'], [['api', 'activities', 'workflows', 'deploy'], 'storage/ imports only kernel/ (layers import downward).']),
  layer(['activities/**/*.ts'], [['api', 'workflows', 'deploy'], 'activities/ import storage/ and kernel/ only (layers import downward).']),
  layer(['api/**/*.ts'],
    [['deploy'], 'The api never imports deploy/.'],
    [['activities'], "The api may name an activity's types, never import its code (activities run on workers; share definitions through kernel/).", { allowTypeImports: true }]),
  {
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        paths: [...nodeBuiltins, 'pg', 'knex', '@aws-sdk/client-s3', 'pino'].map((name) => ({ name, message: 'Workflows are deterministic: do I/O in activities.' })),
        patterns: [{ group: reaching('storage', 'api', 'deploy'), message: 'Workflows may not import storage, api or deploy.' }],
      }],
      '@typescript-eslint/consistent-type-imports': ['error', { prefer: 'type-imports' }],
    },
  },
);
