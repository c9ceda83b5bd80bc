// Type-aware lint: the rules that catch real bugs in Temporal and Koa code (a forgotten await on a
// workflow handle, a promise passed where a callback is expected) plus the recommended baseline.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.tools/', '.data/', 'coverage/', 'tests/histories/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // Raw SQL goes through shared/db/sql.ts, which names the EntityManager's transaction: a bare
    // `getConnection().execute` inside `em.transactional` runs on another pooled connection, outside it.
    files: ['api/**/*.ts', 'shared/**/*.ts', 'activities/**/*.ts', 'worker/**/*.ts', 'workflows/**/*.ts'],
    ignores: ['shared/db/sql.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        ...[
          "CallExpression[callee.property.name='getConnection']",
          "CallExpression[callee.property.name='getKnex']",
          "CallExpression[callee.property.name='execute'][callee.object.name=/^(em|tx|trx|t)$/]",
          "CallExpression[callee.property.name='execute'][callee.object.property.name='em']",
        ].map((selector) => ({
          selector,
          message:
            'Raw SQL must go through sql/sqlOne/execSql in shared/db/sql.ts, which runs inside the transaction of the EntityManager it is given.',
        })),
      ],
    },
  },
  {
    // Tests and benchmarks read JSON response bodies, whose shape the assertions then check.
    files: ['tests/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { projectService: false },
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly' },
    },
  },
);
