/**
 * The operations ports of a broker and a worker, each its own process on the real servers: a
 * provision and a bind through the OSB API move exactly their counters and histograms on both
 * /metrics, the SDK's own metrics are there too, Service Fabrik's record states when asked for,
 * /metrics needs the token and the probes do not, and a stopping broker is no longer ready while it
 * still answers.
 */
import { randomUUID } from 'node:crypto';
import { goTimeString } from '../../src/controllers/record-state-labels.js';
import { getRecord } from '../../src/kube/custom-objects.js';
import { resourceName } from '../../src/resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { clusters, eventually } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import {
  installCatalog,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
} from '../support/system.js';

const SERVICE_ID = '7c1a5a2e-6a4b-4c55-9a7e-2d6f5f0f1a01';
const PLAN_ID = '2f3c9a8e-0d7b-4a8e-b7a6-5a1c0e9d4b02';
const TOKEN = 'metrics-token-not-secret';

/** The samples of a Prometheus text, by `name{labels}` as written; comments left out. */
export function samples(text: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    found.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return found;
}

/** How each sample moved from `before` to `after`, for those that did. */
function moved(before: Map<string, number>, after: Map<string, number>, prefix: string) {
  const deltas: Record<string, number> = {};
  for (const [key, value] of after) {
    if (!key.startsWith(prefix)) continue;
    const delta = value - (before.get(key) ?? 0);
    if (delta !== 0) deltas[key] = delta;
  }
  return deltas;
}

async function scrape(process: SystemProcess, token = TOKEN): Promise<Response> {
  return fetch(`${process.metricsUrl}/metrics`, {
    headers: token ? { Authorization: `Bearer ${token}` } : {},
  });
}

async function metricsOf(process: SystemProcess): Promise<Map<string, number>> {
  const response = await scrape(process);
  expect(response.status).toBe(200);
  return samples(await response.text());
}

