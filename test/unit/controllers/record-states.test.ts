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
});
