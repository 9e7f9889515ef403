/**
 * The steps of a deletion, run again after it removed its records (a workflow task replayed after
 * its steps ran, a step retried), on the real apiserver: each treats the deletion as done. Records
 * are removed last, once the operator's resources are, so a record that is gone means nothing is
 * left to delete or to wait for; a step that is no deletion's still says the record is missing.
 */
import { randomUUID } from 'node:crypto';
import { resourceActivities } from '../../src/activities/resources.js';
import { clusterDirectory } from '../../src/kube/cluster-directory.js';
import type { BindingRef, InstanceRef } from '../../src/workflows/messages.js';
import { closeRenderer, renderObjects, renderValues } from '../../src/templates/index.js';
import { clusters, environment } from '../support/env.js';

const [master] = clusters();
const env = environment();
const steps = resourceActivities({
  clusters: clusterDirectory(master!, env.namespace, { masterId: env.clusters[0]!.id }),
  catalog: { plan: () => undefined, service: () => undefined, plans: () => [] },
  renderer: { renderObjects, renderValues },
});

afterAll(async () => {
  await closeRenderer();
});

/** An instance whose record (and namespace) are gone, and a binding of it likewise. */
function removed(): { instance: InstanceRef; binding: BindingRef } {
  const instanceId = randomUUID();
  const bindingId = randomUUID();
  const instance = {
    instanceId,
    name: instanceId,
    namespace: `sf-${instanceId}`,
    clusterId: env.clusters[0]!.id,
  };
  return { instance, binding: { bindingId, name: bindingId, namespace: instance.namespace, instance } };
}

describe('a deletion’s steps after its records are gone', () => {
  test('GIVEN a deprovision whose record is gone WHEN its steps run again THEN nothing is left to delete and it succeeded', async () => {
    const { instance } = removed();
    expect(await steps.deleteResources({ instance })).toBe(0);
    expect(await steps.checkStatus({ instance }, 'deprovision')).toEqual({ state: 'succeeded' });
  });

  test('GIVEN an unbind whose record is gone WHEN its steps run again THEN nothing is applied or left and it succeeded', async () => {
    const target = removed();
    expect(await steps.applyTemplate(target, 'unbind')).toBe(0);
    expect(await steps.deleteResources(target)).toBe(0);
    expect(await steps.checkStatus(target, 'unbind')).toEqual({ state: 'succeeded' });
  });

  test('GIVEN no record WHEN a provision’s or a bind’s step runs THEN it says the record is missing', async () => {
    const target = removed();
    await expect(steps.checkStatus({ instance: target.instance }, 'provision')).rejects.toThrow(
      /has no record/,
    );
    await expect(steps.applyTemplate(target, 'bind')).rejects.toThrow(/has no record/);
  });
});
