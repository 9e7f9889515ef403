import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** The product (src/) is shipped alone: it never imports the dev tooling, the examples, the benchmarks or the tests. */
const productOnly = {
  group: ['**/dev/**', '**/examples/**', '**/bench/**', '**/test/**'],
  message: 'src/ is the product: it imports nothing from dev/, examples/, bench/ or test/.',
};

export default tseslint.config(
  { ignores: ['dist/**', '.tmp/**', 'node_modules/**', 'coverage/**', '**/*.wasm', '**/wasm_exec.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/**/*.ts', 'src/**/*.mjs'],
    rules: { 'no-restricted-imports': ['error', { patterns: [productOnly] }] },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node builtins, no I/O modules.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            productOnly,
            {
              group: ['node:*', 'fs', 'path', 'os', 'crypto', 'http', 'https', 'child_process'],
              message: 'Workflows are deterministic: do I/O in activities.',
            },
            {
              group: ['@kubernetes/*', 'koa', '@koa/*', '@temporalio/client', '@temporalio/worker'],
              message: 'Workflows import activities as types only.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    languageOptions: {
      globals: {
        console: 'readonly',
        process: 'readonly',
        URL: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        WebAssembly: 'readonly',
      },
    },
  },
);
