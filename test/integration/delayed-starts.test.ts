/**
 * A create's start held on its way to Temporal (as a client's retries hold it through a Temporal
 * restart) while the operation it repeats runs to its end, on the real servers: the repeat found
 * no record (the first operation had made none yet), so it starts the operation's workflow; that
 * start lands after the first run ended, and must not start a second operation. The repeat is
 * answered from the record the first operation left (200; for a bind, with its credentials), and
 * the workflow id keeps its one run.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { installCatalog } from '../../dev/catalog.js';
import { ensureNamespace } from '../../src/kube/objects.js';
import { bindingWorkflowId, instanceWorkflowId } from '../../src/resources/names.js';
import { SFPLAN, type SFPlan } from '../../src/resources/types.js';
import { MEMO_KEY, type OperationStatus } from '../../src/workflows/messages.js';
import { clusters, environment, eventually, temporalClient, unique } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import {
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';
import { tcpRelay, type TcpRelay } from '../support/tcp-relay.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';

describe('a create whose start is held on its way while the operation it repeats ends', () => {
  const [master] = clusters();
  const registry = unique('delayed');
  let planId: string;
  let relay: TcpRelay;
  let settings: SystemSettings;
  let broker: SystemProcess;
  let worker: SystemProcess | undefined;
  let operator: { stop(): Promise<void> };
  let temporal: { client: Client; close(): Promise<void> };
  let osb: OsbClient;

  /** The broker reaches Temporal through the relay; the worker directly. */
  const startWorker = async () => {
    worker = await startProcess('worker', { ...settings, extraEnv: { INTEROP_NAMESPACE: registry } });
  };

  beforeAll(async () => {
    await ensureNamespace(master!, registry);
    const installed = await installCatalog(master!, registry, ['examples/postgresql']);
    planId = (installed.find((o) => o.kind === SFPLAN.kind) as SFPlan).spec.id;
    operator = await startOperator();
    relay = await tcpRelay(environment().temporal.address);
    settings = await systemSettings({ INTEROP_NAMESPACE: registry, INTEROP_TEMPORAL_ADDRESS: relay.address });
    broker = await startProcess('broker', settings);
    temporal = await temporalClient(settings.payloadKeys);
    osb = osbClient(broker.url);
    await eventually('the catalog', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
      return services?.some((s) => s.plans.some((p) => p.id === planId)) ? true : undefined;
    });
  }, 120_000);

  afterEach(async () => {
    relay?.release();
    await worker?.stop();
    worker = undefined;
  });

  afterAll(async () => {
    await broker?.stop();
    await operator?.stop();
    await temporal?.close();
    await relay?.close();
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  const instancePath = (id: string) => `/v2/service_instances/${id}`;

  /** The latest run of `workflowId` once it has ended: its run id and final status. */
  const ended = (workflowId: string) =>
    eventually(
      `the end of ${workflowId}`,
      async () => {
        const run = await temporal.client.workflow.getHandle(workflowId).describe();
        return run.status.name === 'RUNNING'
          ? undefined
          : { runId: run.runId, status: run.memo?.[MEMO_KEY] as OperationStatus | undefined };
      },
      90_000,
    );

  /** Holds the broker's calls to Temporal, sends `request`, and waits until its call is held. */
  async function heldOnItsWay<T>(request: () => Promise<T>): Promise<{ readonly answer: Promise<T> }> {
    relay.hold();
    const answer = request();
    answer.catch(() => undefined);
    await eventually('the start held on its way', async () => (relay.held() > 0 ? true : undefined));
    // (whatever else the broker sent is held too: give the request its time to reach its start)
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    return { answer };
  }

  test('a provision repeated before its record is made is answered 200 once the first has succeeded', async () => {
    const id = randomUUID();
    const body = provisionBody(SERVICE_ID, planId, { foo: 'bar' });
    // GIVEN a provision accepted while no worker runs: its run makes no record yet
    const first = await osb('PUT', `${instancePath(id)}?accepts_incomplete=true`, body);
    expect(first.status).toBe(202);
    // WHEN its repeat finds no record and its start is held on its way
    const repeat = await heldOnItsWay(() => osb('PUT', `${instancePath(id)}?accepts_incomplete=true`, body));
    // AND the first provision runs to its end meanwhile
    await startWorker();
    const firstRun = await ended(instanceWorkflowId(id));
    expect(firstRun.status?.state).toBe('succeeded');
    expect(String(first.body.operation)).toContain(firstRun.runId);
    relay.release();
    // THEN the repeat is answered from the record: the instance is there
    const answered = await repeat.answer;
    expect([answered.status, answered.body]).toEqual([200, {}]);
    // AND no second provision ran
    expect((await ended(instanceWorkflowId(id))).runId).toBe(firstRun.runId);
    const last = await untilSettled(osb, `${instancePath(id)}/last_operation`);
    expect(last.body).toMatchObject({ state: 'succeeded' });
  }, 180_000);

  test('a bind repeated before its record is made gets the credentials the first made, with no second bind', async () => {
    const id = randomUUID();
    await startWorker();
    const provisioned = await osb(
      'PUT',
      `${instancePath(id)}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, planId, { foo: 'bar' }),
    );
    expect(provisioned.status).toBe(202);
    expect((await ended(instanceWorkflowId(id))).status?.state).toBe('succeeded');
    await worker!.stop();
    worker = undefined;
    const bindingId = randomUUID();
    const bindingPath = `${instancePath(id)}/service_bindings/${bindingId}`;
    const body = { service_id: SERVICE_ID, plan_id: planId };
    // GIVEN a synchronous bind sent while no worker runs: its run makes no record yet
    const first = osb('PUT', bindingPath, body);
    await eventually('the first bind’s run', async () =>
      (await temporal.client.workflow
        .getHandle(bindingWorkflowId(id, bindingId))
        .describe()
        .catch(() => undefined))
        ? true
        : undefined,
    );
    // (a claim is not taken for one of a run that started up to 5 s before it, the brokers' clocks
    // allowed for: the repeat's claim comes later, so that only its release can end it)
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    // WHEN its repeat finds no record and its start is held on its way
    const repeat = await heldOnItsWay(() => osb('PUT', bindingPath, body));
    // AND the first bind runs to its end meanwhile
    await startWorker();
    const firstRun = await ended(bindingWorkflowId(id, bindingId));
    expect(firstRun.status?.state).toBe('succeeded');
    // (the first request's wait for its outcome was held too)
    relay.release();
    const made = await first;
    expect(made.status).toBe(201);
    // THEN the repeat gets the binding the first made
    const answered = await repeat.answer;
    expect(answered.status).toBe(200);
    expect(answered.body.credentials).toEqual(made.body.credentials);
    // AND no second bind ran
    expect((await ended(bindingWorkflowId(id, bindingId))).runId).toBe(firstRun.runId);
    // AND the refused start left no claim on the instance: an update of it is accepted at once
    const updated = await osb('PATCH', `${instancePath(id)}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      parameters: { foo: 'baz' },
    });
    expect([updated.status, updated.body.description]).toEqual([202, undefined]);
    expect((await ended(instanceWorkflowId(id))).status?.state).toBe('succeeded');
  }, 180_000);

  test('an id deleted and created again starts anew: its earlier runs do not refuse the create', async () => {
    const id = randomUUID();
    const bindingId = randomUUID();
    const bindingPath = `${instancePath(id)}/service_bindings/${bindingId}`;
    const bindingBody = { service_id: SERVICE_ID, plan_id: planId };
    const query = `service_id=${SERVICE_ID}&plan_id=${planId}&accepts_incomplete=true`;
    await startWorker();
    for (const round of [1, 2]) {
      // GIVEN (the second time) an instance and a binding of these ids made and deleted before
      const provisioned = await osb(
        'PUT',
        `${instancePath(id)}?accepts_incomplete=true`,
        provisionBody(SERVICE_ID, planId, { foo: `round ${round}` }),
      );
      expect(provisioned.status).toBe(202);
      expect((await ended(instanceWorkflowId(id))).status?.state).toBe('succeeded');
      const bound = await osb('PUT', bindingPath, bindingBody);
      expect(bound.status).toBe(201);
      const unbound = await osb('DELETE', `${bindingPath}?${query}`);
      expect(unbound.status).toBe(200);
      const deleting = await osb('DELETE', `${instancePath(id)}?${query}`);
      expect(deleting.status).toBe(202);
      expect((await ended(instanceWorkflowId(id))).status?.state).toBe('succeeded');
    }
  }, 180_000);
});
