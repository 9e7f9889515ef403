/**
 * A change of an object several instances' references read, rolled out as a plan's revision is, on
 * the real servers: the worker starts a rollout of the change over the plan's instances that read
 * the object, with the plan's rollout settings; the admin API lists it (kind `reference`), it
 * updates a canary first, then waves of at most `maxConcurrency`, can be paused and resumed by its
 * id, and ends with every instance reading the new version. A platform's identical repeat of a
 * provision afterwards is answered 200: the updates kept the request digest the record holds.
 */
import { randomUUID } from 'node:crypto';
import type { RolloutProgress, RolloutSummary } from '../../src/admin/contract.js';
import { getRecord } from '../../src/kube/custom-objects.js';
import { applyObject, ensureNamespace, readObject } from '../../src/kube/objects.js';
import { ANNOTATIONS, instanceNamespace, resourceName } from '../../src/resources/names.js';
import { SFSERVICEINSTANCE, type KubeObject, type SFServiceInstance } from '../../src/resources/types.js';
import { clusters, eventually, temporalClient, unique } from '../support/env.js';
import { osbClient, provisionBody, provisionSettled, type OsbClient } from '../support/osb.js';
import { ADMIN, callAdmin } from '../support/admin.js';
import { startProcess, systemSettings, type SystemProcess, type SystemSettings } from '../support/system.js';

const SERVICE_ID = randomUUID();
const PLAN_ID = randomUUID();
const INSTANCES = 5;
const SETTINGS = { canary: 1, maxConcurrency: 2, soakSeconds: 3, maxFailures: 0 };
/** The namespace of the object every instance reads. */
const SHARED = unique('ref-shared');
const REGISTRY = unique('ref-registry');

const PROVISION = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-settings
data:
  hosts:
    getValueFrom:
      kind: ConfigMap
      namespace: ${SHARED}
      name: shared-settings
      path: .data.hosts
`;

const STATUS = `
provision:
  state: succeeded
  description: the application's settings are applied
deprovision:
  state: succeeded
