/**
 * The real servers themselves: isolated master and sister clusters, our CRDs enforced by the
 * apiserver, controllers that finish deleting namespaces, and a Temporal dev server with our search
 * attributes.
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { OsbInstanceId, OsbOperation } from '../../src/workflows/search-attributes.js';
import { SFPLAN, SFSERVICEINSTANCE } from '../../src/resources/types.js';
import { apiMessageOf } from '../../src/kube/errors.js';
import {
  clusters,
  environment,
  eventually,
  temporalClient,
  unique,
  untilGone,
  untilNamespaceGone,
} from '../support/env.js';

describe('the local Kubernetes clusters', () => {
  const [master, sister1, sister2] = clusters();

  test('there is a master and two sisters, each its own apiserver', () => {
    expect(environment().clusters.map((c) => c.id)).toEqual(['1', 'sister-1', 'sister-2']);
    const servers = new Set(clusters().map((c) => c.kubeConfig.getCurrentCluster()?.server));
    expect(servers.size).toBe(3);
  });

  test('an SFServiceInstance in the master and one in a sister are isolated from each other', async () => {
    const namespace = unique('iso');
    const instance = (name: string, planId: string) => ({
      apiVersion: SFSERVICEINSTANCE.apiVersion,
      kind: SFSERVICEINSTANCE.kind,
      metadata: { name, namespace },
      spec: { serviceId: 'svc', planId },
    });
    for (const cluster of [master!, sister1!]) {
      await cluster.core.createNamespace({ body: { metadata: { name: namespace } } });
    }
    const api = {
      group: SFSERVICEINSTANCE.group,
      version: SFSERVICEINSTANCE.version,
      plural: SFSERVICEINSTANCE.plural,
      namespace,
    };
    await master!.custom.createNamespacedCustomObject({ ...api, body: instance('on-master', 'plan-m') });
    await sister1!.custom.createNamespacedCustomObject({ ...api, body: instance('on-sister', 'plan-s') });

    const names = async (c: typeof master) =>
      (
        (await c!.custom.listNamespacedCustomObject(api)) as { items: { metadata: { name: string } }[] }
      ).items.map((i) => i.metadata.name);
    expect(await names(master)).toEqual(['on-master']);
    expect(await names(sister1)).toEqual(['on-sister']);
    // The second sister has not even got the namespace.
    await expect(sister2!.core.readNamespace({ name: namespace })).rejects.toMatchObject({ code: 404 });
  });

  test('the apiserver rejects an SFPlan with an unknown template action, naming the field', async () => {
    const namespace = unique('plan');
    await master!.core.createNamespace({ body: { metadata: { name: namespace } } });
    const plan = {
      apiVersion: SFPLAN.apiVersion,
      kind: SFPLAN.kind,
      metadata: { name: 'bad-plan', namespace },
      spec: {
        name: 'bad',
        id: 'bad-plan',
        description: 'a plan with a template for an action that does not exist',
        serviceId: 'svc',
        templates: [{ action: 'explode', type: 'gotemplate', content: 'x' }],
      },
    };
    const err = await master!.custom
      .createNamespacedCustomObject({
        group: SFPLAN.group,
        version: SFPLAN.version,
        plural: SFPLAN.plural,
        namespace,
        body: plan,
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ code: 422 });
    const message = apiMessageOf(err);
    expect(message).toContain('spec.templates[0].action');
    // the pattern that refuses it spells out the OSB actions and the custom ones (x-<name>)
    expect(message).toContain('Invalid value: "explode"');
    expect(message).toMatch(/provision\|bind\|unbind.*\|x-/);
  });

  test('a deleted namespace finishes deleting and owned objects are garbage-collected', async () => {
    const namespace = unique('gc');
    await master!.core.createNamespace({ body: { metadata: { name: namespace } } });
    const owner = await master!.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'owner' } },
    });
    await master!.core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: {
          name: 'owned',
          ownerReferences: [
            { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata!.uid! },
          ],
        },
      },
    });
    await master!.core.deleteNamespacedConfigMap({ namespace, name: 'owner' });
    await untilGone('the owned ConfigMap to be garbage-collected', () =>
      master!.core.readNamespacedConfigMap({ namespace, name: 'owned' }),
    );
    await master!.core.deleteNamespace({ name: namespace });
    await untilNamespaceGone(master!, namespace);
  });
});

describe('the Temporal server of the run (dev or production)', () => {
  test('a workflow started with a search attribute is found again by a visibility query', async () => {
    const { client, close } = await temporalClient();
    const { temporal } = environment();
    const taskQueue = unique('trivial');
    const connection = await NativeConnection.connect({ address: temporal.address });
    const worker = await Worker.create({
      connection,
      namespace: temporal.namespace,
      taskQueue,
      workflowsPath: fileURLToPath(new URL('../fixtures/workflows/trivial.ts', import.meta.url)),
    });
    const instanceId = unique('instance');
    try {
      await worker.runUntil(async () => {
        const result = await client.workflow.execute('greet', {
          taskQueue,
          workflowId: unique('greet'),
          args: ['inter-operator'],
          typedSearchAttributes: [
            { key: OsbInstanceId, value: instanceId },
            { key: OsbOperation, value: 'provision' },
          ],
        });
        expect(result).toBe('hello, inter-operator');
      });
      const found = await eventually('the workflow to be visible', async () => {
        const ids: string[] = [];
        for await (const wf of client.workflow.list({
          query: `OsbInstanceId = "${instanceId}" AND OsbOperation = "provision"`,
        })) {
          ids.push(wf.workflowId);
        }
        return ids.length > 0 ? ids : undefined;
      });
      expect(found).toHaveLength(1);
    } finally {
      await connection.close();
      await close();
    }
  });
});
