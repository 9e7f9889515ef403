#!/usr/bin/env node
/** Runs the example operator: `node dist/examples/operator/main.js [--kubeconfig PATH ...]` (default: KUBECONFIG or in-cluster). */
import { clusterClientFromFile } from '../../src/kube/clients.js';
import { startExampleOperator } from './operator.js';

const files = process.argv.flatMap((arg, i, all) =>
  arg === '--kubeconfig' && all[i + 1] ? [all[i + 1]!] : [],
);
const clusters = (files.length ? files : [undefined]).map((file, i) =>
  clusterClientFromFile(String(i + 1), file),
);
const operator = await startExampleOperator({ clusters, log: (m) => console.log(m) });
const stop = () => void operator.stop().then(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
