/**
 * The adoption of a Service Fabrik landscape on the real servers: an instance and its binding
 * recorded as Service Fabrik's broker and inter-operator write them (test/fixtures/service-fabrik),
 * with the credentials Secret and the postgresql the example operator runs for them already there,
 * are listed by `interoperator adopt --dry-run`, adopted by `interoperator adopt`, and then answered
 * for through OSB as a platform goes on: last_operation and GET, an update, a new bind and unbind,
 * the old binding's unbind and the deprovision, the postgresql never recreated. An instance whose
 * operation still runs is listed with the reason and left untouched.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { ADOPTED_ANNOTATION } from '../../src/adoption/rules.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import {
  createRecord,
  deleteRecord,
  getRecord,
  patchRecord,
  patchRecordStatus,
} from '../../src/kube/custom-objects.js';
import { ANNOTATIONS, FINALIZER, LABELS } from '../../src/resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { adminLandscape, POSTGRESQL_PLAN_ID, POSTGRESQL_SERVICE_ID, runBuiltCli } from '../support/admin.js';
import { clusters, eventually, untilGone, untilNamespaceGone } from '../support/env.js';
import { untilSettled, type OsbClient } from '../support/osb.js';

const SERVICE_ID = POSTGRESQL_SERVICE_ID;
const PLAN_ID = POSTGRESQL_PLAN_ID;
/** The ids the fixtures are written with; each test run puts fresh ones in their place. */
const FIXTURE_INSTANCE = '5f0c8d2e-7a41-4b6e-9c3d-1e2f3a4b5c6d';
const FIXTURE_BINDING = '8a9b0c1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d';

const PG = { group: 'acid.zalan.do', version: 'v1', plural: 'postgresqls' };
/** The field manager Service Fabrik's inter-operator writes the operator's objects as (controller-runtime's default). */
const SERVICE_FABRIK_MANAGER = 'manager';

/**
 * An `operation` string as Service Fabrik's broker hands it out in a 202 answer (its
 * `encodeBase64`: base64 of the JSON), percent-encoded as a platform sends it back.
 */
const serviceFabrikOperation = (type: 'create' | 'update' | 'delete') =>
  encodeURIComponent(Buffer.from(JSON.stringify({ type }), 'utf8').toString('base64'));

/** A fixture with the ids of this run in place of the fixture's. */
function fixture<T>(name: string, instanceId: string, bindingId: string): T {
  const text = readFileSync(new URL(`../fixtures/service-fabrik/${name}`, import.meta.url), 'utf8')
    .replaceAll(FIXTURE_INSTANCE, instanceId)
    .replaceAll(FIXTURE_BINDING, bindingId);
  return parse(text) as T;
}

const ownerOf = (record: KubeObject) => ({
  apiVersion: record.apiVersion,
  kind: record.kind,
  name: record.metadata.name,
  uid: record.metadata.uid!,
});

/** Writes a record as Service Fabrik does: the object, then its status. */
async function recordAsServiceFabrik<T extends SFServiceInstance | SFServiceBinding>(
  master: ClusterClient,
  kind: typeof SFSERVICEINSTANCE | typeof SFSERVICEBINDING,
  record: T,
): Promise<T> {
  const { status, ...body } = record;
  const created = await createRecord<T>(master, kind, body as T);
  return patchRecordStatus<T>(
    master,
    kind,
    created.metadata.namespace!,
    created.metadata.name,
    status as Record<string, unknown>,
  );
}

/**
 * What the example plan's provision and bind templates render for the instance and its binding,
 * as Service Fabrik's inter-operator applied it, owned by the instance's record.
 */
