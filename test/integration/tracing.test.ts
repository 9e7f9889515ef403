/**
 * Tracing end to end: the broker and the worker as separate processes, sending their spans to a
 * collector (a small receiver standing for the user's). One provision is one trace: the OSB
 * request's server span, the workflow start under it, the workflow run, its activities, and their
 * Kubernetes calls, each the child of the one before, across both processes.
 */
import { randomUUID } from 'node:crypto';
import { eventually } from '../support/env.js';
import { osbClient, provisionBody, untilSettled } from '../support/osb.js';
import { startOtlpCollector, type CollectedSpan, type OtlpCollector } from '../support/otlp-collector.js';
import {
  installCatalog,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
} from '../support/system.js';

const SERVICE_ID = '7c1a5a2e-6a4b-4c55-9a7e-2d6f5f0f1a01';
const PLAN_ID = '2f3c9a8e-0d7b-4a8e-b7a6-5a1c0e9d4b02';

describe('tracing with an OTLP collector', () => {
  let collector: OtlpCollector;
  let operator: { stop(): Promise<void> };
  const processes: SystemProcess[] = [];

  beforeAll(async () => {
    collector = await startOtlpCollector();
    operator = await startOperator();
    await installCatalog('examples/mustache');
    const settings = await systemSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      // Spans go out within a fifth of a second rather than every five seconds.
      OTEL_BSP_SCHEDULE_DELAY: '200',
    });
    processes.push(await startProcess('worker', settings));
    processes.push(await startProcess('broker', settings));
  });
  afterAll(async () => {
    for (const p of processes) await p.stop();
    await operator?.stop();
    await collector?.close();
  });

  test('GIVEN a provision WHEN it has succeeded THEN one trace links the request, the workflow, its activities and their Kubernetes calls', async () => {
    const osb = osbClient(processes[1]!.url);
    const instanceId = randomUUID();
    const path = `/v2/service_instances/${instanceId}`;
    const accepted = await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE_ID, PLAN_ID));
    expect(accepted.status).toBe(202);
    const done = await untilSettled(
      osb,
      `${path}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
    );
    expect(done.body.state).toBe('succeeded');

    // THEN the request's server span, from the broker
    const request = await eventually(
      'the request span',
      async () =>
        collector
          .spans()
          .find(
            (s) =>
              s.name === 'PUT /v2/service_instances/:instance_id' &&
              s.attributes['url.path'] === path &&
              s.attributes['http.response.status_code'] === 202,
          ),
      10_000,
    );
    expect(request.service).toBe('interoperator-broker');
    expect(request.parentSpanId).toBe('');

    // AND under it, in the same trace, the workflow and the activities and Kubernetes calls it ran
    const trace = await eventually(
      'the workflow, activity and Kubernetes spans of the trace',
      async () => {
        const spans = collector.spans().filter((s) => s.traceId === request.traceId);
        const names = spans.map((s) => s.name);
        return names.includes('RunWorkflow:provisionWorkflow') &&
          names.some((n) => n.startsWith('RunActivity:')) &&
          names.some((n) => n.startsWith('kube '))
          ? spans
          : undefined;
      },
      30_000,
    ).catch((err: Error) => {
      throw new Error(
        `${err.message}; received ${collector.requests().length} exports: ${summary(collector.spans())}`,
      );
    });
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const parentOf = (s: CollectedSpan) => byId.get(s.parentSpanId);

    const start = trace.find((s) => s.name === 'StartWorkflow:provisionWorkflow');
    expect(start && parentOf(start)).toBe(request);
    const run = trace.find((s) => s.name === 'RunWorkflow:provisionWorkflow')!;
    expect(run.service).toBe('interoperator-worker');
    expect(parentOf(run)).toBe(start);

    const activities = trace.filter((s) => s.name.startsWith('RunActivity:'));
    for (const activity of activities) {
      const scheduled = parentOf(activity);
      expect([activity.name, scheduled?.name]).toEqual([
        activity.name,
        activity.name.replace('RunActivity:', 'StartActivity:'),
      ]);
      expect(parentOf(scheduled!)).toBe(run);
    }
    // the broker's own Kubernetes calls are under its request, the activities' under each activity
    const kube = trace.filter((s) => s.name.startsWith('kube '));
    for (const call of kube) {
      expect([call.name, call.attributes['k8s.cluster.id']]).toEqual([call.name, '1']);
      expect(parentOf(call)).toBe(
        call.service === 'interoperator-broker' ? request : activities.find((a) => a === parentOf(call)),
      );
    }
    const underActivities = kube.filter((s) => s.service === 'interoperator-worker');
    expect(underActivities.length).toBeGreaterThan(0);
    // the records of the instance were written in the trace
    expect(underActivities.some((s) => s.attributes['k8s.object.name'] === instanceId)).toBe(true);
  });

  test('GIVEN a synchronous bind WHEN it has succeeded THEN its steps read the instance’s record once and create the binding’s, the later steps using what the first left', async () => {
    const osb = osbClient(processes[1]!.url);
    const instanceId = randomUUID();
    const bindingId = randomUUID();
    const path = `/v2/service_instances/${instanceId}`;
    const accepted = await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE_ID, PLAN_ID));
    expect(accepted.status).toBe(202);
    expect((await untilSettled(osb, `${path}/last_operation`)).body.state).toBe('succeeded');

    const bind = await osb('PUT', `${path}/service_bindings/${bindingId}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLAN_ID,
    });
    expect(bind.status).toBe(201);

    const request = await eventually(
      'the bind’s request span',
      async () =>
        collector
          .spans()
          .find(
            (s) =>
              s.name === 'PUT /v2/service_instances/:instance_id/service_bindings/:binding_id' &&
              s.attributes['url.path'] === `${path}/service_bindings/${bindingId}`,
          ),
      10_000,
    );
    const ran = (name: string) =>
      collector.spans().some((s) => s.traceId === request.traceId && s.name === `RunActivity:${name}`);
    await eventually(
      'the bind’s steps in its trace',
      async () => ran('recordBinding') && ran('checkStatus') && ran('recordBindingStatus'),
      30_000,
    );
    // The spans of a process go out together once its activities ended: the last step's calls are in.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const calls = (call: string, plural: string) =>
      collector
        .spans()
        .filter(
          (s) =>
            s.traceId === request.traceId &&
            s.service === 'interoperator-worker' &&
            s.name === `kube ${call}` &&
            s.attributes['k8s.object.kind'] === plural,
        ).length;
    const reads = (plural: string) => calls('getNamespacedCustomObject', plural);
    // The first step reads the instance's record and creates the binding's (a binding record is read
    // only when the create finds one there); the apply, the status check and the final status use
    // the records as that step and the apply left them.
    expect({
      instance: reads('sfserviceinstances'),
      binding: reads('sfservicebindings'),
      bindingCreated: calls('createNamespacedCustomObject', 'sfservicebindings'),
    }).toEqual({ instance: 1, binding: 0, bindingCreated: 1 });
    // AND the broker read the binding's record once, before it started the bind: the credentials
    // come from the Secret the run named, with the times the run was started with.
    const brokerReads = collector
      .spans()
      .filter(
        (s) =>
          s.traceId === request.traceId &&
          s.service === 'interoperator-broker' &&
          s.name === 'kube getNamespacedCustomObject' &&
          s.attributes['k8s.object.kind'] === 'sfservicebindings',
      );
    expect(brokerReads).toHaveLength(1);
  });
});

function summary(spans: CollectedSpan[]): string {
  return spans
    .map(
      (s) =>
        `${s.service} ${s.traceId.slice(0, 8)} ${s.spanId.slice(0, 6)}<-${s.parentSpanId.slice(0, 6)} ${s.name}`,
    )
    .join('\n');
}
