/**
 * The recorders of recorders.ts as Prometheus metrics (prom-client), on a registry of the
 * process's own rather than prom-client's global one, so that a test can run a broker and a
 * worker side by side, each with its metrics. docs/operations.md lists the metrics.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type {
  BindingStateLabels,
  ClusterFigures,
  ClusterHealthRecorder,
  FinishedOperation,
  InstanceStateLabels,
  KubeCallOutcome,
  KubeCallRecorder,
  OperationKind,
  OperationRecorder,
  OperationStartRecorder,
  OsbRequestRecorder,
  RecordStateRecorder,
} from './recorders.js';

/** Prefix of our metric names; the Temporal SDK's own start with `temporal_`. */
export const METRIC_PREFIX = 'interoperator_';

/** Buckets of the OSB request latency, in seconds: from a cached read to a synchronous operation. */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Buckets of an operation's duration, in seconds: from a bind to an operator that takes an hour. */
const OPERATION_BUCKETS = [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
/** Buckets of a template's rendering, in seconds. */
const RENDER_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** A registry with the process's default metrics (CPU, memory, event loop, GC). */
export function processRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** The broker's metrics: OSB requests, operations started and the catalog's size. */
export function brokerMetrics(
  registry: Registry,
  catalog: { services(): readonly unknown[]; plans(): readonly unknown[] },
): OsbRequestRecorder & OperationStartRecorder {
  const requests = new Counter({
    name: `${METRIC_PREFIX}osb_requests_total`,
    help: 'OSB requests answered, by route pattern, method and status code.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: `${METRIC_PREFIX}osb_request_duration_seconds`,
    help: 'Time from an OSB request to its answer, by route pattern, method and status code.',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: REQUEST_BUCKETS,
    registers: [registry],
  });
  const started = new Counter({
    name: `${METRIC_PREFIX}operations_started_total`,
    help: 'Operation workflows the broker started, by kind, service id and plan id.',
    labelNames: ['kind', 'service', 'plan'] as const,
    registers: [registry],
  });
  new Gauge({
    name: `${METRIC_PREFIX}catalog_services`,
    help: 'Services in the catalog the broker serves.',
    registers: [registry],
    collect() {
      this.set(catalog.services().length);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}catalog_plans`,
    help: 'Plans in the catalog the broker serves.',
    registers: [registry],
    collect() {
      this.set(catalog.plans().length);
    },
  });
  return {
    request(route, method, status, seconds) {
      const labels = { route, method, status: String(status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
    },
    operationStarted(kind: OperationKind, serviceId: string, planId: string) {
      started.inc({ kind, service: serviceId, plan: planId });
    },
  };
}

/** The worker's metrics: operations finished, step retries, rendering, Kubernetes calls, cluster health. */
export function workerMetrics(
  registry: Registry,
): OperationRecorder & KubeCallRecorder & ClusterHealthRecorder {
  const finished = new Counter({
    name: `${METRIC_PREFIX}operations_finished_total`,
    help: 'Operation workflows that ended, by kind, outcome, plan id and cluster id.',
    labelNames: ['kind', 'outcome', 'plan', 'cluster'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: `${METRIC_PREFIX}operation_duration_seconds`,
    help: 'Time from the start of an operation workflow to its end, by kind and outcome.',
    labelNames: ['kind', 'outcome'] as const,
    buckets: OPERATION_BUCKETS,
    registers: [registry],
  });
  const retries = new Counter({
    name: `${METRIC_PREFIX}step_retries_total`,
    help: 'Steps (activities, local or queued) run again after a failure, by step.',
    labelNames: ['step'] as const,
    registers: [registry],
  });
  const render = new Histogram({
    name: `${METRIC_PREFIX}template_render_duration_seconds`,
    help: 'Time to render a template, by template type and action.',
    labelNames: ['type', 'action'] as const,
    buckets: RENDER_BUCKETS,
    registers: [registry],
  });
  const kube = new Counter({
    name: `${METRIC_PREFIX}kubernetes_requests_total`,
    help: 'Kubernetes API calls (watches aside), by verb and outcome.',
    labelNames: ['verb', 'outcome'] as const,
    registers: [registry],
  });
  const phases = new Map<string, string>();
  const figures = new Map<string, ClusterFigures>();
  new Gauge({
    name: `${METRIC_PREFIX}clusters`,
    help: 'Registered clusters by the phase of their last health probe.',
    labelNames: ['phase'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [phase, count] of countBy(phases.values())) this.set({ phase }, count);
    },
  });
  // Under Service Fabrik's names, so that its dashboards and alerts keep working.
  new Gauge({
    name: `${METRIC_PREFIX}cluster_up`,
    help: 'Whether a cluster is running (1) or not (0), as its last health probe found it.',
    labelNames: ['cluster'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [cluster, phase] of phases) this.set({ cluster }, phase === 'running' ? 1 : 0);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}cluster_service_instances`,
    help: 'Instances placed on a cluster.',
    labelNames: ['cluster'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [cluster, found] of figures)
        if (found.serviceInstances !== undefined) this.set({ cluster }, found.serviceInstances);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}cluster_allocatable`,
    help: 'What a cluster offers to pods, by resource type (cpu in cores, memory in bytes).',
    labelNames: ['cluster', 'type'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [cluster, found] of figures)
        for (const [type, amount] of Object.entries(found.allocatable ?? {}))
          this.set({ cluster, type }, amount);
    },
  });
  return {
    operationFinished(op: FinishedOperation) {
      finished.inc({ kind: op.kind, outcome: op.outcome, plan: op.planId, cluster: op.clusterId });
      duration.observe({ kind: op.kind, outcome: op.outcome }, op.seconds);
    },
    stepRetried(step) {
      retries.inc({ step });
    },
    templateRendered(type, action, seconds) {
      render.observe({ type, action }, seconds);
    },
    kubeCall(verb: string, outcome: KubeCallOutcome) {
      kube.inc({ verb, outcome });
    },
    clusterPhase(clusterId, phase, found) {
      if (phase === undefined) {
        phases.delete(clusterId);
        figures.delete(clusterId);
        return;
      }
      phases.set(clusterId, phase);
      if (found) figures.set(clusterId, found);
    },
  };
}

/**
 * The state of every instance and binding record under Service Fabrik's names, a series each in
 * each of two pairs: the plain one (`interoperator_service_instances_state{instance_id}`,
 * `interoperator_service_bindings_state{binding_id, instance_id}`) and the detailed one its
 * dashboards read (`interoperator_service_instances_metrics_state`,
 * `interoperator_service_bindings_metrics_state`), labelled with what the record says. A record
 * whose labels change has its series replaced, never a second one; a gone record's detailed series
 * has its own id alone, the rest empty, as Service Fabrik's. Registered only where asked for: a
 * series per record is what the other metrics avoid.
 */
export function recordStateMetrics(registry: Registry): RecordStateRecorder {
  const instances = new Map<string, { code: number; labels: InstanceStateLabels | undefined }>();
  const bindings = new Map<
    string,
    { instanceId: string; code: number; labels: BindingStateLabels | undefined }
  >();
  new Gauge({
    name: `${METRIC_PREFIX}service_instances_state`,
    help: 'State of a service instance: 0 succeeded, 1 failed, 2 in progress, 3 in_queue/update/delete, 4 gone.',
    labelNames: ['instance_id'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [instance_id, { code }] of instances) this.set({ instance_id }, code);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}service_bindings_state`,
    help: 'State of a service binding: 0 succeeded, 1 failed, 2 in progress, 3 in_queue/update/delete, 4 gone.',
    labelNames: ['binding_id', 'instance_id'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [binding_id, { instanceId, code }] of bindings)
        this.set({ binding_id, instance_id: instanceId }, code);
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}service_instances_metrics_state`,
    help: 'State of a service instance, labelled with what its record says: 0 succeeded, 1 failed, 2 in progress, 3 in_queue/update/delete, 4 gone.',
    labelNames: [
      'instance_id',
      'state',
      'creation_timestamp',
      'deletion_timestamp',
      'service_id',
      'plan_id',
      'organization_guid',
      'space_guid',
      'sf_namespace',
      'last_operation',
    ] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [instance_id, { code, labels }] of instances)
        this.set(
          {
            instance_id,
            state: labels?.state ?? '',
            creation_timestamp: labels?.creationTimestamp ?? '',
            deletion_timestamp: labels?.deletionTimestamp ?? '',
            service_id: labels?.serviceId ?? '',
            plan_id: labels?.planId ?? '',
            organization_guid: labels?.organizationGuid ?? '',
            space_guid: labels?.spaceGuid ?? '',
            sf_namespace: labels?.namespace ?? '',
            last_operation: labels?.lastOperation ?? '',
          },
          code,
        );
    },
  });
  new Gauge({
    name: `${METRIC_PREFIX}service_bindings_metrics_state`,
    help: 'State of a service binding, labelled with what its record says: 0 succeeded, 1 failed, 2 in progress, 3 in_queue/update/delete, 4 gone.',
    labelNames: [
      'binding_id',
      'instance_id',
      'creation_timestamp',
      'deletion_timestamp',
      'state',
      'sf_namespace',
    ] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [binding_id, { instanceId, code, labels }] of bindings)
        this.set(
          {
            binding_id,
            instance_id: labels ? instanceId : '',
            creation_timestamp: labels?.creationTimestamp ?? '',
            deletion_timestamp: labels?.deletionTimestamp ?? '',
            state: labels?.state ?? '',
            sf_namespace: labels?.namespace ?? '',
          },
          code,
        );
    },
  });
  return {
    instanceState(instanceId, code, labels) {
      if (code === undefined) instances.delete(instanceId);
      else instances.set(instanceId, { code, labels });
    },
    bindingState(bindingId, instanceId, code, labels) {
      if (code === undefined) bindings.delete(bindingId);
      else bindings.set(bindingId, { instanceId, code, labels });
    },
  };
}

/** How often each value occurs. */
export function countBy(values: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts;
}
