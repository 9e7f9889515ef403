/**
 * A master marked as Service Fabrik marks it, on the real servers: with INTEROP_MASTER_CLUSTER_ID
 * unset, the SFCluster labelled `interoperator.servicefabrik.io/primarycluster=true` is the master,
 * whatever its name; instances go there and the health round keeps it running. The plan's
 * objects are ConfigMaps and its status template says done at once, so no operator is needed.
 */
import { randomUUID } from 'node:crypto';
import { getRecord, patchRecord } from '../../src/kube/custom-objects.js';
import { PRIMARY_CLUSTER_LABEL, registerCluster } from '../../src/kube/cluster-registry.js';
import { resourceName } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFSERVICEINSTANCE,
  type PlanTemplate,
  type SFCluster,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { clusters, environment, eventually, unique } from '../support/env.js';
import { osbClient, provisionBody, provisionSettled, type OsbClient } from '../support/osb.js';
import { DESIGN_SERVICE_ID, applyPlanCopy, installDesignPlan } from '../support/plans.js';
import { startProcess, systemSettings, type SystemProcess } from '../support/system.js';

const TEMPLATES: PlanTemplate[] = [
  {
    action: 'provision',
    type: 'gotemplate',
    content: [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: settings',
      'data:',
      '  size: small',
      '',
    ].join('\n'),
  },
  {
    action: 'status',
    type: 'gotemplate',
    content: ['provision:', '  state: succeeded', 'deprovision:', '  state: succeeded', ''].join('\n'),
  },
];

describe("a master marked by Service Fabrik's label", () => {
  const [master] = clusters();
  const registry = unique('primary');
  const planId = randomUUID();
  let system: SystemProcess | undefined;
  let osb: OsbClient;

  beforeAll(async () => {
    const design = await installDesignPlan(master!, registry);
    await applyPlanCopy(master!, registry, design, planId, 'primary', { templates: TEMPLATES, schemas: {} });
    // The master registered under another name than 1, and labelled the master.
    await registerCluster(master!, registry, 'main', environment().clusters[0]!.kubeconfigPath);
    await patchRecord(master!, SFCLUSTER, registry, 'main', {
      metadata: { labels: { [PRIMARY_CLUSTER_LABEL]: 'true' } },
    });
    system = await startProcess(
      'all',
      await systemSettings({ INTEROP_NAMESPACE: registry, INTEROP_CLUSTER_PROBE_SECONDS: '1' }),
    );
    osb = osbClient(system.url);
    await eventually('the plan in the catalog', async () => {
      const res = await osb('GET', '/v2/catalog');
      return JSON.stringify(res.body).includes(planId) ? true : undefined;
    });
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  test('GIVEN INTEROP_MASTER_CLUSTER_ID unset WHEN an instance is provisioned THEN it is placed on the labelled SFCluster, which the health round finds running', async () => {
    const instanceId = randomUUID();
    const settled = await provisionSettled(osb, instanceId, provisionBody(DESIGN_SERVICE_ID, planId));
    expect(settled.body.state).toBe('succeeded');
    const record = await getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      resourceName(instanceId),
    );
    expect(record?.spec.clusterId).toBe('main');
    const cluster = await eventually('the master probed', async () => {
      const found = await getRecord<SFCluster>(master!, SFCLUSTER, registry, 'main');
      return found?.status?.phase === 'running' ? found : undefined;
    });
    expect(cluster.status?.phase).toBe('running');
  }, 120_000);
});