`;

describe('the rollout of a change of a referenced object', () => {
  const [master] = clusters();
  let settings: SystemSettings;
  let system: SystemProcess;
  let osb: OsbClient;
  const instances: string[] = [];

  const admin = (method: 'GET' | 'POST', path: string) => callAdmin(system.url, method, path);
  const sharedSettings = (hosts: string) =>
    applyObject(master!, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'shared-settings', namespace: SHARED },
      data: { hosts },
    } as KubeObject);
  const hostsOf = async (instanceId: string) =>
    (
      (await readObject(master!, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        name: 'app-settings',
        namespace: instanceNamespace(instanceId),
      })) as (KubeObject & { data?: Record<string, string> }) | undefined
    )?.data?.hosts;
  const recordOf = (instanceId: string) =>
    getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      instanceNamespace(instanceId),
      resourceName(instanceId),
    );

  beforeAll(async () => {
    // The file's own registry: its worker follows the references of its catalog's instances, and no
    // other test's worker (which follows none) acts on them.
    const namespace = REGISTRY;
    await ensureNamespace(master!, namespace);
    await ensureNamespace(master!, SHARED);
    await sharedSettings('db-0');
    await applyObject(master!, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFService',
      metadata: { name: SERVICE_ID, namespace },
      spec: {
        id: SERVICE_ID,
        name: `reference-rollouts-${SERVICE_ID.slice(0, 8)}`,
        description: 'a service whose instances read one shared object',
        bindable: false,
        planUpdatable: false,
        instancesRetrievable: true,
        // The shared settings' namespace, which the instances' references read.
        allowedNamespaces: [SHARED],
      },
    });
    await applyObject(master!, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFPlan',
      metadata: { name: PLAN_ID, namespace },
      spec: {
        id: PLAN_ID,
        name: 'shared-reader',
        serviceId: SERVICE_ID,
        description: 'reads a shared ConfigMap',
        free: true,
        bindable: false,
        planUpdatable: false,
        maximum_polling_duration: 600,
        manager: { async: true },
        rollout: SETTINGS,
        templates: [
          { action: 'provision', type: 'gotemplate', content: PROVISION },
          { action: 'status', type: 'gotemplate', content: STATUS },
        ],
      },
    });
    settings = await systemSettings({
      INTEROP_ADMIN_USERNAME: ADMIN.username,
      INTEROP_ADMIN_PASSWORD: ADMIN.password,
      INTEROP_NAMESPACE: REGISTRY,
      INTEROP_FOLLOW_REFERENCES: 'true',
    });
    system = await startProcess('all', settings);
    osb = osbClient(system.url);
    await eventually('the plan in the catalog', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { id: string }[];
      return services?.some((s) => s.id === SERVICE_ID) ? true : undefined;
    });
    for (let i = 0; i < INSTANCES; i += 1) {
      const instanceId = randomUUID();
      const done = await provisionSettled(osb, instanceId, provisionBody(SERVICE_ID, PLAN_ID), 120_000);
      expect(done.body.state).toBe('succeeded');
      instances.push(instanceId);
    }
  }, 600_000);

  afterAll(async () => {
    await system?.stop();
  });

  test('GIVEN instances reading one ConfigMap WHEN it changes THEN a rollout of the change updates a canary, then waves of at most maxConcurrency, paused and resumed through the admin API; a platform’s identical repeat of a provision answers 200', async () => {
    expect(await Promise.all(instances.map(hostsOf))).toEqual(instances.map(() => 'db-0'));
    const digests = await Promise.all(
      instances.map(async (id) => (await recordOf(id))?.metadata.annotations?.[ANNOTATIONS.requestHash]),
    );

    // WHEN the shared ConfigMap changes
    const changed = await sharedSettings('db-1');
    const version = changed.metadata.resourceVersion!;

    // THEN the admin API lists a rollout of the change, of kind reference
    const listed = await eventually(
      'the rollout of the change to be listed',
      async () => {
        const res = await admin('GET', '/admin/rollouts');
        expect(res.status).toBe(200);
        const items = (res.body as unknown as { items: RolloutSummary[] }).items;
        return items.find((r) => r.kind === 'reference' && r.planId === PLAN_ID);
      },
      60_000,
    );
    expect(listed.reference).toEqual({
      clusterId: master!.id,
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: SHARED,
      name: 'shared-settings',
    });
    const path = `/admin/rollouts/${encodeURIComponent(listed.id)}`;

    // AND it soaks after its canary: paused then, no update starts
    const soaking = await eventually(
      'the canary to end and the rollout to soak',
      async () => {
        const progress = (await admin('GET', path)).body as unknown as RolloutProgress;
        expect(progress.inFlight).toBeLessThanOrEqual(1);
        return progress.state === 'soaking' ? progress : undefined;
      },
      120_000,
    );
    expect(soaking).toMatchObject({
      revision: version,
      wave: 1,
      done: 1,
      total: INSTANCES,
      settings: SETTINGS,
    });
    const paused = await admin('POST', `${path}/pause`);
    expect([paused.status, (paused.body as unknown as RolloutProgress).state]).toEqual([200, 'paused']);
    await new Promise((resolve) => setTimeout(resolve, (SETTINGS.soakSeconds + 3) * 1000));
    const still = (await admin('GET', path)).body as unknown as RolloutProgress;
    expect(still).toMatchObject({ state: 'paused', done: 1, inFlight: 0 });
    expect((await Promise.all(instances.map(hostsOf))).filter((h) => h === 'db-1')).toHaveLength(1);
    expect((await admin('POST', `${path}/pause`)).status).toBe(409);

    // WHEN it is resumed THEN it ends with every instance reading the new version
    const resumed = await admin('POST', `${path}/resume`);
    expect(resumed.status).toBe(200);
    const done = await eventually(
      'the rollout to be done',
      async () => {
        const progress = (await admin('GET', path)).body as unknown as RolloutProgress;
        expect(progress.inFlight).toBeLessThanOrEqual(SETTINGS.maxConcurrency);
        return progress.state === 'done' ? progress : undefined;
      },
      240_000,
    );
    expect(done).toMatchObject({
      total: INSTANCES,
      done: INSTANCES,
      failed: 0,
      requestedBy: 'reference change',
    });
    expect(await Promise.all(instances.map(hostsOf))).toEqual(instances.map(() => 'db-1'));

    // AND the updates ran canary first, then at most maxConcurrency at once
    const temporal = await temporalClient(settings.payloadKeys);
    try {
      const runs: { start: number; end: number }[] = [];
      for await (const run of temporal.client.workflow.list({
        query: `OsbPlanId = "${PLAN_ID}" AND OsbOperation = "update"`,
      }))
        runs.push({ start: run.startTime.getTime(), end: run.closeTime!.getTime() });
      expect(runs).toHaveLength(INSTANCES);
      runs.sort((a, b) => a.start - b.start);
      const [canary, ...rest] = runs;
      for (const run of rest) expect(run.start).toBeGreaterThanOrEqual(canary!.end);
      const widest = Math.max(
        ...runs.map((r) => runs.filter((o) => o.start <= r.start && o.end > r.start).length),
      );
      expect(widest).toBeLessThanOrEqual(SETTINGS.maxConcurrency);
      // AND the Temporal UI finds the rollout by its kind and plan
      const rollouts: string[] = [];
      for await (const run of temporal.client.workflow.list({
        query: `OsbPlanId = "${PLAN_ID}" AND OsbOperation = "reference-rollout"`,
      }))
        rollouts.push(run.workflowId);
      expect(rollouts).toEqual([listed.id]);
    } finally {
      await temporal.close();
    }

    // AND every record reads the new version, its request digest untouched
    for (const [i, id] of instances.entries()) {
      const record = await recordOf(id);
      expect(record?.status).toMatchObject({ operation: 'update', state: 'succeeded' });
      expect(record?.status?.references?.[0]?.resourceVersion).toBe(version);
      expect(record?.metadata.annotations?.[ANNOTATIONS.requestHash]).toBe(digests[i]);
    }
    // AND a platform's identical repeat of a provision answers 200
    const repeated = await osb(
      'PUT',
      `/v2/service_instances/${instances[0]}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID),
    );
    expect([repeated.status, repeated.body.error]).toEqual([200, undefined]);
    // AND an ended rollout refuses a command, saying why
    const refused = await admin('POST', `${path}/abort`);
    expect(refused.status).toBe(409);
    expect(String((refused.body as { description?: string }).description)).toContain('is done');
  }, 600_000);
});
