/* global module */
/**
 * The layering of src/, checked by `npm run lint` (docs/architecture.md draws it). Each layer may
 * import the layers below it, never one above: contracts live at the bottom, so an import that
 * points up is a contract in the wrong home.
 *
 *   resources                      custom resource types, names, labels and annotations
 *   references                     references to other objects in rendered objects (pure)
 *   metrics                        what the layers measure, and its Prometheus implementation
 *   osb                            pure OSB rules and the broker's contract
 *   admin                          the admin side's contract: rollouts, listings (pure)
 *   templates, clusters            rendering; cluster health, capacity and reservations (pure)
 *   scheduling                     placement: the framework and its plugins (pure)
 *   kube                           one client per cluster, idempotent reads and writes
 *   workflows                      deterministic runbooks (activities by type only)
 *   activities                     all I/O of the workflows
 *   controllers                    watch the clusters and react (activities by type only)
 *   temporal                       the client connection, the payload codec, starting an operation
 *   broker                         the service layer behind the OSB API
 *   api                            the Koa OSB API, over the broker's contract
 *   config, log                    configuration and logging
 *   roots, main                    composition roots: the only places that build real clients
 */
const layer = (name, ...may) => ({
  name: `layer-${name}`,
  comment: `src/${name} imports only ${may.length ? may.join(', ') : 'nothing of ours'}`,
  severity: 'error',
  from: { path: `^src/${name}/` },
  to: {
    path: '^src/',
    pathNot: [`^src/${name}/`, ...may.map((m) => (m.endsWith('.ts') ? `^src/${m}$` : `^src/${m}/`))],
  },
});

const pure = ['resources', 'references', 'osb', 'admin', 'templates', 'scheduling', 'clusters'];

module.exports = {
  forbidden: [
    layer('resources'),
    layer('references'),
    layer('metrics'),
    layer('osb', 'resources'),
    layer('admin', 'resources', 'osb'),
    layer('templates', 'resources', 'osb'),
    layer('scheduling', 'resources', 'clusters'),
    layer('clusters', 'resources'),
    layer('kube', 'resources', 'osb', 'metrics'),
    layer('workflows', 'resources', 'osb', 'admin', 'scheduling', 'clusters', 'activities'),
    layer('activities', ...pure, 'admin', 'kube', 'workflows', 'metrics'),
    layer('controllers', ...pure, 'kube', 'workflows', 'activities', 'metrics'),
    layer('temporal', 'workflows'),
    layer('broker', ...pure, 'admin', 'kube', 'workflows', 'temporal', 'metrics'),
    layer('api', 'resources', 'osb', 'admin', 'metrics', 'log.ts'),
    {
      name: 'workflows-import-activities-as-types',
      comment: 'workflow code runs in the sandbox: activities are proxied, never imported as values',
      severity: 'error',
      from: { path: '^src/workflows/' },
      to: { path: '^src/activities/', dependencyTypesNot: ['type-only'] },
    },
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
      from: { path: `^src/(${['osb', 'admin', 'scheduling', 'clusters', 'references'].join('|')})/` },
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