function postgresqlOf(instance: SFServiceInstance, bindingId: string): KubeObject {
  const name = `sapcp-${instance.metadata.name}`;
  return {
    apiVersion: 'acid.zalan.do/v1',
    kind: 'postgresql',
    metadata: {
      name,
      namespace: instance.metadata.namespace!,
      annotations: { 'operator-broker/service-id': SERVICE_ID, 'operator-broker/plan-id': PLAN_ID },
      ownerReferences: [{ ...ownerOf(instance), controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      teamId: 'sapcp',
      postgresql: { version: '9.6', parameters: { max_connections: '100' } },
      numberOfInstances: 2,
      databases: { main: 'main' },
      users: { main: ['superuser', 'createdb'], [bindingId]: ['superuser'] },
      resources: { requests: { cpu: '500m', memory: '256Mi' }, limits: { cpu: '1', memory: '2Gi' } },
      volume: { size: '20Gi' },
    },
  };
}

describe('adopting a Service Fabrik landscape', () => {
  const [master] = clusters() as [ClusterClient];
  const landscape = adminLandscape([]);
  const osb: OsbClient = (...args) => landscape.osb(...args);
  const cli = (...args: string[]) => runBuiltCli(landscape.system.url, ...args);

  const instanceId = randomUUID();
  const bindingId = randomUUID();
  const namespace = `sf-${instanceId}`;
  /** An instance whose provision Service Fabrik still runs: not adoptable. */
  const runningId = randomUUID();
  const instancePath = `/v2/service_instances/${instanceId}`;
  const oldBindingPath = `${instancePath}/service_bindings/${bindingId}`;

  const readPostgresql = () =>
    master.custom.getNamespacedCustomObject({
      ...PG,
      namespace,
      name: `sapcp-${instanceId}`,
    }) as Promise<KubeObject & { spec: { users: Record<string, unknown> } }>;
  const instanceRecord = () => getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, namespace, instanceId);
  const bindingRecord = () => getRecord<SFServiceBinding>(master, SFSERVICEBINDING, namespace, bindingId);
  const runningRecord = () =>
    getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, `sf-${runningId}`, runningId);

  let credentials: unknown;
  let postgresqlUid: string;
  let runningVersion: string;

  beforeAll(async () => {
    // GIVEN Service Fabrik's records of a provisioned instance and its binding, in its namespace
    // (labelled as an instance's namespace, as the migration's steps ask before adopting)
    await master.core.createNamespace({
      body: { metadata: { name: namespace, labels: { [LABELS.instanceNamespace]: 'true' } } },
    });
    const instance = await recordAsServiceFabrik(
      master,
      SFSERVICEINSTANCE,
      fixture<SFServiceInstance>('instance.yaml', instanceId, bindingId),
    );
    const binding = await recordAsServiceFabrik(
      master,
      SFSERVICEBINDING,
      fixture<SFServiceBinding>('binding.yaml', instanceId, bindingId),
    );
    // AND the postgresql its templates rendered, running under the example operator
    const pg = (await master.custom.createNamespacedCustomObject({
      ...PG,
      namespace,
      body: postgresqlOf(instance, bindingId),
      fieldManager: SERVICE_FABRIK_MANAGER,
    })) as KubeObject;
    postgresqlUid = pg.metadata.uid!;
    await eventually('the postgresql to be Running', async () => {
      const read = (await readPostgresql()) as { status?: { PostgresClusterStatus?: string } };
      return read.status?.PostgresClusterStatus === 'Running' ? true : undefined;
    });
    // AND the binding's credentials in its Secret, owned by the binding's record
    const secret = fixture<KubeObject & { stringData: Record<string, string> }>(
      'binding-secret.yaml',
      instanceId,
      bindingId,
    );
    credentials = JSON.parse(secret.stringData.response!);
    await master.core.createNamespacedSecret({
      namespace,
      body: {
        metadata: { name: secret.metadata.name, namespace, ownerReferences: [ownerOf(binding)] },
        stringData: secret.stringData,
      },
    });
    // AND an instance whose provision Service Fabrik still runs
    await master.core.createNamespace({ body: { metadata: { name: `sf-${runningId}` } } });
    const running = fixture<SFServiceInstance>('instance.yaml', runningId, randomUUID());
    running.status = { state: 'in progress' };
    running.metadata.labels!.state = 'in_queue';
    runningVersion = (await recordAsServiceFabrik(master, SFSERVICEINSTANCE, running)).metadata
      .resourceVersion!;
  });

  afterAll(async () => {
    // The record left to Service Fabrik: its finalizers go, as its broker would take them off.
    await patchRecord(master, SFSERVICEINSTANCE, `sf-${runningId}`, runningId, {
      metadata: { finalizers: null },
    }).catch(() => undefined);
    await deleteRecord(master, SFSERVICEINSTANCE, `sf-${runningId}`, runningId).catch(() => undefined);
    await master.core.deleteNamespace({ name: `sf-${runningId}` }).catch(() => undefined);
  });

  test('adopt --dry-run lists what it would adopt and what it cannot, with why, and changes nothing', async () => {
    const res = await cli('adopt', '--dry-run', '--output', 'json');
    expect(res.status).toBe(1);
    const report = JSON.parse(res.stdout) as {
      dryRun: boolean;
      adopted: { kind: string; instanceId: string; bindingId?: string }[];
      refused: { kind: string; instanceId: string; reason: string }[];
    };
    expect(report.dryRun).toBe(true);
    expect(report.adopted.filter((i) => i.instanceId === instanceId)).toEqual([
      expect.objectContaining({
        kind: 'instance',
        instanceId,
        name: instanceId,
        namespace,
        state: 'succeeded',
      }),
      expect.objectContaining({ kind: 'binding', instanceId, bindingId, name: bindingId, namespace }),
    ]);
    expect(report.refused.filter((i) => i.instanceId === runningId)).toEqual([
      expect.objectContaining({
        kind: 'instance',
        reason:
          'an operation is in progress (state "in progress"): adopt it once Service Fabrik has finished it',
      }),
    ]);
    // nothing was written
    expect((await instanceRecord())?.metadata.annotations?.[ADOPTED_ANNOTATION]).toBeUndefined();
    expect((await bindingRecord())?.metadata.labels?.[LABELS.bindingId]).toBeUndefined();
    // and the table says the same to a person
    const table = await cli('adopt', '--dry-run');
    expect(table.stdout).toContain('not adoptable:');
    expect(table.stdout).toMatch(/instances and \d+ bindings adoptable, \d+ not adoptable/);
  });

  test('adopt adopts in place, records it on each record, and leaves what it cannot adopt untouched', async () => {
    const res = await cli('adopt');
    expect(res.status).toBe(1);
    expect(res.stdout).toMatch(/^adopted:\n/);
    expect(res.stdout).toContain(`instance   ${instanceId}`);
    expect(res.stdout).toContain(`binding    ${instanceId}   ${bindingId}`);

    const instance = await instanceRecord();
    expect(instance?.metadata.finalizers).toEqual([FINALIZER]);
    expect(instance?.metadata.labels).toMatchObject({
      [LABELS.instanceId]: instanceId,
      [LABELS.planId]: PLAN_ID,
      [LABELS.clusterId]: '1',
      // Service Fabrik's own labels stay
      plan_id: PLAN_ID,
    });
    expect(JSON.parse(instance!.metadata.annotations![ADOPTED_ANNOTATION]!)).toMatchObject({
      state: 'succeeded',
      lastOperation: 'in_queue',
    });
    expect(instance?.metadata.annotations?.[ANNOTATIONS.requestHash]).toMatch(/^[0-9a-f]{64}$/);
    expect(instance?.status).toMatchObject({ state: 'succeeded', operation: 'provision', namespace });
    const binding = await bindingRecord();
    expect(binding?.metadata.finalizers).toEqual([FINALIZER]);
    expect(binding?.metadata.labels?.[LABELS.bindingId]).toBe(bindingId);
    expect(binding?.status).toMatchObject({
      state: 'succeeded',
      operation: 'bind',
      response: { secretRef: `sf-${bindingId}` },
    });
    // the record it cannot adopt is as it was
    expect((await runningRecord())?.metadata.resourceVersion).toBe(runningVersion);

    // run again, nothing more is adopted
    const again = JSON.parse((await cli('adopt', '--output', 'json')).stdout) as {
      adopted: { instanceId: string }[];
      alreadyAdopted: number;
    };
    expect(again.adopted.filter((i) => i.instanceId === instanceId)).toEqual([]);
    expect(again.alreadyAdopted).toBeGreaterThanOrEqual(2);
  });

  test('through OSB, last_operation and GET answer for the adopted instance and binding', async () => {
    expect((await osb('GET', `${instancePath}/last_operation`)).body).toEqual({ state: 'succeeded' });
    const got = await osb('GET', instancePath);
    expect([got.status, got.body]).toEqual([
      200,
      expect.objectContaining({ service_id: SERVICE_ID, plan_id: PLAN_ID, parameters: { foo: 'bar' } }),
    ]);
    const binding = await osb('GET', oldBindingPath);
    expect([binding.status, binding.body.credentials]).toEqual([
      200,
      (credentials as { credentials: unknown }).credentials,
    ]);
    expect((await osb('GET', `${oldBindingPath}/last_operation`)).body).toEqual({ state: 'succeeded' });
    // a platform that polls with the operation Service Fabrik's broker handed it gets the record's answer
    const polled = await osb(
      'GET',
      `${instancePath}/last_operation?operation=${serviceFabrikOperation('create')}`,
    );
    expect([polled.status, polled.body]).toEqual([200, { state: 'succeeded' }]);
    const bindingPolled = await osb(
      'GET',
      `${oldBindingPath}/last_operation?operation=${serviceFabrikOperation('create')}`,
    );
    expect([bindingPolled.status, bindingPolled.body]).toEqual([200, { state: 'succeeded' }]);
    // and an operation string of neither broker is still refused
    expect((await osb('GET', `${instancePath}/last_operation?operation=not-an-operation`)).status).toBe(400);
    // the same provision and bind sent again are repeats, not conflicts
    const provisionAgain = await osb('PUT', `${instancePath}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      plan_id: PLAN_ID,
      organization_guid: 'org',
      space_guid: 'space',
      context: { platform: 'cloudfoundry', organization_guid: 'org', space_guid: 'space' },
      parameters: { foo: 'bar' },
    });
    expect(provisionAgain.status).toBe(200);
  });

  test('an update runs on the operator objects already there, without recreating them', async () => {
    const updating = await osb('PATCH', `${instancePath}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      parameters: { foo: 'baz' },
    });
    expect(updating.status).toBe(202);
    const done = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(updating.body.operation))}`,
    );
    expect(done.body.state).toBe('succeeded');
    const pg = await readPostgresql();
    expect(pg.metadata.uid).toBe(postgresqlUid);
    // the adopted binding's user is still there: its credentials still work
    expect(Object.keys(pg.spec.users).sort()).toEqual([bindingId, 'main'].sort());
    expect((await osb('GET', instancePath)).body.parameters).toEqual({ foo: 'baz' });
  });

  test('a new binding binds and unbinds; the adopted binding unbinds, its record and Secret gone', async () => {
    const newBindingId = randomUUID();
    const newBindingPath = `${instancePath}/service_bindings/${newBindingId}`;
    const bound = await osb('PUT', newBindingPath, { service_id: SERVICE_ID, plan_id: PLAN_ID });
    expect(bound.status).toBe(201);
    expect((bound.body.credentials as { username?: string }).username).toBe(newBindingId.replace(/-/g, '_'));
    expect(Object.keys((await readPostgresql()).spec.users)).toContain(newBindingId);
    const unbound = await osb('DELETE', `${newBindingPath}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`);
    expect(unbound.status).toBe(200);
    expect(Object.keys((await readPostgresql()).spec.users)).not.toContain(newBindingId);

    const unbindOld = await osb('DELETE', `${oldBindingPath}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`);
    expect(unbindOld.status).toBe(200);
    expect(await bindingRecord()).toBeUndefined();
    expect((await osb('GET', oldBindingPath)).status).toBe(404);
    // Service Fabrik's Secret goes with the record that owns it
    await untilGone(`Secret sf-${bindingId}`, () =>
      master.core.readNamespacedSecret({ namespace, name: `sf-${bindingId}` }),
    );
    const pg = await readPostgresql();
    expect(pg.metadata.uid).toBe(postgresqlUid);
    // What Service Fabrik's bind added to the postgresql (its login), owned by Service Fabrik's field
    // manager with the rest of the object, is taken out; the provision's user stays
    expect(Object.keys(pg.spec.users)).toEqual(['main']);
    expect(pg.spec.users.main).toEqual(['superuser', 'createdb']);
  });

  test('deprovision removes everything', async () => {
    const deleting = await osb(
      'DELETE',
      `${instancePath}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}&accepts_incomplete=true`,
    );
    expect(deleting.status).toBe(202);
    const done = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
    );
    expect(done.body.state).toBe('succeeded');
    expect(await instanceRecord()).toBeUndefined();
    await untilGone('the postgresql', readPostgresql);
    await untilNamespaceGone(master, namespace, 60_000);
    expect((await osb('GET', instancePath)).status).toBe(404);
    // a poll with Service Fabrik's operation of a deletion answers the last one: the deprovision, done
    const polled = await osb(
      'GET',
      `${instancePath}/last_operation?operation=${serviceFabrikOperation('delete')}`,
    );
    expect([polled.status, polled.body]).toEqual([200, expect.objectContaining({ state: 'succeeded' })]);
    // the record left to Service Fabrik is still as it was
    expect((await runningRecord())?.metadata.resourceVersion).toBe(runningVersion);
  });
});