describe('metrics and probes of the broker and the worker', () => {
  let operator: { stop(): Promise<void> };
  let broker: SystemProcess;
  let worker: SystemProcess;
  let osb: OsbClient;

  beforeAll(async () => {
    operator = await startOperator();
    await installCatalog('examples/mustache');
    const settings = await systemSettings({ INTEROP_METRICS_TOKEN: TOKEN });
    worker = await startProcess('worker', settings);
    broker = await startProcess('broker', settings);
    osb = osbClient(broker.url);
  });

  afterAll(async () => {
    await broker?.stop();
    await worker?.stop();
    await operator?.stop();
  });

  test('GIVEN a broker and a worker WHEN a provision and a bind go through the OSB API THEN both /metrics move by exactly those operations', async () => {
    const instanceId = randomUUID();
    const bindingId = randomUUID();
    const instancePath = `/v2/service_instances/${instanceId}`;
    const brokerBefore = await metricsOf(broker);
    const workerBefore = await metricsOf(worker);

    const provision = await osb(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID),
    );
    expect(provision.status).toBe(202);
    let polls = 0;
    const settled = await eventually(
      'the provision to settle',
      async () => {
        polls += 1;
        const res = await osb('GET', `${instancePath}/last_operation`);
        return res.body.state === 'in progress' ? undefined : res;
      },
      60_000,
    );
    expect(settled.body.state).toBe('succeeded');
    const bind = await osb('PUT', `${instancePath}/service_bindings/${bindingId}`, {
      service_id: SERVICE_ID,
      plan_id: PLAN_ID,
    });
    expect(bind.status).toBe(201);

    const instanceRoute = 'route="/v2/service_instances/:instance_id"';
    const lastOperationRoute = 'route="/v2/service_instances/:instance_id/last_operation"';
    const bindingRoute = 'route="/v2/service_instances/:instance_id/service_bindings/:binding_id"';
    const brokerAfter = await metricsOf(broker);
    expect(moved(brokerBefore, brokerAfter, 'interoperator_osb_requests_total')).toEqual({
      [`interoperator_osb_requests_total{${instanceRoute},method="PUT",status="202"}`]: 1,
      [`interoperator_osb_requests_total{${lastOperationRoute},method="GET",status="200"}`]: polls,
      [`interoperator_osb_requests_total{${bindingRoute},method="PUT",status="201"}`]: 1,
    });
    expect(moved(brokerBefore, brokerAfter, 'interoperator_osb_request_duration_seconds_count')).toEqual({
      [`interoperator_osb_request_duration_seconds_count{${instanceRoute},method="PUT",status="202"}`]: 1,
      [`interoperator_osb_request_duration_seconds_count{${lastOperationRoute},method="GET",status="200"}`]:
        polls,
      [`interoperator_osb_request_duration_seconds_count{${bindingRoute},method="PUT",status="201"}`]: 1,
    });
    // Every request falls in the +Inf bucket.
    expect(
      moved(brokerBefore, brokerAfter, 'interoperator_osb_request_duration_seconds_bucket{le="+Inf"'),
    ).toEqual({
      [`interoperator_osb_request_duration_seconds_bucket{le="+Inf",${instanceRoute},method="PUT",status="202"}`]: 1,
      [`interoperator_osb_request_duration_seconds_bucket{le="+Inf",${lastOperationRoute},method="GET",status="200"}`]:
        polls,
      [`interoperator_osb_request_duration_seconds_bucket{le="+Inf",${bindingRoute},method="PUT",status="201"}`]: 1,
    });
    expect(moved(brokerBefore, brokerAfter, 'interoperator_operations_started_total')).toEqual({
      [`interoperator_operations_started_total{kind="provision",service="${SERVICE_ID}",plan="${PLAN_ID}"}`]: 1,
      [`interoperator_operations_started_total{kind="bind",service="${SERVICE_ID}",plan="${PLAN_ID}"}`]: 1,
    });
    expect(brokerAfter.get('interoperator_catalog_plans')).toBeGreaterThanOrEqual(1);
    expect(brokerAfter.get('process_resident_memory_bytes')).toBeGreaterThan(0);

    // The worker reports an ending as its workflow task completes: the bind's answer may come first.
    const bindCounted = (now: Map<string, number>) =>
      Object.keys(moved(workerBefore, now, 'interoperator_operations_finished_total{kind="bind"')).length > 0;
    const workerAfter = await eventually('the worker to count the bind', async () => {
      const now = await metricsOf(worker);
      return bindCounted(now) ? now : undefined;
    });
    expect(moved(workerBefore, workerAfter, 'interoperator_operations_finished_total')).toEqual({
      [`interoperator_operations_finished_total{kind="provision",outcome="succeeded",plan="${PLAN_ID}",cluster="1"}`]: 1,
      [`interoperator_operations_finished_total{kind="bind",outcome="succeeded",plan="${PLAN_ID}",cluster="1"}`]: 1,
    });
    expect(moved(workerBefore, workerAfter, 'interoperator_operation_duration_seconds_count')).toEqual({
      'interoperator_operation_duration_seconds_count{kind="provision",outcome="succeeded"}': 1,
      'interoperator_operation_duration_seconds_count{kind="bind",outcome="succeeded"}': 1,
    });
    const renders = moved(workerBefore, workerAfter, 'interoperator_template_render_duration_seconds_count');
    expect(Object.keys(renders)).toEqual(
      expect.arrayContaining([
        'interoperator_template_render_duration_seconds_count{type="mustache",action="provision"}',
        'interoperator_template_render_duration_seconds_count{type="mustache",action="bind"}',
      ]),
    );
    const calls = moved(workerBefore, workerAfter, 'interoperator_kubernetes_requests_total');
    expect(calls['interoperator_kubernetes_requests_total{verb="get",outcome="success"}']).toBeGreaterThan(0);
    expect(calls['interoperator_kubernetes_requests_total{verb="patch",outcome="success"}']).toBeGreaterThan(
      0,
    );
    // The Temporal SDK's own metrics, on the same port: one workflow of each type completed.
    const completed = moved(workerBefore, workerAfter, 'temporal_workflow_completed{');
    expect(
      Object.entries(completed)
        .map(([key, delta]) => [/workflow_type="(\w+)"/.exec(key)?.[1], delta])
        .sort(),
    ).toEqual([
      ['bindWorkflow', 1],
      ['provisionWorkflow', 1],
    ]);

    // No instance or binding id is ever a label.
    for (const key of [...brokerAfter.keys(), ...workerAfter.keys()]) {
      expect(key).not.toContain(instanceId);
      expect(key).not.toContain(bindingId);
    }
  });

  test("GIVEN a worker asked for Service Fabrik's record states WHEN records are made, settle and go THEN it has a series per record in each pair with Service Fabrik's numbers and labels, gone ones 4", async () => {
    // One settled before it starts: read by its first listing.
    const earlier = randomUUID();
    const made = await osb(
      'PUT',
      `/v2/service_instances/${earlier}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID),
    );
    expect(made.status).toBe(202);
    await untilSettled(osb, `/v2/service_instances/${earlier}/last_operation`);
    const states = await startProcess(
      'worker',
      await systemSettings({ INTEROP_METRICS_TOKEN: TOKEN, INTEROP_METRICS_RECORD_STATES: 'true' }),
    );
    try {
      const instanceId = randomUUID();
      const bindingId = randomUUID();
      const instancePath = `/v2/service_instances/${instanceId}`;
      const instanceSeries = (id: string) => `interoperator_service_instances_state{instance_id="${id}"}`;
      const bindingSeries = `interoperator_service_bindings_state{binding_id="${bindingId}",instance_id="${instanceId}"}`;
      const until = (what: string, holds: (now: Map<string, number>) => boolean) =>
        eventually(what, async () => {
          const now = await metricsOf(states);
          return holds(now) ? now : undefined;
        });
      // The detailed pair, as Service Fabrik labels it: a gone record's series has its own id alone.
      const detailedInstanceSeries = (id: string, labels: Record<string, string> = {}) =>
        `interoperator_service_instances_metrics_state{instance_id="${id}",state="${labels.state ?? ''}",` +
        `creation_timestamp="${labels.created ?? ''}",deletion_timestamp="",` +
        `service_id="${labels.state ? SERVICE_ID : ''}",plan_id="${labels.state ? PLAN_ID : ''}",` +
        `organization_guid="${labels.state ? 'org' : ''}",space_guid="${labels.state ? 'space' : ''}",` +
        `sf_namespace="${labels.state ? `sf-${id}` : ''}",last_operation="${labels.lastOperation ?? ''}"}`;
      const detailedBindingSeries = (labels: Record<string, string> = {}) =>
        labels.state
          ? `interoperator_service_bindings_metrics_state{binding_id="${bindingId}",instance_id="${instanceId}",` +
            `creation_timestamp="${labels.created}",deletion_timestamp="",state="${labels.state}",` +
            `sf_namespace="sf-${instanceId}"}`
          : `interoperator_service_bindings_metrics_state{binding_id="${bindingId}",instance_id="",` +
            `creation_timestamp="",deletion_timestamp="",state="",sf_namespace=""}`;
      const [master] = clusters();
      const createdOf = async (id: string) =>
        goTimeString(
          (await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, `sf-${id}`, id))?.metadata
            .creationTimestamp,
        );
      const earlierSeries = detailedInstanceSeries(earlier, {
        state: 'succeeded',
        created: await createdOf(earlier),
        lastOperation: 'in_queue',
      });
      await until(
        'the earlier instance reported succeeded',
        (now) => now.get(instanceSeries(earlier)) === 0 && now.get(earlierSeries) === 0,
      );

      expect(
        (await osb('PUT', `${instancePath}?accepts_incomplete=true`, provisionBody(SERVICE_ID, PLAN_ID)))
          .status,
      ).toBe(202);
      expect((await untilSettled(osb, `${instancePath}/last_operation`)).body.state).toBe('succeeded');
      const bind = await osb('PUT', `${instancePath}/service_bindings/${bindingId}`, {
        service_id: SERVICE_ID,
        plan_id: PLAN_ID,
      });
      expect(bind.status).toBe(201);
      const bindingRecord = await getRecord<SFServiceBinding>(
        master!,
        SFSERVICEBINDING,
        `sf-${instanceId}`,
        resourceName(bindingId),
      );
      const succeeded = {
        instance: detailedInstanceSeries(instanceId, {
          state: 'succeeded',
          created: await createdOf(instanceId),
          lastOperation: 'in_queue',
        }),
        binding: detailedBindingSeries({
          state: 'succeeded',
          created: goTimeString(bindingRecord?.metadata.creationTimestamp),
        }),
      };
      expect(succeeded.instance).toMatch(/creation_timestamp="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000 UTC"/);
      await until(
        'the instance and binding reported succeeded',
        (now) =>
          now.get(instanceSeries(instanceId)) === 0 &&
          now.get(bindingSeries) === 0 &&
          now.get(succeeded.instance) === 0 &&
          now.get(succeeded.binding) === 0,
      );

      const query = `service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`;
      expect((await osb('DELETE', `${instancePath}/service_bindings/${bindingId}?${query}`)).status).toBe(
        200,
      );
      const deprovision = await osb('DELETE', `${instancePath}?${query}&accepts_incomplete=true`);
      expect(deprovision.status).toBe(202);
      await untilSettled(
        osb,
        `${instancePath}/last_operation?operation=${encodeURIComponent(String(deprovision.body.operation))}`,
      );
      const after = await until(
        'the instance and binding reported gone',
        (now) =>
          now.get(instanceSeries(instanceId)) === 4 &&
          now.get(bindingSeries) === 4 &&
          now.get(detailedInstanceSeries(instanceId)) === 4 &&
          now.get(detailedBindingSeries()) === 4,
      );
      // One series per record in each pair, whatever states and labels it went through.
      expect(
        [...after.keys()].filter((key) => key.includes(instanceId) || key.includes(bindingId)),
      ).toHaveLength(4);
      // The other worker, not asked for them, has none.
      expect([...(await metricsOf(worker)).keys()].some((key) => key.includes('_state{'))).toBe(false);
    } finally {
      await states.stop();
    }
  });

  test('GIVEN a token WHEN /metrics is asked without it THEN 401, and the probes answer without it', async () => {
    for (const process of [broker, worker]) {
      expect((await scrape(process, '')).status).toBe(401);
      expect((await scrape(process, 'wrong')).status).toBe(401);
      expect((await fetch(`${process.metricsUrl}/livez`)).status).toBe(200);
      expect((await fetch(`${process.metricsUrl}/readyz`)).status).toBe(200);
    }
  });

  test('GIVEN a broker with a shutdown delay WHEN it is told to stop THEN it leaves the rotation while it still answers, then exits', async () => {
    const stopping = await startProcess(
      'broker',
      await systemSettings({ INTEROP_SHUTDOWN_DELAY_SECONDS: '3' }),
    );
    try {
      expect((await fetch(`${stopping.metricsUrl}/readyz`)).status).toBe(200);
      expect((await fetch(`${stopping.url}/healthz`)).status).toBe(200);
      const signalled = Date.now();
      const stopped = stopping.stop().then(() => Date.now() - signalled);
      await eventually('the broker to be not ready', async () =>
        (await fetch(`${stopping.metricsUrl}/readyz`)).status === 503 ? true : undefined,
      );
      const health = await fetch(`${stopping.url}/healthz`);
      expect([health.status, await health.json()]).toEqual([503, { status: 'stopping' }]);
      expect((await fetch(`${stopping.metricsUrl}/livez`)).status).toBe(200);
      // OSB requests are still answered, each closing its connection so that the client goes elsewhere
      const catalog = await osbClient(stopping.url)('GET', '/v2/catalog');
      expect(catalog.status).toBe(200);
      expect(catalog.headers.get('connection')).toBe('close');
      expect(await stopped).toBeGreaterThanOrEqual(2500);
    } finally {
      await stopping.stop();
    }
  });
});
