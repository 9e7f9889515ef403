// The projects, which `npm test` (tools/test-stages.mjs) runs in stages, one after another:
//   unit         pure logic and local fakes; needs no build and no servers.
//   built        what runs the build: the WebAssembly renderer (dist/wasm) and the render command
//                (dist/src/cli); `npm run test:built` builds first.
//   integration  the real Temporal dev server and real kube-apiservers, started once for the stage
//                (by the stage runner, or by test/integration/global-setup.mjs when jest runs
//                alone) from the build; two files at a time, each with its own ids and namespaces.
//   integration-apart
//                the integration files that must not run beside those (APART, below), on the same
//                servers after them, two at a time among themselves.
//   integration-temporal-server
//                the production Temporal server on PostgreSQL (several history shards, SQL
//                visibility) instead of the dev server, started by test/temporal-server/global-setup.mjs:
//                the end-to-end OSB suite, the workflows, a visibility query, and the connection
//                the chart's values describe, plain and over TLS.
//   faults       the fault-injection suite: each file starts real servers of its own (it kills and
//                restarts them) from the build; see docs/reliability.md.
//   soak         the landscape soak (test/soak): tenants, rollouts, rotations and faults at once on
//                servers of its own, the promises checked at the end; in the faults stage, beside them.
//   deploy       what runs as pods: the integration project's environment with a real node on the
//                master (containerd, kubelet, kube-proxy, kube-scheduler; dev/local/kube-node.ts),
//                started by test/deploy/global-setup.mjs; needs root (tools/ensure-node-packages.sh).
//                Also docker-compose.yml, run on a Docker engine of its own (test/deploy/compose.test.ts;
//                tools/ensure-compose.sh).
// The npm scripts end `--selectProjects <name>` with `--no-watchman`: otherwise jest would read
// the file arguments given after `npm run test:unit --` as more project names, and run them all.
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

/**
 * Integration files that run apart from the others (`npm test` runs the others two at a time on one
 * landscape, then these): each starts an example operator that takes 1.5 s to make a postgresql
 * ready, and asserts what it sees meanwhile; another file's operator, which takes 0.5 s, reconciling
 * the same postgresql objects would cut that short. Beside each other they keep one pace.
 */
const APART = [
  '/test/integration/example-operator.test.ts',
  '/test/integration/osb-rules.test.ts',
  '/test/integration/osb-rules-limits.test.ts',
];

/** @type {import('jest').Config} */
export default {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...common, displayName: 'built', testMatch: ['<rootDir>/test/built/**/*.test.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      testPathIgnorePatterns: APART,
      globalSetup: '<rootDir>/test/integration/global-setup.mjs',
      globalTeardown: '<rootDir>/test/integration/global-teardown.mjs',
    },
    {
      ...common,
      displayName: 'integration-apart',
      testMatch: APART.map((file) => `<rootDir>${file}`),
      globalSetup: '<rootDir>/test/integration/global-setup.mjs',
      globalTeardown: '<rootDir>/test/integration/global-teardown.mjs',
    },
    { ...common, displayName: 'faults', testMatch: ['<rootDir>/test/faults/**/*.test.ts'] },
    { ...common, displayName: 'soak', testMatch: ['<rootDir>/test/soak/**/*.test.ts'] },
    {
      ...common,
      displayName: 'deploy',
      testMatch: ['<rootDir>/test/deploy/*.test.ts'],
      globalSetup: '<rootDir>/test/deploy/global-setup.mjs',
      globalTeardown: '<rootDir>/test/deploy/global-teardown.mjs',
    },
    {
      ...common,
      displayName: 'integration-temporal-server',
      testMatch: [
        '<rootDir>/test/integration/osb-e2e.test.ts',
        '<rootDir>/test/integration/workflows.test.ts',
        '<rootDir>/test/integration/environment.test.ts',
        '<rootDir>/test/temporal-server/**/*.test.ts',
      ],
      setupFiles: ['<rootDir>/test/temporal-server/setup-env.ts'],
      globalSetup: '<rootDir>/test/temporal-server/global-setup.mjs',
      globalTeardown: '<rootDir>/test/temporal-server/global-teardown.mjs',
    },
  ],
  testTimeout: 120000,
};
