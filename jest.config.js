// Two projects: `unit` (pure logic, no servers) and `integration` (real Temporal dev server and real
// kube-apiservers, started once for the run by test/integration/global-setup.mjs).
const transform = {
  '^.+\\.ts$': [
    '@swc/jest',
    { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'es6' } },
  ],
};
const common = {
  transform,
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testEnvironment: 'node',
};

/** @type {import('jest').Config} */
export default {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/integration/global-setup.mjs',
      globalTeardown: '<rootDir>/test/integration/global-teardown.mjs',
    },
  ],
  testTimeout: 120000,
};
