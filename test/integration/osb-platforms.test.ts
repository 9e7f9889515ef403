/**
 * The OSB API as platforms registered Service Fabrik's broker, on the real broker, Temporal and
 * apiservers: the routes under /<platform>/v2 and /<platform>/region/<region>/v2, each platform's
 * catalog by `supported_platform`, the platform and region on the records, GET instance and binding
 * from 2.14, and Cloud Foundry's multiple bindings of one app (`cf bind-service --strategy multiple`).
 */
import { randomUUID } from 'node:crypto';
import { deleteRecord, getRecord } from '../../src/kube/custom-objects.js';
import {
  SFPLAN,
  SFSERVICE,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { clusters, environment, eventually } from '../support/env.js';
import { osbClient } from '../support/osb.js';
import { rulesBroker, teamPlan } from '../support/rules-broker.js';

const SERVICE_ID = 'c1f0e2a4-platforms-service';
/** Offered on Cloud Foundry only; synchronous; its bindings answer credentials and metadata. */
const CF_PLAN = 'platforms-plan-cf';
/** Offered on every platform. */
const ANY_PLAN = 'platforms-plan-any';

describe('Service Fabrik platform routes on the real broker', () => {
  const rules = rulesBroker();
  const { osb } = rules;
  const [master] = clusters();
  const ns = () => environment().namespace;

  beforeAll(async () => {
    await master!.objects.create({
      apiVersion: SFSERVICE.apiVersion,
      kind: SFSERVICE.kind,
      metadata: { name: SERVICE_ID, namespace: ns() },
      spec: {
        id: SERVICE_ID,
        name: 'platforms',
        description: 'a service of the platform routes test',
        bindable: true,
        instancesRetrievable: true,
        bindingsRetrievable: true,
      },
    });
    await master!.objects.create(cfPlan() as never);
    await master!.objects.create(teamPlan(ANY_PLAN, false, { serviceId: SERVICE_ID }) as never);
    await eventually('the platforms service in the catalog', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { id: string; plans: unknown[] }[];
      return services.find((s) => s.id === SERVICE_ID)?.plans.length === 2 ? true : undefined;
    });
  });

  afterAll(async () => {
    await deleteRecord(master!, SFPLAN, ns(), CF_PLAN);
    await deleteRecord(master!, SFPLAN, ns(), ANY_PLAN);
    await deleteRecord(master!, SFSERVICE, ns(), SERVICE_ID);
  });

  const plansOf = async (path: string) => {
    const res = await osb('GET', path);
    const services = res.body.services as { id: string; plans: { id: string }[] }[];
    return [
      res.status,
      services
        .find((s) => s.id === SERVICE_ID)
        ?.plans.map((p) => p.id)
        .sort(),
    ];
  };

  test("each platform's catalog shows the plans offered on it; an unknown platform is a 404", async () => {
    expect(await plansOf('/v2/catalog')).toEqual([200, [ANY_PLAN, CF_PLAN]]);
    expect(await plansOf('/cf/v2/catalog')).toEqual([200, [ANY_PLAN, CF_PLAN]]);
    expect(await plansOf('/cf/region/eu10/v2/catalog')).toEqual([200, [ANY_PLAN, CF_PLAN]]);
    expect(await plansOf('/k8s/v2/catalog')).toEqual([200, [ANY_PLAN]]);
    expect(await plansOf('/sm/region/eu10/v2/catalog')).toEqual([200, [ANY_PLAN]]);
    const unknown = await osb('GET', '/xx/v2/catalog');
    expect([unknown.status, unknown.body.error]).toEqual([404, 'NotFound']);
    // The prefixed paths are OSB paths: no credentials, no answer.
    const anonymous = await fetch(`${rules.system.url}/cf/region/eu10/v2/catalog`, {
      headers: { 'X-Broker-API-Version': '2.17' },
    });
    expect(anonymous.status).toBe(401);
  });

  test('a plan is not provisioned on a platform it is not offered on (400), and nothing is recorded', async () => {
    const id = randomUUID();
    const res = await osb('PUT', `/k8s/v2/service_instances/${id}`, provisionBody(CF_PLAN));
    expect([res.status, res.body]).toEqual([
      400,
      {
        error: 'BadRequest',
        description: `Plan ${CF_PLAN} is not offered on platform k8s; it is offered on cf.`,
      },
    ]);
    expect(await getRecord(master!, SFSERVICEINSTANCE, `sf-${id}`, id)).toBeUndefined();
  });

  test("Cloud Foundry's multiple bindings of one app: both stay valid until the old one is unbound; records carry the platform and region", async () => {
    const instanceId = randomUUID();
    const base = `/cf/region/eu10/v2/service_instances/${instanceId}`;
    const provisioned = await osb('PUT', base, provisionBody(CF_PLAN));
    expect(provisioned.status).toBe(201);
    // The template saw them: the postgresql it rendered carries them.
    const pg = await master!.objects.read({
      apiVersion: 'acid.zalan.do/v1',
      kind: 'postgresql',
      metadata: { name: 'db', namespace: `sf-${instanceId}` },
    });
    expect(pg.metadata?.annotations).toMatchObject({ platform: 'cf', region: 'eu10' });
    const instance = await getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      `sf-${instanceId}`,
      instanceId,
    );
    expect(instance?.metadata.labels).toMatchObject({
      'interoperator.servicefabrik.io/platform': 'cf',
      'interoperator.servicefabrik.io/region': 'eu10',
    });

    // GET instance from 2.14 only.
    const old = await osbClient(rules.system.url, '2.13')('GET', base);
    expect([old.status, old.body.error]).toEqual([412, 'PreconditionFailed']);
    expect((await osb('GET', base)).body).toMatchObject({ service_id: SERVICE_ID, plan_id: CF_PLAN });

    // What Cloud Foundry sends for `cf bind-service app db --strategy multiple`: the same app, a new binding id.
    const appGuid = randomUUID();
    const bindBody = {
      service_id: SERVICE_ID,
      plan_id: CF_PLAN,
      app_guid: appGuid,
      bind_resource: { app_guid: appGuid, space_guid: 'space-guid' },
      context: {
        platform: 'cloudfoundry',
        organization_guid: 'org-guid',
        organization_name: 'org',
        space_guid: 'space-guid',
        space_name: 'dev',
        app_name: 'app',
      },
    };
    const [first, second] = [randomUUID(), randomUUID()];
    const firstBound = await osb('PUT', `${base}/service_bindings/${first}`, bindBody);
    expect(firstBound.status).toBe(201);
    const secondBound = await osb('PUT', `${base}/service_bindings/${second}`, bindBody);
    expect(secondBound.status).toBe(201);
    // Each its own credentials; the binding's metadata is answered (send_binding_metadata's default).
    expect(firstBound.body.credentials).toEqual({ user: first });
    expect(secondBound.body.credentials).toEqual({ user: second });
    expect(secondBound.body.metadata).toMatchObject({ expires_at: expect.any(String) });
    const binding = await getRecord<SFServiceBinding>(master!, SFSERVICEBINDING, `sf-${instanceId}`, second);
    expect(binding?.metadata.labels).toMatchObject({
      'interoperator.servicefabrik.io/platform': 'cf',
      'interoperator.servicefabrik.io/region': 'eu10',
    });
    expect(binding?.spec.bindResource).toEqual({ app_guid: appGuid, space_guid: 'space-guid' });

    // Both valid until the old one is unbound; then only the new one.
    expect((await osb('GET', `${base}/service_bindings/${first}`)).body.credentials).toEqual({ user: first });
    expect((await osb('GET', `${base}/service_bindings/${second}`)).body.credentials).toEqual({
      user: second,
    });
    const plan = `service_id=${SERVICE_ID}&plan_id=${CF_PLAN}`;
    expect((await osb('DELETE', `${base}/service_bindings/${first}?${plan}`)).status).toBe(200);
    expect((await osb('GET', `${base}/service_bindings/${first}`)).status).toBe(404);
    expect((await osb('GET', `${base}/service_bindings/${second}`)).body.credentials).toEqual({
      user: second,
    });

    expect((await osb('DELETE', `${base}/service_bindings/${second}?${plan}`)).status).toBe(200);
    expect((await osb('DELETE', `${base}?${plan}`)).status).toBe(200);
  });
});

/**
 * The plan offered on Cloud Foundry only: a team plan whose postgresql is annotated with the
 * platform and region labels of the instance, as its template sees them.
 */
function cfPlan() {
  const plan = teamPlan(CF_PLAN, false, { serviceId: SERVICE_ID, supported_platform: ['cf'] });
  const labels = '.instance.metadata.labels';
  plan.spec.templates[0]!.content = plan.spec.templates[0]!.content.replace(
    '  name: db\n',
    '  name: db\n  annotations:\n' +
      `    platform: '{{ index ${labels} "interoperator.servicefabrik.io/platform" }}'\n` +
      `    region: '{{ index ${labels} "interoperator.servicefabrik.io/region" }}'\n`,
  );
  return plan;
}

function provisionBody(planId: string) {
  return {
    service_id: SERVICE_ID,
    plan_id: planId,
    organization_guid: 'org-guid',
    space_guid: 'space-guid',
    context: { platform: 'cloudfoundry', organization_guid: 'org-guid', space_guid: 'space-guid' },
  };
}
