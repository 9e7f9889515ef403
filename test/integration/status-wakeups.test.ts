/**
 * The operator's change wakes the status check, on the real servers: with the status poll set to
 * wait ten minutes after the first check, the design document's PostgreSQL plan still provisions,
 * binds (synchronously, within the broker's 60 s) and deprovisions, because the worker watches the
 * operator's kind (learnt from the plan's `sources`) and signals the waiting operation when the
 * example operator changes its postgresql. Each history shows the signal and the poll's timer cut
 * short by it; the bind's shows one status check, once the operator observed what it applied.
 */
import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import proto from '@temporalio/proto';
import { parsePayloadKeys } from '../../src/temporal/codec.js';
import { payloadCodec } from '../../src/temporal/connection.js';
import { bindingWorkflowId, instanceWorkflowId } from '../../src/resources/names.js';
import { OPERATOR_CHANGED_SIGNAL } from '../../src/workflows/messages.js';
import { eventually, temporalClient } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import {
  installCatalog,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';
/** Longer than every wait of this test: a check that runs again ran because it was woken. */
const POLL_MS = '600000';
const { EventType } = proto.temporal.api.enums.v1;

describe('a change of the operator wakes the status check', () => {
  let settings: SystemSettings;
  let system: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;

  beforeAll(async () => {
    operator = await startOperator();
    settings = await systemSettings({ INTEROP_STATUS_POLL_MS: POLL_MS });
    system = await startProcess('all', settings);
    osb = osbClient(system.url);
    await installCatalog('examples/postgresql');
    await eventually('the plan in the catalog', async () =>
      JSON.stringify((await osb('GET', '/v2/catalog')).body).includes(PLAN_ID) ? true : undefined,
    );
  });
  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
  });

  /** The run's events of the latest run of `workflowId` that matter here, in order. */
  async function wakeups(workflowId: string, runId?: string) {
    const temporal = await temporalClient(settings.payloadKeys);
    try {
      const history = await temporal.client.workflow.getHandle(workflowId, runId).fetchHistory();
      const events = history.events ?? [];
      const markerOf = (step: string) =>
        events.find((e) => {
          const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
          return data ? Buffer.from(data).toString('utf8').includes(`"${step}"`) : false;
        });
      /** What the apply step that waits for the operator answered, decrypted (undefined: no such step). */
      const awaited = async () => {
        const result = markerOf('applyTemplateAwaited')?.markerRecordedEventAttributes?.details?.result;
        if (!result?.payloads?.length) return undefined;
        const codec = payloadCodec({ payloadKeys: parsePayloadKeys(settings.payloadKeys) });
        const [plain] = await codec.decode(result.payloads);
        return defaultPayloadConverter.fromPayload(plain!) as { operatorBehind: boolean; heard: boolean };
      };
      return {
        awaited: await awaited(),
        signals: events.filter(
          (e) =>
            e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED &&
            e.workflowExecutionSignaledEventAttributes?.signalName === OPERATOR_CHANGED_SIGNAL,
        ).length,
        timersCanceled: events.filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_CANCELED).length,
        timersFired: events.filter((e) => e.eventType === EventType.EVENT_TYPE_TIMER_FIRED).length,
        /** Status checks run, locally (a marker) or queued. */
        checks: events.filter((e) => {
          if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
            return e.activityTaskScheduledEventAttributes?.activityType?.name === 'checkStatus';
          if (e.eventType !== EventType.EVENT_TYPE_MARKER_RECORDED) return false;
          const data = e.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
          return data ? Buffer.from(data).toString('utf8').includes('"checkStatus"') : false;
        }).length,
      };
    } finally {
      await temporal.close();
    }
  }

  test('GIVEN a ten-minute poll WHEN provisioning, binding and deprovisioning THEN each ends, woken by the operator', async () => {
    const instanceId = randomUUID();
    const bindingId = randomUUID();

    const provision = await osb(
      'PUT',
      `/v2/service_instances/${instanceId}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID, { foo: 'bar' }),
    );
    expect(provision.status).toBe(202);
    const provisionRun = String(provision.body.operation).split(':')[1];
    const provisioned = await untilSettled(osb, `/v2/service_instances/${instanceId}/last_operation`);
    expect(provisioned.body.state).toBe('succeeded');

    // Synchronous: the broker waits at most 60 s, the poll would wait ten minutes.
    const bind = await osb(
      'PUT',
      `/v2/service_instances/${instanceId}/service_bindings/${bindingId}?accepts_incomplete=true`,
      { service_id: SERVICE_ID, plan_id: PLAN_ID },
    );
    expect(bind.status).toBe(201);
    expect((bind.body.credentials as { password?: string }).password).toEqual(expect.any(String));
    // Read now: the unbind runs under the same workflow id.
    const bound = await wakeups(bindingWorkflowId(instanceId, bindingId));

    const unbind = await osb(
      'DELETE',
      `/v2/service_instances/${instanceId}/service_bindings/${bindingId}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`,
    );
    expect(unbind.status).toBe(200);

    const deprovision = await osb(
      'DELETE',
      `/v2/service_instances/${instanceId}?accepts_incomplete=true&service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`,
    );
    expect(deprovision.status).toBe(202);
    const operation = encodeURIComponent(String(deprovision.body.operation));
    const deprovisioned = await untilSettled(
      osb,
      `/v2/service_instances/${instanceId}/last_operation?operation=${operation}`,
    );
    expect(deprovisioned.body.state).toBe('succeeded');

    // The operator takes a second to answer a provision: it waited, and was woken. Every wait
    // that ended ended by a signal: none ran out its ten minutes.
    const provisionEvents = await wakeups(instanceWorkflowId(instanceId), provisionRun);
    expect({
      ...provisionEvents,
      woken: provisionEvents.signals > 0 && provisionEvents.timersCanceled > 0,
    }).toEqual({
      awaited: undefined,
      signals: expect.any(Number),
      timersCanceled: expect.any(Number),
      timersFired: 0,
      checks: expect.any(Number),
      woken: true,
    });
    // The bind's apply left the operator a generation to observe, and its step waited for the
    // operator's word: the word came (not the end of the wait), and the one check that followed
    // at once passed. No signal, no timer: the bind never waited in its workflow.
    expect(bound).toEqual({
      awaited: { applied: 1, operatorBehind: true, heard: true },
      signals: 0,
      timersCanceled: 0,
      timersFired: 0,
      checks: 1,
    });
    // The deprovision's objects may already be gone at its first check (then it never waits);
    // a wait it did start was cut short by a signal, never run out.
    const deprovisionEvents = await wakeups(instanceWorkflowId(instanceId));
    expect(deprovisionEvents.timersFired).toBe(0);
    if (deprovisionEvents.timersCanceled > 0) expect(deprovisionEvents.signals).toBeGreaterThan(0);
  });
});
