/**
 * The admin API on the real servers: the broker and worker as one process with admin credentials,
 * the example operator and the PostgreSQL plan. Listings read the master's records by label with
 * the apiserver's paging; an update of one instance runs the update workflow with the request the
 * record holds; a forced removal releases a record whose deletion cannot finish and leaves an
 * Event and an audit line; the command line lists and updates through the same API.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  createRecord,
  deleteRecord,
  getRecord,
  jsonPatchRecord,
  listRecords,
  patchRecordStatus,
} from '../../src/kube/custom-objects.js';
import { applyObject, ensureNamespace } from '../../src/kube/objects.js';
import {
  ANNOTATIONS,
  CATALOG_FINALIZER,
  FINALIZER,
  LABELS,
  instanceWorkflowId,
  resourceName,
} from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFPLAN,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFCluster,
  type SFPlan,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import {
  ADMIN,
  adminLandscape,
  callAdmin,
  POSTGRESQL_PLAN_ID,
  POSTGRESQL_SERVICE_ID,
  runBuiltCli,
} from '../support/admin.js';
import { clusters, environment, eventually, temporalClient, unique } from '../support/env.js';
import { provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { CREDENTIALS } from '../support/system.js';

const SERVICE_ID = POSTGRESQL_SERVICE_ID;
const PLAN_ID = POSTGRESQL_PLAN_ID;

describe('the admin API', () => {
  const [master] = clusters();
  // GIVEN three instances of the plan, provisioned through the OSB API
  const instances: string[] = [randomUUID(), randomUUID(), randomUUID()];
  const landscape = adminLandscape(instances);
  const osb: OsbClient = (...args) => landscape.osb(...args);

  /** Calls the admin API as `alice`, with the admin credentials (or `auth`). */
  const admin = (method: 'GET' | 'POST', path: string, auth?: { username: string; password: string }) =>
    callAdmin(landscape.system.url, method, path, auth ? { auth } : {});
  /** Runs the built command line with the admin settings in its environment. */
  const cli = (...args: string[]) => runBuiltCli(landscape.system.url, ...args);

  test('the OSB credentials do not open the admin API, nor the admin credentials the OSB API', async () => {
    expect((await admin('GET', '/admin/instances', CREDENTIALS)).status).toBe(401);
    const osbAsAdmin = await fetch(`${landscape.system.url}/v2/catalog`, {
      headers: {
        Authorization: `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.password}`).toString('base64')}`,
        'X-Broker-API-Version': '2.17',
      },
    });
    expect(osbAsAdmin.status).toBe(401);
  });

  test('listings select by plan, service, cluster and state, a page at a time with the continue token', async () => {
    // WHEN the plan's instances are listed one a page, following the continue token
    const seen: Record<string, unknown>[] = [];
    let next: string | undefined;
    let pages = 0;
    do {
      const res = await admin(
        'GET',
        `/admin/instances?plan=${PLAN_ID}&service=${SERVICE_ID}&cluster=1&limit=1${next ? `&continue=${encodeURIComponent(next)}` : ''}`,
      );
      expect(res.status).toBe(200);
      const items = res.body.items as Record<string, unknown>[];
      expect(items.length).toBeLessThanOrEqual(1);
      seen.push(...items);
      next = res.body.continue as string | undefined;
      pages += 1;
    } while (next);
    // THEN each of ours came once, as its record tells it
    const ours = seen.filter((i) => instances.includes(String(i.instanceId)));
    expect(ours.map((i) => i.instanceId).sort()).toEqual([...instances].sort());
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(ours[0]).toMatchObject({
      serviceId: SERVICE_ID,
      planId: PLAN_ID,
      clusterId: '1',
      state: 'succeeded',
      operation: 'provision',
    });
    // AND a state or a revision none of them has selects none of them
    for (const query of ['state=failed', 'revision=no-such-revision', 'cluster=no-such-cluster']) {
      const res = await admin('GET', `/admin/instances?plan=${PLAN_ID}&${query}`);
      const ids = (res.body.items as { instanceId: string }[]).map((i) => i.instanceId);
      expect([query, ids.filter((id) => instances.includes(id))]).toEqual([query, []]);
    }
    // AND a continue token the apiserver never gave is a 400 in the OSB error shape
    const bad = await admin('GET', '/admin/instances?continue=not-a-token');
    expect([bad.status, bad.body.error]).toEqual([400, 'BadRequest']);
  });

  test('the command line lists the instances of the plan as a table', async () => {
    const res = await cli('instances', 'list', '--plan', PLAN_ID, '--all');
    expect([res.status, res.stderr]).toEqual([0, '']);
    const lines = res.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^INSTANCE +SERVICE +PLAN +CLUSTER +STATE +OPERATION +REVISION +DELETION$/);
    for (const id of instances) {
      expect(lines.find((l) => l.startsWith(id))).toMatch(
        // the revision is the plan's, recorded when its resources were rendered
        new RegExp(`^${id} +${SERVICE_ID} +${PLAN_ID} +1 +succeeded +provision +[0-9a-f]{16} +-$`),
      );
    }
  });

  test('an update of one instance runs the update with the recorded request, recorded as the admin’s', async () => {
    const id = instances[0]!;
    // WHEN an admin updates it
    const res = await admin('POST', `/admin/instances/${id}/update`);
    expect(res.status).toBe(202);
    const operation = String(res.body.operation);
    expect(operation).toMatch(/^update:/);
    // THEN the platform's last_operation follows it to success
    const done = await untilSettled(
      osb,
      `/v2/service_instances/${id}/last_operation?operation=${encodeURIComponent(operation)}`,
    );
    expect(done.body.state).toBe('succeeded');
    // AND the record holds the same request, updated, and who asked
    const record = await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, `sf-${id}`, id);
    expect(record?.spec.parameters).toEqual({ foo: 'bar' });
    expect(record?.status).toMatchObject({ state: 'succeeded', operation: 'update' });
    expect(JSON.parse(record!.metadata.annotations![ANNOTATIONS.requestedBy]!)).toMatchObject({
      platform: 'interoperator-admin',
    });
    expect(record!.metadata.annotations![ANNOTATIONS.requestedBy]).toContain('alice (ops)');

    // AND through the command line too
    const cli1 = await cli('--as', 'bob', 'instances', 'update', id);
    expect([cli1.status, cli1.stdout]).toEqual([
      0,
      expect.stringMatching(/^update of .* started: operation update:/),
    ]);
    const cliOperation = /operation (update:\S+?)(,|\n)/.exec(cli1.stdout)![1]!;
    await untilSettled(
      osb,
      `/v2/service_instances/${id}/last_operation?operation=${encodeURIComponent(cliOperation)}`,
    );
  });

  test('an update of a busy instance is 422 ConcurrencyError, of an unknown one 404', async () => {
    const id = instances[1]!;
    const temporal = await temporalClient();
    try {
      // GIVEN another operation running on the instance (a run no worker takes up)
      const other = await temporal.client.workflow.start('operationNobodyRuns', {
        workflowId: instanceWorkflowId(id),
        taskQueue: unique('nobody'),
      });
      try {
        const busy = await admin('POST', `/admin/instances/${id}/update`);
        expect([busy.status, busy.body.error]).toEqual([422, 'ConcurrencyError']);
        const cliBusy = await cli('instances', 'update', id);
        expect([cliBusy.status, cliBusy.stderr]).toEqual([1, expect.stringMatching(/422 ConcurrencyError/)]);
      } finally {
        await other.terminate('test over');
      }
    } finally {
      await temporal.close();
    }
    const unknown = await admin('POST', `/admin/instances/${randomUUID()}/update`);
    expect([unknown.status, unknown.body.error]).toEqual([404, 'NotFound']);
  });

  test('a forced removal releases a record whose deletion is stuck, stops its operation, and leaves an Event and an audit line', async () => {
    const id = instances[2]!;
    const namespace = `sf-${id}`;
    const temporal = await temporalClient();
    try {
      // GIVEN a deletion that cannot finish: another finalizer's holder stands for a gone cluster,
      // and an operation runs on the instance that no worker takes up
      const held = 'example.com/held-for-the-test';
      await jsonPatchRecord(master!, SFSERVICEINSTANCE, namespace, id, [
        { op: 'add', path: '/metadata/finalizers/-', value: held },
      ]);
      await temporal.client.workflow.start('operationNobodyRuns', {
        workflowId: instanceWorkflowId(id),
        taskQueue: unique('nobody'),
      });
      await master!.custom.deleteNamespacedCustomObject({
        group: SFSERVICEINSTANCE.group,
        version: SFSERVICEINSTANCE.version,
        plural: SFSERVICEINSTANCE.plural,
        namespace,
        name: id,
      });
      // THEN the listing shows it deleting
      const listed = await admin('GET', `/admin/instances?plan=${PLAN_ID}&limit=1000`);
      const item = (listed.body.items as { instanceId: string; deletionRequestedAt?: string }[]).find(
        (i) => i.instanceId === id,
      );
      expect(item?.deletionRequestedAt).toEqual(expect.any(String));

      // WHEN an admin forces its removal
      const res = await admin('POST', `/admin/instances/${id}/force-remove`);
      expect([res.status, res.body]).toEqual([
        200,
        expect.objectContaining({
          kind: 'instance',
          id,
          namespace,
          name: id,
          deletionRequested: false,
          finalizerRemoved: true,
          operationStopped: true,
          requestedBy: 'alice (ops)',
        }),
      ]);
      // THEN our finalizer is gone, the other holder's kept
      const record = await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, namespace, id);
      expect(record?.metadata.finalizers).toEqual([held]);
      // AND the operation was terminated
      const described = await temporal.client.workflow.getHandle(instanceWorkflowId(id)).describe();
      expect(described.status.name).toBe('TERMINATED');
      // AND kubectl get events shows who did it
      const events = await master!.core.listNamespacedEvent({
        namespace,
        fieldSelector: `involvedObject.name=${id},reason=ForceRemoved`,
      });
      expect(events.items.map((e) => [e.type, e.involvedObject.kind, e.message])).toEqual([
        ['Warning', 'SFServiceInstance', expect.stringContaining('force-removed by alice (ops)')],
      ]);
      // AND the broker's log has the audit line at warn (once the process has written it out)
      const audit = await eventually('the audit line in the log', async () => {
        const lines = readFileSync(landscape.system.logFile, 'utf8')
          .split('\n')
          .filter((l) => l.includes('"record force-removed"'))
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        return lines.length > 0 ? lines : undefined;
      });
      expect(audit).toEqual([
        expect.objectContaining({
          level: 'warn',
          kind: 'instance',
          id,
          requestedBy: 'alice (ops)',
          audit: true,
        }),
      ]);

      // WHEN the other holder lets go THEN the record is gone
      await jsonPatchRecord(master!, SFSERVICEINSTANCE, namespace, id, [
        { op: 'remove', path: '/metadata/finalizers/0' },
      ]);
      await eventually('the record gone', async () =>
        (await getRecord(master!, SFSERVICEINSTANCE, namespace, id)) ? undefined : true,
      );
    } finally {
      await temporal.close();
    }
  });

  test('rollouts: an unknown plan is 404, a plan never rolled out has nothing to pause; one started through the API brings an instance behind to the revision, and `rollout watch` exits 0', async () => {
    const unknown = await admin('POST', `/admin/plans/${randomUUID()}/rollout`);
    expect([unknown.status, unknown.body.error]).toEqual([404, 'NotFound']);
    const progress = await admin('GET', `/admin/plans/${PLAN_ID}/rollout`);
    expect([progress.status, progress.body.error]).toEqual([404, 'NotFound']);
    for (const action of ['pause', 'resume', 'abort']) {
      const res = await admin('POST', `/admin/plans/${PLAN_ID}/rollout/${action}`);
      expect([action, res.status, res.body.description]).toEqual([
        action,
        404,
        `The plan ${PLAN_ID} has no rollout running.`,
      ]);
    }
    const status = await cli('rollout', 'status', PLAN_ID);
    expect([status.status, status.stderr]).toEqual([
      1,
      `interoperator: the plan ${PLAN_ID} has no rollout (404)\n`,
    ]);

    // GIVEN an instance whose resources were rendered with an earlier revision of the plan
    const id = instances[0]!;
    const namespace = `sf-${id}`;
    const recorded = await eventually(
      'the instance’s revision',
      async () =>
        (await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, namespace, resourceName(id)))
          ?.metadata.labels?.[LABELS.planRevision],
    );
    await jsonPatchRecord(master!, SFSERVICEINSTANCE, namespace, resourceName(id), [
      {
        op: 'replace',
        path: `/metadata/labels/${LABELS.planRevision.replace('/', '~1')}`,
        value: 'an-earlier-one',
      },
    ]);
    // WHEN an admin starts the plan's rollout, THEN it runs towards the plan's revision
    const started = await admin('POST', `/admin/plans/${PLAN_ID}/rollout`);
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ planId: PLAN_ID, revision: recorded, requestedBy: 'alice (ops)' });
    // AND the command line watches it to the end
    const watched = await cli('rollout', 'watch', PLAN_ID);
    expect(watched.status).toBe(0);
    const done = await admin('GET', `/admin/plans/${PLAN_ID}/rollout`);
    expect(done.body).toMatchObject({ state: 'done', failed: 0 });
    expect((done.body.results as Record<string, { state: string }>)[id]).toEqual({ state: 'updated' });
    const after = await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, namespace, resourceName(id));
    expect(after?.metadata.labels?.[LABELS.planRevision]).toBe(recorded);
    expect(after?.status).toMatchObject({ state: 'succeeded', operation: 'update' });
  });

  test('a forced removal of an instance releases its reservation and its plan, which can then be deleted', async () => {
    // GIVEN a plan of its own (a copy of the PostgreSQL plan) and an instance of it, provisioned
    // through the OSB API, holding a reservation on the master cluster
    const registry = environment().namespace;
    const original = (await listRecords<SFPlan>(master!, SFPLAN, registry)).find(
      (p) => p.spec.id === PLAN_ID,
    )!;
    const planId = randomUUID();
    await applyObject(master!, {
      apiVersion: original.apiVersion,
      kind: original.kind,
      metadata: { name: planId, namespace: registry },
      spec: { ...original.spec, id: planId, name: unique('forced') },
    } as KubeObject);
    await eventually('the plan in the catalog', async () =>
      JSON.stringify((await osb('GET', '/v2/catalog')).body).includes(planId) ? true : undefined,
    );
    const id = randomUUID();
    const namespace = `sf-${resourceName(id)}`;
    const provisioned = await osb(
      'PUT',
      `/v2/service_instances/${id}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, planId, { foo: 'bar' }),
    );
    expect(provisioned.status).toBe(202);
    const done = await untilSettled(
      osb,
      `/v2/service_instances/${id}/last_operation?operation=${encodeURIComponent(String(provisioned.body.operation))}`,
    );
    expect(done.body.state).toBe('succeeded');
    expect((await getRecord<SFPlan>(master!, SFPLAN, registry, planId))?.metadata.finalizers).toContain(
      CATALOG_FINALIZER,
    );
    await patchRecordStatus(master!, SFCLUSTER, registry, '1', { reserved: { [id]: { cpu: '1' } } });

    // WHEN an admin forces its removal
    const res = await admin('POST', `/admin/instances/${id}/force-remove`);
    expect([res.status, res.body]).toEqual([
      200,
      expect.objectContaining({ kind: 'instance', id, finalizerRemoved: true, reservationsReleased: ['1'] }),
    ]);
    // THEN the record is gone, and no cluster holds a reservation for it
    await eventually('the instance record gone', async () =>
      (await getRecord(master!, SFSERVICEINSTANCE, namespace, resourceName(id))) ? undefined : true,
    );
    for (const cluster of await listRecords<SFCluster>(master!, SFCLUSTER, registry))
      expect([cluster.metadata.name, cluster.status?.reserved?.[id]]).toEqual([
        cluster.metadata.name,
        undefined,
      ]);
    // AND the plan no longer holds the catalog-in-use finalizer: deleting it finishes
    expect(
      (await getRecord<SFPlan>(master!, SFPLAN, registry, planId))?.metadata.finalizers ?? [],
    ).not.toContain(CATALOG_FINALIZER);
    await deleteRecord(master!, SFPLAN, registry, planId);
    await eventually('the plan gone', async () =>
      (await getRecord(master!, SFPLAN, registry, planId)) ? undefined : true,
    );
    await master!.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  test('a forced removal of a binding record nobody deleted requests its deletion and releases it', async () => {
    // GIVEN a binding record of an instance on a cluster that is gone
    const instanceId = randomUUID();
    const bindingId = randomUUID();
    const namespace = `sf-${resourceName(instanceId)}`;
    await ensureNamespace(master!, namespace);
    await createRecord<SFServiceBinding>(master!, SFSERVICEBINDING, {
      apiVersion: SFSERVICEBINDING.apiVersion,
      kind: SFSERVICEBINDING.kind,
      metadata: {
        name: resourceName(bindingId),
        namespace,
        labels: {
          [LABELS.instanceId]: instanceId,
          [LABELS.bindingId]: bindingId,
          [LABELS.clusterId]: 'gone-cluster',
        },
        finalizers: [FINALIZER],
      },
      spec: { id: bindingId, instanceId, serviceId: SERVICE_ID, planId: PLAN_ID },
    });
    const listed = await admin('GET', '/admin/bindings?cluster=gone-cluster');
    expect((listed.body.items as { bindingId: string }[]).map((b) => b.bindingId)).toContain(bindingId);

    // WHEN an admin forces its removal
    const res = await admin('POST', `/admin/bindings/${bindingId}/force-remove`);
    expect([res.status, res.body]).toEqual([
      200,
      expect.objectContaining({
        kind: 'binding',
        id: bindingId,
        deletionRequested: true,
        finalizerRemoved: true,
        operationStopped: false,
      }),
    ]);
    // THEN it is gone, and a second removal finds nothing
    await eventually('the binding record gone', async () =>
      (await getRecord(master!, SFSERVICEBINDING, namespace, resourceName(bindingId))) ? undefined : true,
    );
    const again = await admin('POST', `/admin/bindings/${bindingId}/force-remove`);
    expect([again.status, again.body.error]).toEqual([404, 'NotFound']);
    await master!.core.deleteNamespace({ name: namespace });
  });
});
