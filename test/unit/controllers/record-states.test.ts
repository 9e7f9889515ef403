import { Registry } from 'prom-client';
import { serviceFabrikStateCode } from '../../../src/controllers/record-states.js';
import { recordStateMetrics } from '../../../src/metrics/prometheus.js';

describe("Service Fabrik's number for a record's state", () => {
  test.each([
    ['succeeded', 0],
    ['failed', 1],
    ['in progress', 2],
    ['in_queue', 3],
    ['update', 3],
    ['delete', 3],
    [undefined, undefined],
    ['something else', undefined],
  ])('%s -> %s', (state, code) => {
    expect(serviceFabrikStateCode(state)).toBe(code);
  });
});

describe('the record state gauges', () => {
  test('GIVEN states reported, changed and withdrawn THEN the exposition has one series per record, as it is now', async () => {
    const registry = new Registry();
    const states = recordStateMetrics(registry);
    states.instanceState('i-1', 2);
    states.instanceState('i-2', 0);
    states.bindingState('b-1', 'i-1', 2);
    states.instanceState('i-1', 0);
    states.bindingState('b-1', 'i-1', 4);
    states.instanceState('i-2', undefined);
    const text = await registry.metrics();
    expect(text).toContain('interoperator_service_instances_state{instance_id="i-1"} 0');
    expect(text).not.toContain('instance_id="i-2"');
    expect(text).toContain('interoperator_service_bindings_state{binding_id="b-1",instance_id="i-1"} 4');
    expect(text.match(/^interoperator_service_instances_state\{/gm)).toHaveLength(1);
  });

  test("GIVEN a record's labels changed and the record gone THEN its detailed series is replaced, never a second one, and once gone has its id alone", async () => {
    const registry = new Registry();
    const states = recordStateMetrics(registry);
    const labels = {
      state: 'in progress',
      creationTimestamp: '2026-11-28 21:19:38 +0000 UTC',
      deletionTimestamp: '',
      serviceId: 'service-1',
      planId: 'plan-1',
      organizationGuid: 'org-1',
      spaceGuid: 'space-1',
      namespace: 'sf-i-1',
      lastOperation: 'in_queue',
    };
    const bindingLabels = {
      state: 'succeeded',
      creationTimestamp: '2026-11-28 21:20:00 +0000 UTC',
      deletionTimestamp: '',
      namespace: 'sf-i-1',
    };
    states.instanceState('i-1', 2, labels);
    states.instanceState('i-1', 0, { ...labels, state: 'succeeded' });
    states.bindingState('b-1', 'i-1', 0, bindingLabels);
    let text = await registry.metrics();
    expect(text).toContain(
      'interoperator_service_instances_metrics_state{instance_id="i-1",state="succeeded",' +
        'creation_timestamp="2026-11-28 21:19:38 +0000 UTC",deletion_timestamp="",service_id="service-1",' +
        'plan_id="plan-1",organization_guid="org-1",space_guid="space-1",sf_namespace="sf-i-1",' +
        'last_operation="in_queue"} 0',
    );
    expect(text).toContain(
      'interoperator_service_bindings_metrics_state{binding_id="b-1",instance_id="i-1",' +
        'creation_timestamp="2026-11-28 21:20:00 +0000 UTC",deletion_timestamp="",state="succeeded",' +
        'sf_namespace="sf-i-1"} 0',
    );
    expect(text.match(/^interoperator_service_instances_metrics_state\{/gm)).toHaveLength(1);

    states.instanceState('i-1', 4);
    states.bindingState('b-1', 'i-1', 4);
    text = await registry.metrics();
    expect(text).toContain(
      'interoperator_service_instances_metrics_state{instance_id="i-1",state="",creation_timestamp="",' +
        'deletion_timestamp="",service_id="",plan_id="",organization_guid="",space_guid="",sf_namespace="",' +
        'last_operation=""} 4',
    );
    expect(text).toContain(
      'interoperator_service_bindings_metrics_state{binding_id="b-1",instance_id="",creation_timestamp="",' +
        'deletion_timestamp="",state="",sf_namespace=""} 4',
    );
    // The plain series keeps the binding's instance.
    expect(text).toContain('interoperator_service_bindings_state{binding_id="b-1",instance_id="i-1"} 4');
    expect(text.match(/^interoperator_service_\w+_metrics_state\{/gm)).toHaveLength(2);

    states.instanceState('i-1', undefined);
    states.bindingState('b-1', 'i-1', undefined);
    expect(await registry.metrics()).not.toMatch(/^interoperator_service_\w+_state\{/m);
  });
});
