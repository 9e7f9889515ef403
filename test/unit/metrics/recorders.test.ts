import { Registry } from 'prom-client';
import { brokerMetrics, countBy, workerMetrics } from '../../../src/metrics/prometheus.js';
import { kubeCallOutcome, kubeVerb } from '../../../src/metrics/recorders.js';

describe('Kubernetes call labels', () => {
  test.each([
    ['GET', 'get'],
    ['HEAD', 'get'],
    ['POST', 'create'],
    ['PUT', 'update'],
    ['PATCH', 'patch'],
    ['DELETE', 'delete'],
    ['delete', 'delete'],
    ['CONNECT', 'other'],
  ])('the verb of %s is %s', (method, verb) => {
    expect(kubeVerb(method)).toBe(verb);
  });

  test.each([
    [200, 'success'],
    [201, 'success'],
    [404, 'not_found'],
    [409, 'conflict'],
    [422, 'client_error'],
    [429, 'client_error'],
    [500, 'server_error'],
    [503, 'server_error'],
    [0, 'error'],
    [302, 'error'],
  ])('the outcome of status %d is %s', (status, outcome) => {
    expect(kubeCallOutcome(status)).toBe(outcome);
  });
});

describe('countBy', () => {
  test('counts each value', () => {
    expect([...countBy(['ready', 'offline', 'ready'])]).toEqual([
      ['ready', 2],
      ['offline', 1],
    ]);
  });
});

describe('the Prometheus metrics', () => {
  test('GIVEN the broker metrics WHEN requests and operations are recorded THEN the text shows them with their labels', async () => {
    const registry = new Registry();
    const metrics = brokerMetrics(registry, { services: () => [1], plans: () => [1, 2, 3] });
    metrics.request('/v2/service_instances/:instance_id', 'PUT', 202, 0.02);
    metrics.request('/v2/service_instances/:instance_id', 'PUT', 202, 0.3);
    metrics.operationStarted('provision', 'service-1', 'plan-1');
    const text = await registry.metrics();
    expect(text).toContain(
      'interoperator_osb_requests_total{route="/v2/service_instances/:instance_id",method="PUT",status="202"} 2',
    );
    expect(text).toContain(
      'interoperator_osb_request_duration_seconds_count{route="/v2/service_instances/:instance_id",method="PUT",status="202"} 2',
    );
    expect(text).toContain(
      'interoperator_osb_request_duration_seconds_bucket{le="0.025",route="/v2/service_instances/:instance_id",method="PUT",status="202"} 1',
    );
    expect(text).toContain(
      'interoperator_operations_started_total{kind="provision",service="service-1",plan="plan-1"} 1',
    );
    expect(text).toContain('interoperator_catalog_services 1');
    expect(text).toContain('interoperator_catalog_plans 3');
  });

  test('GIVEN the worker metrics WHEN clusters change phase THEN the gauge counts the clusters in each phase now', async () => {
    const registry = new Registry();
    const metrics = workerMetrics(registry);
    metrics.clusterPhase('1', 'running');
    metrics.clusterPhase('2', 'running');
    metrics.clusterPhase('3', 'offline');
    expect(await registry.getSingleMetricAsString('interoperator_clusters')).toContain(
      'interoperator_clusters{phase="running"} 2',
    );
    metrics.clusterPhase('3', 'running');
    metrics.clusterPhase('2', undefined);
    const text = await registry.getSingleMetricAsString('interoperator_clusters');
    expect(text).toContain('interoperator_clusters{phase="running"} 2');
    expect(text).not.toContain('offline');
  });

  test("GIVEN the worker metrics WHEN clusters are probed THEN Service Fabrik's cluster gauges say which are up, their instances and what they offer", async () => {
    const registry = new Registry();
    const metrics = workerMetrics(registry);
    metrics.clusterPhase('1', 'running', {
      serviceInstances: 3,
      allocatable: { cpu: 3.5, memory: 8589934592 },
    });
    metrics.clusterPhase('2', 'offline', { serviceInstances: 0, allocatable: {} });
    const text = await registry.metrics();
    expect(text).toContain('interoperator_cluster_up{cluster="1"} 1');
    expect(text).toContain('interoperator_cluster_up{cluster="2"} 0');
    expect(text).toContain('interoperator_cluster_service_instances{cluster="1"} 3');
    expect(text).toContain('interoperator_cluster_service_instances{cluster="2"} 0');
    expect(text).toContain('interoperator_cluster_allocatable{cluster="1",type="cpu"} 3.5');
    expect(text).toContain('interoperator_cluster_allocatable{cluster="1",type="memory"} 8589934592');
    // a cluster gone leaves every gauge
    metrics.clusterPhase('1', undefined);
    const after = await registry.metrics();
    expect(after).not.toContain('cluster="1"');
    expect(after).toContain('interoperator_cluster_up{cluster="2"} 0');
  });

  test('GIVEN the worker metrics WHEN operations, retries, renderings and calls are recorded THEN the text shows them', async () => {
    const registry = new Registry();
    const metrics = workerMetrics(registry);
    metrics.operationFinished({
      kind: 'bind',
      outcome: 'succeeded',
      planId: 'plan-1',
      clusterId: '1',
      seconds: 4,
    });
    metrics.stepRetried('applyTemplate');
    metrics.templateRendered('gotemplate', 'provision', 0.004);
    metrics.kubeCall('patch', 'conflict');
    const text = await registry.metrics();
    expect(text).toContain(
      'interoperator_operations_finished_total{kind="bind",outcome="succeeded",plan="plan-1",cluster="1"} 1',
    );
    expect(text).toContain(
      'interoperator_operation_duration_seconds_bucket{le="5",kind="bind",outcome="succeeded"} 1',
    );
    expect(text).toContain(
      'interoperator_operation_duration_seconds_bucket{le="2.5",kind="bind",outcome="succeeded"} 0',
    );
    expect(text).toContain('interoperator_step_retries_total{step="applyTemplate"} 1');
    expect(text).toContain(
      'interoperator_template_render_duration_seconds_count{type="gotemplate",action="provision"} 1',
    );
    expect(text).toContain('interoperator_kubernetes_requests_total{verb="patch",outcome="conflict"} 1');
  });
});
