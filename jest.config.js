/**
 * Test tiers, each runnable alone (`npm run test:unit`, `test:int`, `test:e2e`, `test:outage`,
 * `test:faults`; docs/testing.md):
 * - unit: pure logic, no services, no global setup;
 * - int / e2e: real Kafka, schema registry and PostgreSQL, started once per run by
 *   test/harness/global-setup.ts (or taken from KAFKA_BROKERS / SCHEMA_REGISTRY_URL / DATABASE_URL);
 * - outage: tests that stop or restart a shared service, in band, after the others;
 * - faults: the 3-node cluster and processes killed for real, in band, last.
 */
const transform = {
  '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } } }],
  // ESM-only dependencies (the Parquet library, ADR 0018): compiled to CommonJS for Jest's loader
  // (Node >= 20.19 requires them as they are)
  '/node_modules/hyparquet[^/]*/.+\\.js$': [
    '@swc/jest',
    { jsc: { target: 'es2022', parser: { syntax: 'ecmascript' } }, module: { type: 'commonjs' } },
  ],
};
const common = {
  transform,
  transformIgnorePatterns: ['/node_modules/(?!hyparquet)'],
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
  // the built package (npm run build) is tested from outside, by test/sdk-package.e2e.test.ts
  modulePathIgnorePatterns: ['<rootDir>/sdk/dist/'],
};
const withServices = {
  ...common,
  globalSetup: '<rootDir>/test/harness/global-setup.ts',
  globalTeardown: '<rootDir>/test/harness/global-teardown.ts',
  testEnvironment: '<rootDir>/test/harness/leak-checking-environment.ts',
  setupFilesAfterEnv: ['<rootDir>/test/harness/setup-file.ts'],
};

module.exports = {
  testTimeout: 60000,
  // `npm test` measures coverage of the unit, int and e2e tiers (in-process code only: the
  // bridge and audit API processes that tests spawn are not counted) and fails under the floor.
  coverageProvider: 'v8',
  collectCoverageFrom: ['sdk/**/*.ts', 'bridge/**/*.ts', 'audit-api/**/*.ts', '!**/*.test.ts', '!sdk/dist/**'],
  coverageReporters: ['text-summary', 'json-summary'],
  // the floor (docs/testing.md, "Coverage"): measured 93.7 % lines, 85.5 % branches on 2026-12-01
  coverageThreshold: { global: { lines: 90, statements: 90, functions: 90, branches: 80 } },
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: ['<rootDir>/**/*.unit.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', '/.infra/'],
    },
    {
      ...withServices,
      displayName: 'int',
      testMatch: ['<rootDir>/**/*.int.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', '/.infra/'],
    },
    { ...withServices, displayName: 'e2e', testMatch: ['<rootDir>/test/**/*.e2e.test.ts'] },
    // Tests that stop, restart or kill a shared service (PostgreSQL, the registry, a broker):
    // `npm run test:outage` runs them in band, after the other tiers, so none overlaps with a
    // test that uses the service (docs/testing.md, "Tests that stop services").
    {
      ...withServices,
      displayName: 'outage',
      testMatch: ['<rootDir>/**/*.outage.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', '/.infra/'],
    },
    // `npm run test:faults`: the 3-node cluster (FEROMONIOS_KAFKA_TOPOLOGY=cluster), processes
    // that really die (docs/reliability.md), in band. `npm test` ends with its CI subset.
    { ...withServices, displayName: 'faults', testMatch: ['<rootDir>/test/faults/**/*.faults.test.ts'] },
  ],
};
