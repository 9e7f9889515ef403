/**
 * End to end, on the real servers: the design document's PostgreSQL plan, unmodified, and its
 * mustache and jsonnet twins, with the example operator. A platform provisions, polls last_operation, binds and gets the credentials
 * the status template builds, unbinds and deprovisions; Kubernetes shows the records on the way.
 */
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFPlan,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { applyObject } from '../../src/kube/objects.js';
import { getRecord } from '../../src/kube/custom-objects.js';
import {
  bindingSecretName,
  bindingWorkflowId,
  instanceWorkflowId,
  resourceName,
} from '../../src/resources/names.js';
import { conditionOf, waitableCondition } from '../support/conditions.js';
import { clusters, eventually, temporalClient, untilNamespaceGone } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient, type OsbResponse } from '../support/osb.js';
import {
  installCatalog,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';
import {
  MEMO_KEY,
  OPERATION_OUTCOME_UPDATE,
  WORKFLOW_TYPES,
  type BindingRequest,
  type InstanceRequest,
} from '../../src/workflows/messages.js';
import { randomUUID } from 'node:crypto';
import proto from '@temporalio/proto';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';
/** The mustache plan again, with `manager.asyncBinding`. */
const ASYNC_BINDING_PLAN_ID = '2f3c9a8e-0d7b-4a8e-b7a6-5a1c0e9d4b03';

/** The example plans: the design document's (gotemplate) and its mustache and jsonnet twins. */
const PLANS = [
  {
    name: 'gotemplate (design document)',
    serviceId: SERVICE_ID,
    planId: PLAN_ID,
    prefix: 'sapcp',
    parameters: { foo: 'bar' } as Record<string, unknown>,
    schema: true,
    uri: true,
    asyncBinding: false,
  },
  {
    name: 'mustache',
    serviceId: '7c1a5a2e-6a4b-4c55-9a7e-2d6f5f0f1a01',
    planId: '2f3c9a8e-0d7b-4a8e-b7a6-5a1c0e9d4b02',
    prefix: 'mpg',
    parameters: {} as Record<string, unknown>,
    schema: false,
    uri: false,
    asyncBinding: false,
  },
  {
    name: 'mustache, bindings asynchronous',
    serviceId: '7c1a5a2e-6a4b-4c55-9a7e-2d6f5f0f1a01',
    planId: ASYNC_BINDING_PLAN_ID,
    prefix: 'mpg',
    parameters: {} as Record<string, unknown>,
    schema: false,
    uri: false,
    asyncBinding: true,
  },
  {
    name: 'jsonnet',
    serviceId: '122989ea-ed62-48aa-ade7-b290b8d0e834',
    planId: '96edc916-b56c-4dc9-b39e-e5e6d55b739e',
    prefix: 'jpg',
    parameters: {} as Record<string, unknown>,
    schema: false,
    uri: true,
    asyncBinding: false,
  },
];

describe('OSB end to end with the PostgreSQL plan of the design document', () => {
  let system: SystemProcess;
  let settings: SystemSettings;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;
  const [master] = clusters();

  beforeAll(async () => {
    operator = await startOperator();
    settings = await systemSettings();
    system = await startProcess('all', settings);
    osb = osbClient(system.url);
    const installed = await installCatalog('examples/postgresql', 'examples/mustache', 'examples/jsonnet');
    const mustache = installed.find(
      (o) => o.kind === 'SFPlan' && (o as SFPlan).spec.id === PLANS[1]!.planId,
    ) as SFPlan;
    await applyObject(master!, {
      apiVersion: mustache.apiVersion,
      kind: mustache.kind,
      metadata: { name: ASYNC_BINDING_PLAN_ID, namespace: mustache.metadata.namespace },
      spec: {
        ...mustache.spec,
        id: ASYNC_BINDING_PLAN_ID,
        name: `${mustache.spec.name}-async-bindings`,
        manager: { ...mustache.spec.manager, asyncBinding: true },
      },
    });
    await eventually('the plan with asynchronous bindings in the catalog', async () => {
      const services = (await osbClient(system.url)('GET', '/v2/catalog')).body.services as {
        plans: { id: string }[];
      }[];
      return services.some((s) => s.plans.some((p) => p.id === ASYNC_BINDING_PLAN_ID)) ? true : undefined;
    });
  });
  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
  });

  /** The settled last_operation at `path`: its status and its body's fields. */
  async function lastOperation(path: string): Promise<Record<string, unknown>> {
    const res = await untilSettled(osb, path);
    return { status: res.status, ...res.body };
  }

  test('the catalog serves the service and plan from the SFService and SFPlan', async () => {
    const res = await osb('GET', '/v2/catalog');
    expect(res.status).toBe(200);
    const services = res.body.services as {
      id: string;
      name: string;
      plans: { id: string; plan_updateable?: boolean }[];
    }[];
    const service = services.find((s) => s.id === SERVICE_ID);
    expect(service?.name).toBe('postgresql');
    expect(service?.plans.map((p) => p.id)).toContain(PLAN_ID);
  });

  // The plans' lifecycles run side by side: each has instances and bindings of its own.
  test.concurrent.each(PLANS)('provision, bind, unbind, deprovision: $name plan', async (p) => {
    const { serviceId, planId } = p;
    const instanceId = randomUUID();
    const bindingId = randomUUID();
    const instancePath = `/v2/service_instances/${instanceId}`;

    // GIVEN a platform that provisions with the parameters the plan's schema requires
    const body = provisionBody(serviceId, planId, p.parameters);
    // WHEN it asks synchronously, THEN the async plan answers 422 AsyncRequired
    expect((await osb('PUT', instancePath, body)).body.error).toBe('AsyncRequired');
    if (p.schema) {
      // WHEN parameters fail the plan's schema, THEN 400 names the field
      const invalid = await osb('PUT', `${instancePath}?accepts_incomplete=true`, {
        ...body,
        parameters: { bar: 1 },
      });
      expect(invalid.status).toBe(400);
      expect(String(invalid.body.description)).toMatch(/foo/);
    }

    const accepted = await osb('PUT', `${instancePath}?accepts_incomplete=true`, body);
    expect(accepted.status).toBe(202);
    const operation = String(accepted.body.operation);
    expect(operation).toMatch(/^provision:/);
    // an identical repeat while it runs: 202 with the same operation; a different one: 409
    const repeat = await osb('PUT', `${instancePath}?accepts_incomplete=true`, body);
    expect([repeat.status, repeat.body.operation]).toEqual([202, operation]);
    const conflicting = await osb('PUT', `${instancePath}?accepts_incomplete=true`, {
      ...body,
      parameters: { foo: 'other' },
    });
    expect(conflicting.status).toBe(409);

    const done = await lastOperation(
      `${instancePath}/last_operation?operation=${encodeURIComponent(operation)}`,
    );
    expect(done).toMatchObject({ status: 200, state: 'succeeded' });

    // operators find every operation of the instance in the Temporal UI by its search attributes
    const temporal0 = await temporalClient();
    try {
      // Raw visibility: the memo is encrypted, and this client (like the UI) has no key.
      const found = await eventually('the provision in visibility', async () => {
        const { executions } = await temporal0.client.workflowService.listWorkflowExecutions({
          namespace: 'default',
          query: `OsbInstanceId = "${instanceId}" AND OsbPlanId = "${planId}" AND OsbClusterId = "1"`,
        });
        const types = executions.map((e) => e.type?.name);
        return types.length > 0 ? types : undefined;
      });
      expect(found).toEqual(['provisionWorkflow']);
      // The broker starts the workflow with its memo, so the first task starts with the first step
      // (a local activity's marker) and writes no memo again (an event and a visibility update saved
      // on every operation).
      const { EventType } = proto.temporal.api.enums.v1;
      const history = await temporal0.client.workflow
        .getHandle(instanceWorkflowId(instanceId))
        .fetchHistory();
      const types = (history.events ?? []).map((e) => e.eventType);
      const firstTask = types.indexOf(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
      expect(types[firstTask + 1]).toBe(EventType.EVENT_TYPE_MARKER_RECORDED);
    } finally {
      await temporal0.close();
    }

    // the record users see tells the truth
    const record = await getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      instanceId,
    );
    expect(record?.status).toMatchObject({ state: 'succeeded', operation: 'provision' });
    // kstatus: current and Ready, what helm --wait, Flux, Argo CD and kubectl wait --for=condition=Ready read
    expect(record?.status?.observedGeneration).toBe(record?.metadata.generation);
    expect(waitableCondition(record, 'Ready')).toBe('True');
    expect(conditionOf(record, 'Ready')).toMatchObject({
      reason: 'Provisioned',
      observedGeneration: record?.metadata.generation,
    });
    expect([conditionOf(record, 'Reconciling')?.status, conditionOf(record, 'Stalled')?.status]).toEqual([
      'False',
      'False',
    ]);
    expect((record?.spec as { clusterId?: string }).clusterId).toBe('1');
    const pg = await master!.custom.getNamespacedCustomObject({
      group: 'acid.zalan.do',
      version: 'v1',
      plural: 'postgresqls',
      namespace: `sf-${instanceId}`,
      name: `${p.prefix}-${instanceId}`,
    });
    expect(
      (pg as { metadata: { ownerReferences: { kind: string }[] } }).metadata.ownerReferences[0]?.kind,
    ).toBe('SFServiceInstance');
    // provisioned again identically: 200
    expect((await osb('PUT', `${instancePath}?accepts_incomplete=true`, body)).status).toBe(200);
    expect((await osb('GET', instancePath)).body).toMatchObject({ service_id: serviceId, plan_id: planId });

    // bind: the credentials come from the status template
    const bindingPath = `${instancePath}/service_bindings/${bindingId}`;
    const bindBody = { service_id: serviceId, plan_id: planId };
    let bound: OsbResponse;
    if (p.asyncBinding) {
      // asynchronous: 422 without accepts_incomplete, else 202 and the binding's own last_operation
      expect((await osb('PUT', bindingPath, bindBody)).body.error).toBe('AsyncRequired');
      const binding = await osb('PUT', `${bindingPath}?accepts_incomplete=true`, bindBody);
      expect(binding.status).toBe(202);
      expect(String(binding.body.operation)).toMatch(/^bind:/);
      const again = await osb('PUT', `${bindingPath}?accepts_incomplete=true`, bindBody);
      expect([again.status, again.body.operation]).toEqual([202, binding.body.operation]);
      expect(
        await lastOperation(
          `${bindingPath}/last_operation?operation=${encodeURIComponent(String(binding.body.operation))}`,
        ),
      ).toMatchObject({ status: 200, state: 'succeeded' });
      bound = await osb('GET', bindingPath);
      expect(bound.status).toBe(200);
    } else {
      bound = await osb('PUT', bindingPath, bindBody);
      expect(bound.status).toBe(201);
    }
    const credentials = bound.body.credentials as Record<string, string>;
    expect(credentials).toMatchObject({
      dbname: 'main',
      port: '5432',
      username: bindingId.replace(/-/g, '_'),
    });
    expect(credentials.password).toMatch(/.{16,}/);
    // A ClusterIP of the local clusters: 10.96.0.0/16, or the /24 of those first started with it.
    expect(credentials.hostname).toMatch(/^10\.96\.\d{1,3}\.\d{1,3}$/);
    if (p.uri) {
      expect(credentials.uri).toBe(
        `postgres://${credentials.username}:${credentials.password}@${credentials.hostname}:5432/main?sslmode=require`,
      );
    }
    const bindingRecord = await getRecord<SFServiceBinding>(
      master!,
      SFSERVICEBINDING,
      `sf-${instanceId}`,
      resourceName(bindingId),
    );
    expect(bindingRecord?.status?.observedGeneration).toBe(bindingRecord?.metadata.generation);
    expect(waitableCondition(bindingRecord, 'Ready')).toBe('True');
    expect(conditionOf(bindingRecord, 'Ready')?.reason).toBe('Bound');
    const bindAgain = p.asyncBinding ? `${bindingPath}?accepts_incomplete=true` : bindingPath;
    expect((await osb('PUT', bindAgain, bindBody)).status).toBe(200);
    // the same binding id with other attributes: 409
    const otherBinding = await osb('PUT', bindAgain, { ...bindBody, bind_resource: { app_guid: 'another' } });
    expect([otherBinding.status, otherBinding.body.description]).toEqual([
      409,
      'A binding with this id already exists with different attributes.',
    ]);
    expect((await osb('GET', bindingPath)).body.credentials).toEqual(credentials);

    // the password is nowhere in workflow history
    const temporal = await temporalClient();
    try {
      for (const id of [instanceWorkflowId(instanceId), bindingWorkflowId(instanceId, bindingId)]) {
        const history = await temporal.client.workflow.getHandle(id).fetchHistory();
        expect(JSON.stringify(history)).not.toContain(credentials.password);
        expect(JSON.stringify(history)).not.toContain('"foo"');
      }
      if (!p.asyncBinding) {
        // the synchronous bind was answered by its operation's update: sent with the start,
        // accepted by the first workflow task, completed (with the status, which names the
        // Secret) before the run completed
        const { EventType } = proto.temporal.api.enums.v1;
        const events =
          (await temporal.client.workflow.getHandle(bindingWorkflowId(instanceId, bindingId)).fetchHistory())
            .events ?? [];
        const types = events.map((e) => e.eventType);
        const firstTask = types.indexOf(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
        // (among the first task's events: a local step's marker may come before it)
        const acceptedAt = types.indexOf(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED);
        if (acceptedAt < 0) {
          // The server gives an update up with the workflow task that carried it when that task
          // fails or times out (a busy server); the broker then answers from the run's outcome.
          // Nothing else may leave the history without the update (the events by name when it does).
          const names = types.map((t) => EventType[t ?? 0]);
          expect(names.slice(0, firstTask)).toEqual(
            expect.arrayContaining([expect.stringMatching(/^EVENT_TYPE_WORKFLOW_TASK_(FAILED|TIMED_OUT)$/)]),
          );
        } else {
          expect(acceptedAt).toBeGreaterThan(firstTask);
          expect(types.slice(firstTask + 1, acceptedAt)).not.toContain(
            EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
          );
          const accepted = events[acceptedAt]!.workflowExecutionUpdateAcceptedEventAttributes;
          expect(accepted?.acceptedRequest?.input?.name).toBe(OPERATION_OUTCOME_UPDATE);
          const completed = types.indexOf(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED);
          expect(completed).toBeGreaterThan(firstTask);
          expect(completed).toBeLessThan(types.indexOf(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED));
          expect(
            types.filter((t) => t === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED),
          ).toHaveLength(1);
        }
        // and it started with its search attributes and its memo, as an asynchronous one does
        const found = await eventually('the synchronous bind in visibility', async () => {
          const { executions } = await temporal.client.workflowService.listWorkflowExecutions({
            namespace: 'default',
            query: `OsbInstanceId = "${instanceId}" AND OsbBindingId = "${bindingId}" AND OsbOperation = "bind" AND OsbState = "succeeded"`,
          });
          return executions.length > 0 ? executions : undefined;
        });
        expect(found.map((e) => e.type?.name)).toEqual(['bindWorkflow']);
        expect(Object.keys(found[0]!.memo?.fields ?? {})).toEqual([MEMO_KEY]);
      }
    } finally {
      await temporal.close();
    }

    // once the provision's history is gone, last_operation answers from the record
    const temporal1 = await temporalClient();
    try {
      // The latest run of the instance's workflow id: the provision (raw calls: this client has no key).
      const workflowId = instanceWorkflowId(instanceId);
      await temporal1.client.workflowService.deleteWorkflowExecution({
        namespace: 'default',
        workflowExecution: { workflowId },
      });
      await eventually(
        'the history to be gone',
        async () => {
          try {
            await temporal1.client.workflowService.describeWorkflowExecution({
              namespace: 'default',
              execution: { workflowId },
            });
            return undefined;
          } catch {
            return true;
          }
        },
        90_000,
      );
    } finally {
      await temporal1.close();
    }
    expect((await osb('GET', `${instancePath}/last_operation`)).body).toEqual({
      state: 'succeeded',
      description: 'The instance is provisioned',
    });

    // unbind, then deprovision
    // the binding's user is in the operator's resource until the unbind takes it out again
    const users = async () =>
      Object.keys(
        (
          (await master!.custom.getNamespacedCustomObject({
            group: 'acid.zalan.do',
            version: 'v1',
            plural: 'postgresqls',
            namespace: `sf-${instanceId}`,
            name: `${p.prefix}-${instanceId}`,
          })) as { spec: { users: Record<string, unknown> } }
        ).spec.users,
      ).sort();
    expect(await users()).toEqual([bindingId, 'main'].sort());
    const unbind = `${bindingPath}?service_id=${serviceId}&plan_id=${planId}`;
    if (p.asyncBinding) {
      // The binding's own plan decides: naming the service's other plan, whose bindings are
      // synchronous, does not make this unbind synchronous, and nothing is unbound.
      const namingOther = await osb(
        'DELETE',
        `${bindingPath}?service_id=${serviceId}&plan_id=${PLANS[1]!.planId}`,
      );
      expect([namingOther.status, namingOther.body.error]).toEqual([422, 'AsyncRequired']);
      expect(await users()).toEqual([bindingId, 'main'].sort());
      const unbinding = await osb('DELETE', `${unbind}&accepts_incomplete=true`);
      expect(unbinding.status).toBe(202);
      expect(String(unbinding.body.operation)).toMatch(/^unbind:/);
      expect(
        await lastOperation(
          `${bindingPath}/last_operation?operation=${encodeURIComponent(String(unbinding.body.operation))}`,
        ),
      ).toMatchObject({ state: 'succeeded' });
    } else {
      expect((await osb('DELETE', unbind)).status).toBe(200);
    }
    // the credentials are revoked: the user is out of the operator's resource, the binding's Secret is gone
    expect(await users()).toEqual(['main']);
    await expect(
      master!.core.readNamespacedSecret({
        namespace: `sf-${instanceId}`,
        name: bindingSecretName(resourceName(bindingId)),
      }),
    ).rejects.toMatchObject({ code: 404 });
    expect((await osb('GET', bindingPath)).status).toBe(404);
    expect((await osb('DELETE', `${unbind}&accepts_incomplete=true`)).status).toBe(410);

    const deleting = await osb(
      'DELETE',
      `${instancePath}?service_id=${serviceId}&plan_id=${planId}&accepts_incomplete=true`,
    );
    expect(deleting.status).toBe(202);
    const gone = await lastOperation(
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
    );
    expect(gone.state).toBe('succeeded');
    expect((await osb('GET', instancePath)).status).toBe(404);
    await untilNamespaceGone(master!, `sf-${instanceId}`);
    const again = await osb(
      'DELETE',
      `${instancePath}?service_id=${serviceId}&plan_id=${planId}&accepts_incomplete=true`,
    );
    expect(again.status).toBe(410);
  });
  test('a deprovision or unbind run again after its steps removed the records (a replayed workflow task) ends as done', async () => {
    const p = PLANS[1]!;
    const instanceId = randomUUID();
    const instancePath = `/v2/service_instances/${instanceId}`;
    const accepted = await osb(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(p.serviceId, p.planId, p.parameters),
    );
    expect(accepted.status).toBe(202);
    expect(
      await lastOperation(
        `${instancePath}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
      ),
    ).toMatchObject({ state: 'succeeded' });
    const request = {
      instanceId,
      serviceId: p.serviceId,
      planId: p.planId,
      requestHash: 'again',
      deadlineSeconds: 30,
    };
    const temporal = await temporalClient(settings.payloadKeys);
    /** Runs an operation's workflow as a replay after its steps ran would: straight on the worker's queue. */
    const runAgain = (type: 'deprovision' | 'unbind', args: InstanceRequest | BindingRequest) =>
      temporal.client.workflow.execute(WORKFLOW_TYPES[type], {
        taskQueue: settings.taskQueue,
        workflowId: `again-${type}-${randomUUID()}`,
        args: [args],
      });
    try {
      // a binding whose record is gone, of an instance that is there
      expect(await runAgain('unbind', { ...request, bindingId: randomUUID() })).toMatchObject({
        state: 'succeeded',
        description: 'The binding is deleted',
      });
      const deleting = await osb(
        'DELETE',
        `${instancePath}?service_id=${p.serviceId}&plan_id=${p.planId}&accepts_incomplete=true`,
      );
      expect(
        await lastOperation(
          `${instancePath}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
        ),
      ).toMatchObject({ state: 'succeeded' });
      expect(await runAgain('deprovision', request)).toMatchObject({
        state: 'succeeded',
        description: 'The instance is deprovisioned',
      });
      // a binding of an instance that is gone
      expect(await runAgain('unbind', { ...request, bindingId: randomUUID() })).toMatchObject({
        state: 'succeeded',
      });
      await untilNamespaceGone(master!, `sf-${instanceId}`);
    } finally {
      await temporal.close();
    }
  });
});
