/**
 * Quotas, deprecated plans, the entitlement service and plans removed from the catalog, against
 * the real broker, worker, Temporal and apiservers. The entitlement service is an HTTP server of
 * the test, standing for the user's own.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../../dev/local/processes.js';
import { CATALOG_FINALIZER } from '../../src/resources/names.js';
import { deleteRecord, getRecord, patchRecord } from '../../src/kube/custom-objects.js';
import { applyObject } from '../../src/kube/objects.js';
import { instanceNamespace, resourceName } from '../../src/resources/names.js';
import {
  SFPLAN,
  SFSERVICE,
  SFSERVICEINSTANCE,
  type PlanQuota,
  type SFPlan,
  type SFService,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { clusters, environment, eventually, unique } from '../support/env.js';
import { osbClient, type OsbClient } from '../support/osb.js';
import { startProcess, systemSettings, type SystemProcess, type SystemSettings } from '../support/system.js';

const run = unique('quota');
const SERVICE = `${run}-service`;
const PLANS = {
  small: `${run}-small`,
  large: `${run}-large`,
  open: `${run}-open`,
  old: `${run}-old`,
  leaving: `${run}-leaving`,
};

const service = (id: string) => ({
  apiVersion: SFSERVICE.apiVersion,
  kind: SFSERVICE.kind,
  metadata: { name: id, namespace: environment().namespace },
  spec: {
    id,
    name: id,
    description: `test service ${id}`,
    bindable: true,
    planUpdatable: true,
    instancesRetrievable: true,
  },
});

/** A synchronous plan whose instance is one ConfigMap, done at once. */
const plan = (id: string, serviceId: string, extra: { quota?: PlanQuota } = {}) => ({
  apiVersion: SFPLAN.apiVersion,
  kind: SFPLAN.kind,
  metadata: { name: id, namespace: environment().namespace },
  spec: {
    id,
    name: id,
    description: `test plan ${id}`,
    serviceId,
    planUpdatable: true,
    manager: { async: false },
    templates: [
      {
        action: 'provision',
        type: 'gotemplate',
        content:
          'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  plan: {{ .plan.spec.id }}\n',
      },
      {
        action: 'status',
        type: 'gotemplate',
        content: 'provision: {state: succeeded}\ndeprovision: {state: succeeded}\n',
      },
    ],
    ...extra,
  },
});

const provision = (planId: string, organization: string, serviceId = SERVICE) => ({
  service_id: serviceId,
  plan_id: planId,
  organization_guid: organization,
  space_guid: 'space',
  context: { platform: 'cloudfoundry', organization_guid: organization, space_guid: 'space' },
});

const deprovisionPath = (id: string, planId: string, serviceId = SERVICE) =>
  `/v2/service_instances/${id}?service_id=${serviceId}&plan_id=${planId}`;

