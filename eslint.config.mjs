import js from '@eslint/js';
import jest from 'eslint-plugin-jest';
import tseslint from 'typescript-eslint';

/**
 * Component boundaries (docs/adr/0008-sdk-package-and-layout.md). Outside `sdk/`, code reaches
 * the SDK only through its public entry points — `sdk` (colonies), `sdk/wire` (the contract
 * the platform shares), `sdk/service` (process plumbing), `sdk/testing` — never a file inside
 * it. The SDK never imports a server-side component. The bridge and the audit API never import
 * each other. The CLI imports no server component (it speaks HTTP to the audit API).
 */
const SDK_INTERNALS = {
  regex: '(^|/)sdk/(?!(wire|service|testing)$).+',
  message: 'import the SDK through an entry point: sdk, sdk/wire, sdk/service or sdk/testing (docs/adr/0008)',
};
const SERVER_SIDE = {
  regex: '^(\\.\\./)+(bridge|audit-api|scripts|migrations|infra|bench)(/|$)',
  message: 'the SDK is the colony package: it never imports a server-side component (docs/adr/0008)',
};
const boundaries = [
  {
    files: ['**/*.ts'],
    ignores: ['sdk/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [SDK_INTERNALS] }] },
  },
  {
    files: ['sdk/**/*.ts'],
    ignores: ['sdk/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [SERVER_SIDE, { regex: '^(\\.\\./)+test/', message: 'test helpers stay out of the package' }] },
      ],
    },
  },
  {
    files: ['bridge/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            SDK_INTERNALS,
            { regex: '^(\\.\\./)+audit-api(/|$)', message: 'the bridge does not import the audit API' },
          ],
        },
      ],
    },
  },
  {
    files: ['audit-api/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            SDK_INTERNALS,
            { regex: '^(\\.\\./)+bridge(/|$)', message: 'the audit API does not import the bridge' },
          ],
        },
      ],
    },
  },
  {
    // the CLI reaches DLQ, events and replay through the audit API over HTTP (so its guard,
    // throttle and audit apply), and Kafka and the registry through the SDK's entry points
    files: ['cli/**/*.ts'],
    ignores: ['cli/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            SDK_INTERNALS,
            {
              regex: '^(\\.\\./)+(bridge|audit-api|migrations)(/|$)',
              message: 'the CLI talks to the audit API over HTTP; it never imports a server component',
            },
          ],
        },
      ],
    },
  },
];

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      '.infra/**',
      'dist/**',
      'sdk/dist/**',
      'coverage/**',
      '*.config.js',
      '*.config.mjs',
      'scripts/*.js',
      'scripts/*.mjs',
      'cli/bin/*.cjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-floating-promises': 'error',
      'no-console': 'off',
    },
  },
  {
    files: ['**/*.test.ts', 'test/**/*.ts'],
    ...jest.configs['flat/recommended'],
    rules: {
      ...jest.configs['flat/recommended'].rules,
      'jest/no-focused-tests': 'error',
      'jest/expect-expect': ['error', { assertFunctionNames: ['expect', 'expect*', 'fc.assert'] }],
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  ...boundaries,
  {
    // the console's browser modules (audit-api/console, ADR 0011): plain JS, browser globals
    files: ['audit-api/console/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'module',
      globals: Object.fromEntries(
        [
          'window',
          'document',
          'location',
          'sessionStorage',
          'fetch',
          'URLSearchParams',
          'FormData',
          'Node',
          'setTimeout',
        ]
          .concat(['HTMLElement', 'HTMLInputElement', 'HTMLFormElement', 'HTMLSelectElement', 'HTMLButtonElement'])
          .concat(['SubmitEvent', 'Event'])
          .map((g) => [g, 'readonly']),
      ),
    },
    rules: { ...tseslint.configs.disableTypeChecked.rules, 'no-restricted-imports': 'off' },
  },
);
