#!/usr/bin/env node
/**
 * Runs the example operator until SIGINT or SIGTERM:
 *
 *   node dist/examples/operator/main.js [--kubeconfig PATH ...] [--ready-after-ms N]
 *                                      [--backup-store-namespace NAMESPACE]
 *
 * One `--kubeconfig` per cluster to reconcile in; without any, the default kubeconfig (KUBECONFIG,
 * ~/.kube/config, or the in-cluster service account). The CRD in examples/operator/crds must be
 * installed in each cluster. `--backup-store-namespace` keeps every backup also in that namespace of
 * the first cluster, where restores on any cluster find them.
 */
import { parseArgs } from 'node:util';
import { clusterClientFromFile } from '../../src/kube/clients.js';
import { startExampleOperator } from './operator.js';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string', multiple: true, default: [] },
    'ready-after-ms': { type: 'string' },
    'backup-store-namespace': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log(
    'usage: main.js [--kubeconfig PATH ...] [--ready-after-ms N] [--backup-store-namespace NAMESPACE]',
  );
  process.exit(0);
}
const files: (string | undefined)[] = values.kubeconfig.length > 0 ? values.kubeconfig : [undefined];
const clusters = files.map((file, i) => clusterClientFromFile(String(i + 1), file));
const readyAfter = values['ready-after-ms'];
const storeNamespace = values['backup-store-namespace'];
const operator = await startExampleOperator({
  clusters,
  ...(readyAfter !== undefined ? { readyAfterMs: Number(readyAfter) } : {}),
  ...(storeNamespace ? { backupStore: { cluster: clusters[0]!, namespace: storeNamespace } } : {}),
  log: (message) => console.log(`${new Date().toISOString()} ${message}`),
});
console.log(`example operator running in ${clusters.length} cluster(s)`);

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: stopping`);
  void operator.stop().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
};
process.once('SIGINT', () => stop('SIGINT'));
process.once('SIGTERM', () => stop('SIGTERM'));
