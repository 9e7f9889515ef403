/**
 * Starts the deploy suite's servers once: the integration suite's environment (Temporal dev server,
 * a master and two sister apiservers, our CRDs) with the master on the node's bridge, a real node
 * on the master (dev/local/kube-node.ts) so that pods run, and a second on the first sister, in a
 * network namespace of its own, so that an instance can move with its data. The description file
 * named by INTEROP_TEST_ENV (test/support/env.ts) also holds the nodes (`node`, `sisterNode`), or
 * why there are none (`nodeUnavailable`): without CI=true, a machine where the nodes cannot start
 * (not root, Debian's packages missing: tools/ensure-node-packages.sh) skips the suite's tests;
 * under CI=true this setup fails instead.
 *
 * Plain ESM over the compiled code (dist/), as test/integration/global-setup.mjs.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEnvironment } from '../integration/global-setup.mjs';

const compiled = fileURLToPath(new URL('../../dist/dev/local/kube-node.js', import.meta.url));

/** Adds `fields` to the environment's description file. */
function describeInFile(fields) {
  const file = process.env.INTEROP_TEST_ENV;
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), ...fields }, null, 2));
}

export default async function globalSetup() {
  if (!existsSync(compiled)) throw new Error(`${compiled} is missing: run \`npm run build\` first`);
  const { createNodeNetwork, createSisterNodeNetwork, startKubeNode } = await import(compiled);
  const environment = { key: '__interopEnvironment', envVar: 'INTEROP_TEST_ENV', temporalKind: 'dev' };
  try {
    const network = await createNodeNetwork();
    globalThis.__interopNodeNetwork = network;
    const sisterNetwork = await createSisterNodeNetwork();
    globalThis.__interopSisterNodeNetwork = sisterNetwork;
    // The chart's CRDs are left to `helm install` (test/deploy/chart.test.ts).
    await startEnvironment({
      ...environment,
      nodeAddress: network.apiserverAddress,
      sisterNodeAddresses: { 'sister-1': sisterNetwork.apiserverAddress },
      chartCrdsOnMaster: false,
    });
    const { info } = globalThis.__interopEnvironment;
    const node = await startKubeNode({
      workDir: path.join(info.workDir, 'node'),
      kubeconfigPath: info.clusters[0].kubeconfigPath,
      network,
    });
    globalThis.__interopNode = node;
    describeInFile({ node: node.info });
    console.log(
      `[deploy] node ${node.info.name} Ready ${node.info.readySeconds} s after containerd started; logs in ${node.info.workDir}`,
    );
    const sister = info.clusters.find((c) => c.id === 'sister-1');
    const sisterNode = await startKubeNode({
      workDir: path.join(info.workDir, 'sister-node'),
      kubeconfigPath: sister.kubeconfigPath,
      network: sisterNetwork,
      name: 'interop-sister-node',
    });
    globalThis.__interopSisterNode = sisterNode;
    describeInFile({ sisterNode: { ...sisterNode.info, clusterId: sister.id } });
    console.log(
      `[deploy] node ${sisterNode.info.name} of cluster ${sister.id} Ready ${sisterNode.info.readySeconds} s after containerd started; logs in ${sisterNode.info.workDir}`,
    );
  } catch (err) {
    if (process.env.CI === 'true') {
      await stopAll();
      throw err;
    }
    console.warn(`[deploy] no node (its tests are skipped; under CI=true, failed): ${err.message}`);
    await globalThis.__interopSisterNode?.stop();
    await globalThis.__interopNode?.stop();
    globalThis.__interopNode = globalThis.__interopSisterNode = undefined;
    if (!globalThis.__interopEnvironment) await startEnvironment(environment);
    describeInFile({ nodeUnavailable: err.message.split('\n')[0] });
  }
}

/** Stops the nodes, then the environment, then removes the nodes' networks. */
export async function stopAll() {
  await globalThis.__interopSisterNode?.stop();
  await globalThis.__interopNode?.stop();
  await globalThis.__interopEnvironment?.stop();
  await globalThis.__interopSisterNodeNetwork?.remove();
  await globalThis.__interopNodeNetwork?.remove();
  globalThis.__interopNode = globalThis.__interopSisterNode = globalThis.__interopEnvironment = undefined;
  globalThis.__interopNodeNetwork = globalThis.__interopSisterNodeNetwork = undefined;
}
