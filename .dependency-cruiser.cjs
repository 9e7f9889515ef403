/* global module */
/**
 * The layering of src/, checked by `npm run lint`. Each layer may import the layers it names below,
 * never one above: contracts live at the bottom, so an import that points up is a contract in the
 * wrong home. The README and docs/architecture.md list the same layers in the same order
 * (test/unit/architecture/layers.test.ts checks it).
 *
 *   log.ts                         the logger and its type
 *   resources                      custom resource types, names, labels, annotations and finalizers
 *   references                     references to other objects in rendered objects (pure)
 *   metrics                        what the layers measure, and its Prometheus implementation
 *   osb                            pure OSB rules and the broker's contract
 *   admin                          the admin side's contract: rollouts, listings (pure)
 *   adoption                       which records of a Service Fabrik landscape can be adopted (pure)
 *   templates, clusters            rendering; cluster health, capacity and reservations (pure)
 *   scheduling                     placement: the framework and its plugins (pure)
 *   kube                           one client per cluster, idempotent reads and writes
 *   workflows                      deterministic runbooks (activities by type only)
 *   activities                     all I/O of the workflows
 *   controllers                    watch the clusters and react (activities by type only)
 *   temporal                       the client connection, the payload codec, starting an operation
 *   config.ts, tracing.ts          configuration, read and validated once; OpenTelemetry
 *   broker                         the service layer behind the OSB API
 *   api                            the Koa OSB API, over the broker's contract
 *   cli                            the `interoperator` command line, over the admin API's contract
 *                                  (and the workers' versions, over Temporal)
 *   roots, main.ts                 composition roots: the only places that build real clients
 */
/** A layer's home: a folder of src/, or one file (`config.ts`). */
const home = (name) => (name.endsWith('.ts') ? `^src/${name.replace(/\./g, '\\.')}$` : `^src/${name}/`);

const layer = (name, ...may) => ({
  name: `layer-${name}`,
  comment: `src/${name} imports only ${may.length ? may.join(', ') : 'nothing of ours'}`,
  severity: 'error',
  from: { path: home(name) },
  to: { path: '^src/', pathNot: [home(name), ...may.map(home)] },
});

const pure = ['resources', 'references', 'osb', 'admin', 'templates', 'scheduling', 'clusters'];

/** The layers, bottom up, each with the layers it may import. */
const layers = [
  ['log.ts'],
  ['resources'],
  ['references'],
  ['metrics'],
  ['osb', 'resources'],
  ['admin', 'resources', 'osb'],
  ['adoption', 'resources', 'admin'],
  ['templates', 'resources', 'osb'],
  ['clusters', 'resources'],
  ['scheduling', 'resources', 'clusters'],
  ['kube', 'resources', 'osb', 'metrics'],
  ['workflows', 'resources', 'osb', 'admin', 'scheduling', 'clusters', 'activities'],
  ['activities', ...pure, 'kube', 'workflows', 'metrics'],
  ['controllers', ...pure, 'adoption', 'kube', 'workflows', 'activities', 'metrics'],
  ['temporal', 'workflows'],
  ['config.ts', 'scheduling', 'temporal'],
  ['tracing.ts', 'config.ts'],
  ['broker', ...pure, 'adoption', 'kube', 'workflows', 'temporal', 'metrics'],
  ['api', 'resources', 'osb', 'admin', 'metrics', 'log.ts'],
  ['cli', 'resources', 'admin', 'templates', 'temporal', 'config.ts'],
];
// The composition roots wire every layer but the command line, which is a program of its own.
layers.push(
  ['roots', ...layers.map(([name]) => name).filter((name) => name !== 'cli')],
  ['main.ts', 'roots', 'kube', 'templates', 'config.ts', 'tracing.ts', 'log.ts'],
);

module.exports = {
  forbidden: [
    ...layers.map(([name, ...may]) => layer(name, ...may)),
    {
      name: 'controllers-import-activities-as-types',
      comment:
        'a controller runs beside the activities: it implements the contracts they are given, and calls none',
      severity: 'error',
      from: { path: '^src/controllers/' },
      to: { path: '^src/activities/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'workflows-deterministic',
      comment: 'workflow code runs in the sandbox: no Node builtins',
      severity: 'error',
      from: { path: '^src/workflows/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'pure-modules-no-io',
      comment: 'pure modules import no Node builtin, Koa, Temporal or Kubernetes client',
      severity: 'error',
      from: {
        path: `^src/(${['osb', 'admin', 'adoption', 'scheduling', 'clusters', 'references'].join('|')})/`,
      },
      to: {
        dependencyTypesNot: ['type-only'],
        path: '(^node:|^(fs|path|os|http|https|net|crypto|worker_threads)$|node_modules/(koa|@temporalio|@kubernetes)/)',
      },
    },
    {
      name: 'roots-at-the-top',
      comment: 'only src/main.ts starts a composition root',
      severity: 'error',
      from: { path: '^src/', pathNot: ['^src/main\\.ts$', '^src/roots/'] },
      to: { path: '^src/roots/' },
    },
    {
      name: 'product-apart-from-tooling',
      comment: 'nothing shipped imports the dev tooling, the examples, the benchmarks or the tests',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(dev|examples|bench|test)/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
