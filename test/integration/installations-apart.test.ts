/**
 * Two installations on one master, each with its own registry namespace, on the real servers: each
 * labels its records with its namespace (`OWNER_INTEROPERATOR_NAMESPACE`) and lists and counts only
 * its own, even when both offer the same plan. The plan's objects are ConfigMaps and its status
 * template says done at once, so no operator is needed.
 */
import { randomUUID } from 'node:crypto';
import { getRecord } from '../../src/kube/custom-objects.js';
import { resourceName } from '../../src/resources/names.js';
import {
  SFSERVICEINSTANCE,
  type PlanTemplate,
  type SFPlan,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { ADMIN, callAdmin } from '../support/admin.js';
import { clusters, eventually, unique } from '../support/env.js';
import { osbClient, provisionBody, provisionSettled, type OsbClient } from '../support/osb.js';
import { DESIGN_SERVICE_ID, applyPlanCopy, installDesignPlan } from '../support/plans.js';
import { startProcess, systemSettings, type SystemProcess } from '../support/system.js';

const TEMPLATES: PlanTemplate[] = [
  {
    action: 'provision',
    type: 'gotemplate',
    content: [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: settings',
      'data:',
      '  size: small',
      '',
    ].join('\n'),
  },
  {
    action: 'status',
    type: 'gotemplate',
    content: ['provision:', '  state: succeeded', 'deprovision:', '  state: succeeded', ''].join('\n'),
  },
];

interface Installation {
  readonly registry: string;
  system?: SystemProcess;
  osb?: OsbClient;
}

describe('two installations on one master', () => {
  const [master] = clusters();
  const a: Installation = { registry: unique('apart-a') };
  const b: Installation = { registry: unique('apart-b') };
  // The same plan, with a quota of one instance per organization, in both catalogs.
  const planId = randomUUID();

  beforeAll(async () => {
    for (const installation of [a, b]) {
      const design: SFPlan = await installDesignPlan(master!, installation.registry);
      await applyPlanCopy(master!, installation.registry, design, planId, 'apart', {
        templates: TEMPLATES,
        schemas: {},
        quota: { instances: 1, tenant: 'organization' },
      });
      installation.system = await startProcess(
        'all',
        await systemSettings({
          INTEROP_NAMESPACE: installation.registry,
          INTEROP_ADMIN_USERNAME: ADMIN.username,
          INTEROP_ADMIN_PASSWORD: ADMIN.password,
        }),
      );
      const osb = osbClient(installation.system.url);
      installation.osb = osb;
      await eventually('the plan in the catalog', async () => {
        const res = await osb('GET', '/v2/catalog');
        return JSON.stringify(res.body).includes(planId) ? true : undefined;
      });
    }
  }, 240_000);

  afterAll(async () => {
    for (const installation of [a, b]) {
      await installation.system?.stop();
      await master!.core.deleteNamespace({ name: installation.registry }).catch(() => undefined);
    }
  });

  const listed = async (installation: Installation): Promise<string[]> => {
    const res = await callAdmin(installation.system!.url, 'GET', `/admin/instances?plan=${planId}`);
    expect(res.status).toBe(200);
    return (res.body.items as { instanceId: string }[]).map((i) => i.instanceId).sort();
  };

  test('each counts its quota, lists and labels only its own instances', async () => {
    // GIVEN an instance of the plan in installation A, for the organization `org`
    const inA = randomUUID();
    const provisionedInA = await provisionSettled(a.osb!, inA, provisionBody(DESIGN_SERVICE_ID, planId));
    expect(provisionedInA.body.state).toBe('succeeded');

    // WHEN installation B provisions an instance of the same plan for the same organization
    const inB = randomUUID();
    const provisionedInB = await provisionSettled(b.osb!, inB, provisionBody(DESIGN_SERVICE_ID, planId));
    // THEN B's quota counts only B's instances: it is accepted
    expect(provisionedInB.body.state).toBe('succeeded');
    // AND a second one in B is refused by B's quota, which now counts B's one
    const refused = await b.osb!(
      'PUT',
      `/v2/service_instances/${randomUUID()}?accepts_incomplete=true`,
      provisionBody(DESIGN_SERVICE_ID, planId),
    );
    expect(refused.status).toBe(403);

    // AND each lists only its own
    expect(await listed(a)).toEqual([inA]);
    expect(await listed(b)).toEqual([inB]);

    // AND each record names its owner
    for (const [instanceId, owner] of [
      [inA, a.registry],
      [inB, b.registry],
    ] as const) {
      const record = await getRecord<SFServiceInstance>(
        master!,
        SFSERVICEINSTANCE,
        `sf-${instanceId}`,
        resourceName(instanceId),
      );
      expect(record?.metadata.labels?.OWNER_INTEROPERATOR_NAMESPACE).toBe(owner);
    }
  }, 240_000);

  test('one answers for no instance of the other, and never operates on it, though the id names its record', async () => {
    // GIVEN an instance of installation A (of another organization: the quota is one per organization)
    const inA = randomUUID();
    const body = { ...provisionBody(DESIGN_SERVICE_ID, planId), organization_guid: 'org-apart' };
    const provisioned = await provisionSettled(a.osb!, inA, body);
    expect(provisioned.body.state).toBe('succeeded');
    const path = `/v2/service_instances/${inA}`;
    const query = `service_id=${DESIGN_SERVICE_ID}&plan_id=${planId}&accepts_incomplete=true`;

    // WHEN installation B is asked about it, by the same id, as a platform of B would
    const seen = {
      get: (await b.osb!('GET', path)).status,
      lastOperation: (await b.osb!('GET', `${path}/last_operation`)).status,
      update: (
        await b.osb!('PATCH', `${path}?accepts_incomplete=true`, {
          service_id: DESIGN_SERVICE_ID,
          parameters: {},
        })
      ).status,
      bind: (
        await b.osb!('PUT', `${path}/service_bindings/${randomUUID()}`, {
          service_id: DESIGN_SERVICE_ID,
          plan_id: planId,
        })
      ).status,
      deprovision: (await b.osb!('DELETE', `${path}?${query}`)).status,
      provision: (await b.osb!('PUT', `${path}?accepts_incomplete=true`, body)).status,
    };
    // THEN B answers as for an instance it does not have (404, the deletion 410), and a create of
    // the id is a conflict: its record would be A's
    expect(seen).toEqual({
      get: 404,
      lastOperation: 404,
      update: 404,
      bind: 404,
      deprovision: 410,
      provision: 409,
    });

    // AND A's instance is untouched: not being deleted, its last operation still its provision
    const record = await getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      `sf-${inA}`,
      resourceName(inA),
    );
    expect(record?.metadata.deletionTimestamp).toBeUndefined();
    expect(record?.status).toMatchObject({ state: 'succeeded', operation: 'provision' });
    expect((await a.osb!('GET', `${path}/last_operation`)).body).toMatchObject({ state: 'succeeded' });
    expect((await a.osb!('GET', path)).status).toBe(200);
  }, 240_000);
});