describe('quotas and plan deprecation on the real broker', () => {
  const [master] = clusters();
  const ns = () => environment().namespace;
  let settings: SystemSettings;
  let system: SystemProcess;
  let osb: OsbClient;
  const record = (id: string) =>
    getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, instanceNamespace(id), resourceName(id));

  beforeAll(async () => {
    await applyObject(master!, service(SERVICE));
    await applyObject(
      master!,
      plan(PLANS.small, SERVICE, { quota: { instances: 1, tenant: 'organization', group: 'pg' } }),
    );
    await applyObject(
      master!,
      plan(PLANS.large, SERVICE, { quota: { instances: 2, tenant: 'organization', group: 'pg' } }),
    );
    await applyObject(master!, plan(PLANS.open, SERVICE));
    await applyObject(master!, plan(PLANS.old, SERVICE));
    settings = await systemSettings();
    system = await startProcess('all', settings);
    osb = osbClient(system.url);
  });

  afterAll(async () => {
    await system?.stop();
  });

  test('GIVEN an organization at its quota THEN a provision is refused with 403 naming the limit, and nothing is recorded; another organization and a move within the group still pass', async () => {
    const first = randomUUID();
    expect((await osb('PUT', `/v2/service_instances/${first}`, provision(PLANS.small, 'org-a'))).status).toBe(
      201,
    );

    const refused = randomUUID();
    const res = await osb('PUT', `/v2/service_instances/${refused}`, provision(PLANS.small, 'org-a'));
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      error: 'QuotaExceeded',
      description: `The quota of quota group pg (plans ${PLANS.large}, ${PLANS.small}) is 1 instance per organization; organization org-a holds 1.`,
    });
    expect(await record(refused)).toBeUndefined();
    expect((await osb('GET', `/v2/service_instances/${refused}`)).status).toBe(404);

    // the larger plan of the group allows two: org-a holds one, of the group
    const second = randomUUID();
    expect(
      (await osb('PUT', `/v2/service_instances/${second}`, provision(PLANS.large, 'org-a'))).status,
    ).toBe(201);
    const third = randomUUID();
    const over = await osb('PUT', `/v2/service_instances/${third}`, provision(PLANS.large, 'org-a'));
    expect(over.status).toBe(403);
    expect(over.body.description).toContain('is 2 instances per organization; organization org-a holds 2.');

    const elsewhere = randomUUID();
    expect(
      (await osb('PUT', `/v2/service_instances/${elsewhere}`, provision(PLANS.small, 'org-b'))).status,
    ).toBe(201);

    // a move within the group adds no instance to it
    const moved = await osb('PATCH', `/v2/service_instances/${first}`, {
      service_id: SERVICE,
      plan_id: PLANS.large,
    });
    expect(moved.status).toBe(200);

    // an instance of a plan without quota may not move into the full group
    const outside = randomUUID();
    expect(
      (await osb('PUT', `/v2/service_instances/${outside}`, provision(PLANS.open, 'org-a'))).status,
    ).toBe(201);
    const into = await osb('PATCH', `/v2/service_instances/${outside}`, {
      service_id: SERVICE,
      plan_id: PLANS.small,
    });
    expect(into.status).toBe(403);
    expect(into.body.error).toBe('QuotaExceeded');
    expect((await record(outside))!.spec.planId).toBe(PLANS.open);

    // once one instance goes, the organization has room again
    expect((await osb('DELETE', deprovisionPath(second, PLANS.large))).status).toBe(200);
    expect((await osb('PUT', `/v2/service_instances/${third}`, provision(PLANS.large, 'org-a'))).status).toBe(
      201,
    );

    for (const [id, planId] of [
      [first, PLANS.large],
      [third, PLANS.large],
      [elsewhere, PLANS.small],
      [outside, PLANS.open],
    ] as const) {
      expect((await osb('DELETE', deprovisionPath(id, planId))).status).toBe(200);
    }
  });

  test('GIVEN a plan marked deprecated THEN new provisions get 403, while its instance keeps working and moves away', async () => {
    const kept = randomUUID();
    expect((await osb('PUT', `/v2/service_instances/${kept}`, provision(PLANS.old, 'org-c'))).status).toBe(
      201,
    );
    await patchRecord(master!, SFPLAN, ns(), PLANS.old, { spec: { metadata: { state: 'deprecated' } } });
    const refused = await eventually('the deprecation to be seen', async () => {
      const res = await osb('PUT', `/v2/service_instances/${randomUUID()}`, provision(PLANS.old, 'org-c'));
      return res.status === 403 ? res : undefined;
    });
    expect(refused.body.error).toBe('PlanNotAvailable');
    expect(refused.body.description).toContain(`Plan ${PLANS.old} of service ${SERVICE} is deprecated`);
    // the catalog still shows it, saying it is deprecated
    const catalog = (await osb('GET', '/v2/catalog')).body.services as {
      id: string;
      plans: { id: string; metadata?: { state?: string } }[];
    }[];
    const shown = catalog.find((s) => s.id === SERVICE)?.plans.find((p) => p.id === PLANS.old);
    expect(shown?.metadata?.state).toBe('deprecated');

    // its instance is updated in place, and moves away
    expect(
      (
        await osb('PATCH', `/v2/service_instances/${kept}`, {
          service_id: SERVICE,
          parameters: { size: 'm' },
        })
      ).status,
    ).toBe(200);
    const moved = await osb('PATCH', `/v2/service_instances/${kept}`, {
      service_id: SERVICE,
      plan_id: PLANS.open,
    });
    expect(moved.status).toBe(200);
    expect((await record(kept))!.spec.planId).toBe(PLANS.open);
    // and cannot come back
    const back = await osb('PATCH', `/v2/service_instances/${kept}`, {
      service_id: SERVICE,
      plan_id: PLANS.old,
    });
    expect(back.status).toBe(403);
    expect((await osb('DELETE', deprovisionPath(kept, PLANS.open))).status).toBe(200);
  });

  test('GIVEN a plan and its service deleted while an instance remains THEN both are held until its deprovision, which works; the catalog no longer offers them', async () => {
    const leavingService = `${run}-leaving-service`;
    await applyObject(master!, service(leavingService));
    await applyObject(master!, plan(PLANS.leaving, leavingService));
    const id = randomUUID();
    await eventually('the new plan in the broker', async () => {
      const res = await osb(
        'PUT',
        `/v2/service_instances/${id}`,
        provision(PLANS.leaving, 'org-d', leavingService),
      );
      return res.status === 201 ? res : undefined;
    });
    const planNow = () => getRecord<SFPlan>(master!, SFPLAN, ns(), PLANS.leaving);
    const serviceNow = () => getRecord<SFService>(master!, SFSERVICE, ns(), leavingService);
    expect((await planNow())?.metadata.finalizers).toContain(CATALOG_FINALIZER);
    expect((await serviceNow())?.metadata.finalizers).toContain(CATALOG_FINALIZER);

    await deleteRecord(master!, SFPLAN, ns(), PLANS.leaving);
    await deleteRecord(master!, SFSERVICE, ns(), leavingService);
    expect((await planNow())?.metadata.deletionTimestamp).toBeDefined();
    expect((await serviceNow())?.metadata.deletionTimestamp).toBeDefined();

    await eventually('the catalog without them', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { id: string }[];
      return services.some((s) => s.id === leavingService) ? undefined : true;
    });
    const refused = await osb(
      'PUT',
      `/v2/service_instances/${randomUUID()}`,
      provision(PLANS.leaving, 'org-d', leavingService),
    );
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('PlanNotAvailable');
    // the instance still reads, and still works
    expect((await osb('GET', `/v2/service_instances/${id}`)).body.plan_id).toBe(PLANS.leaving);

    expect((await osb('DELETE', deprovisionPath(id, PLANS.leaving, leavingService))).status).toBe(200);
    await eventually('the plan and the service gone', async () =>
      !(await planNow()) && !(await serviceNow()) ? true : undefined,
    );
  });

  describe('the entitlement service', () => {
    let answer: 'allow' | 'refuse' | 'hang' = 'allow';
    const asked: Record<string, unknown>[] = [];
    /** What Service Fabrik's quota app answers, and how it was asked. */
    let quotaApp: { quotaValidStatus: number; message?: string } = { quotaValidStatus: 0 };
    const quotaAppAsked: { url: string; authorization?: string }[] = [];
    const authorizations: (string | undefined)[] = [];
    let server: Server;
    const brokers: SystemProcess[] = [];

    /** A broker of the same task queue (its worker is the system's), asking the service at `url`. */
    const brokerAsking = async (
      url: string,
      policy: 'refuse' | 'allow',
      protocol: 'entitlement' | 'service-fabrik' = 'entitlement',
    ) => {
      const broker = await startProcess('broker', {
        ...settings,
        port: await freePort(),
        extraEnv: {
          INTEROP_QUOTA_WEBHOOK_URL: url,
          INTEROP_QUOTA_WEBHOOK_PROTOCOL: protocol,
          INTEROP_QUOTA_WEBHOOK_TIMEOUT_SECONDS: '1',
          INTEROP_QUOTA_WEBHOOK_FAILURE_POLICY: policy,
        },
      });
      brokers.push(broker);
      return osbClient(broker.url);
    };

    beforeAll(async () => {
      server = createServer((req, res) => {
        if (req.method === 'GET') {
          quotaAppAsked.push({ url: req.url ?? '', authorization: req.headers.authorization });
          res.setHeader('content-type', 'application/json');
          res.end(JSON.stringify(quotaApp));
          return;
        }
        authorizations.push(req.headers.authorization);
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk.toString()));
        req.on('end', () => {
          asked.push(JSON.parse(body) as Record<string, unknown>);
          if (answer === 'hang') return; // never answers
          res.setHeader('content-type', 'application/json');
          res.end(
            JSON.stringify(
              answer === 'allow'
                ? { allowed: true }
                : { allowed: false, description: 'org-e is not entitled to this plan' },
            ),
          );
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    });

    afterAll(async () => {
      for (const broker of brokers) await broker.stop();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });

    test('GIVEN the policy refuse THEN an allowed provision passes, a refused one gets 403 with the reason, a silent service gets 503; nothing is recorded of the refused', async () => {
      const port = (server.address() as AddressInfo).port;
      // (its credentials in the URL: sent as Basic authentication)
      const client = await brokerAsking(`http://entitle:s%3Acret@127.0.0.1:${port}/entitlements`, 'refuse');

      answer = 'allow';
      const allowed = randomUUID();
      expect(
        (await client('PUT', `/v2/service_instances/${allowed}`, provision(PLANS.open, 'org-e'))).status,
      ).toBe(201);
      expect(asked.at(-1)).toEqual({
        operation: 'provision',
        instance_id: allowed,
        service_id: SERVICE,
        plan_id: PLANS.open,
        organization_guid: 'org-e',
        space_guid: 'space',
        context: { platform: 'cloudfoundry', organization_guid: 'org-e', space_guid: 'space' },
      });
      expect(authorizations.at(-1)).toBe(`Basic ${Buffer.from('entitle:s:cret').toString('base64')}`);
      // A provision on a platform's path tells the platform and the region.
      const onPlatform = randomUUID();
      expect(
        (
          await client(
            'PUT',
            `/cf/region/eu10/v2/service_instances/${onPlatform}`,
            provision(PLANS.open, 'org-e'),
          )
        ).status,
      ).toBe(201);
      expect(asked.at(-1)).toMatchObject({ instance_id: onPlatform, platform: 'cf', region: 'eu10' });

      answer = 'refuse';
      const refusedId = randomUUID();
      const refused = await client(
        'PUT',
        `/v2/service_instances/${refusedId}`,
        provision(PLANS.open, 'org-e'),
      );
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({
        error: 'EntitlementRefused',
        description: 'The entitlement service refuses this instance: org-e is not entitled to this plan',
      });
      expect(await record(refusedId)).toBeUndefined();
      // a plan change asks too
      const change = await client('PATCH', `/v2/service_instances/${allowed}`, {
        service_id: SERVICE,
        plan_id: PLANS.large,
      });
      expect(change.status).toBe(403);
      expect(asked.at(-1)).toMatchObject({
        operation: 'update',
        plan_id: PLANS.large,
        previous_plan_id: PLANS.open,
      });

      answer = 'hang';
      const silentId = randomUUID();
      const silent = await client('PUT', `/v2/service_instances/${silentId}`, provision(PLANS.open, 'org-e'));
      expect(silent.status).toBe(503);
      expect(silent.body.description).toContain(
        'The entitlement service could not be asked (no answer in 1 s)',
      );
      expect(await record(silentId)).toBeUndefined();

      answer = 'allow';
      expect((await client('DELETE', deprovisionPath(allowed, PLANS.open))).status).toBe(200);
    });

    test("GIVEN Service Fabrik's quota app THEN it is asked by GET as Service Fabrik's broker asks it; 0 lets the provision pass, 1 and 2 refuse with 403 and its texts", async () => {
      const port = (server.address() as AddressInfo).port;
      const client = await brokerAsking(`http://quota:secret@127.0.0.1:${port}`, 'refuse', 'service-fabrik');

      quotaApp = { quotaValidStatus: 0 };
      const allowed = randomUUID();
      expect(
        (await client('PUT', `/v2/service_instances/${allowed}`, provision(PLANS.open, 'org-q'))).status,
      ).toBe(201);
      const first = quotaAppAsked.at(-1)!;
      expect(first.authorization).toBe(`Basic ${Buffer.from('quota:secret').toString('base64')}`);
      const url = new URL(first.url, 'http://quota.app');
      expect(url.pathname).toBe('/v1/account/undefined/quota');
      expect(Object.fromEntries(url.searchParams)).toEqual({
        planId: PLANS.open,
        useAPIServerForConsumedQuotaCheck: 'true',
        orgId: 'org-q',
        reqMethod: 'PUT',
        instanceId: allowed,
      });

      for (const [status, message, error, description] of [
        [1, undefined, 'QuotaExceeded', 'Quota is not sufficient for this request'],
        [2, 'org-q is not entitled to plan open', 'EntitlementRefused', 'org-q is not entitled to plan open'],
      ] as const) {
        quotaApp = { quotaValidStatus: status, ...(message ? { message } : {}) };
        const refusedId = randomUUID();
        const refused = await client(
          'PUT',
          `/v2/service_instances/${refusedId}`,
          provision(PLANS.open, 'org-q'),
        );
        expect({ status: refused.status, body: refused.body }).toEqual({
          status: 403,
          body: { error, description },
        });
        expect(await record(refusedId)).toBeUndefined();
      }
      // a plan change asks with PATCH and the plan it leaves
      quotaApp = { quotaValidStatus: 1 };
      const change = await client('PATCH', `/v2/service_instances/${allowed}`, {
        service_id: SERVICE,
        plan_id: PLANS.large,
      });
      expect(change.status).toBe(403);
      expect(
        Object.fromEntries(new URL(quotaAppAsked.at(-1)!.url, 'http://quota.app').searchParams),
      ).toMatchObject({
        planId: PLANS.large,
        previousPlanId: PLANS.open,
        reqMethod: 'PATCH',
      });

      quotaApp = { quotaValidStatus: 0 };
      expect((await client('DELETE', deprovisionPath(allowed, PLANS.open))).status).toBe(200);
    });

    test('GIVEN a service that cannot be reached THEN the policy decides: refuse answers 503, allow lets the provision pass', async () => {
      const closed = `http://127.0.0.1:${await freePort()}/entitlements`;
      const refusing = await brokerAsking(closed, 'refuse');
      const allowing = await brokerAsking(closed, 'allow');

      const refusedId = randomUUID();
      const refused = await refusing(
        'PUT',
        `/v2/service_instances/${refusedId}`,
        provision(PLANS.open, 'org-f'),
      );
      expect(refused.status).toBe(503);
      expect(refused.body.description).toContain('(it could not be reached)');
      expect(await record(refusedId)).toBeUndefined();

      const allowedId = randomUUID();
      expect(
        (await allowing('PUT', `/v2/service_instances/${allowedId}`, provision(PLANS.open, 'org-f'))).status,
      ).toBe(201);
      expect(await record(allowedId)).toBeDefined();
      expect((await allowing('DELETE', deprovisionPath(allowedId, PLANS.open))).status).toBe(200);
    });
  });
});
