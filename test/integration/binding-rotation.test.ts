/**
 * Binding rotation and expiry end to end, on the real servers: the mustache example plan, copied
 * as a plan with `bindingRotatable` and a `bindingLifetime`, with the example operator. A platform
 * binds, rotates the binding into a successor (both credentials work until the predecessor is
 * unbound), is refused rotations the rules forbid, and reads the same expires_at/renew_before on
 * every answer.
 */
import { randomUUID } from 'node:crypto';
import { credentialsSecretName } from '../../examples/operator/operator.js';
import { getRecord } from '../../src/kube/custom-objects.js';
import { applyObject } from '../../src/kube/objects.js';
import { LABELS, bindingSecretName, resourceName } from '../../src/resources/names.js';
import { SFSERVICEBINDING, type SFPlan, type SFServiceBinding } from '../../src/resources/types.js';
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
/** The mustache example plan, as installed: not rotatable, no lifetime. */
const PLAIN_PLAN_ID = '2f3c9a8e-0d7b-4a8e-b7a6-5a1c0e9d4b02';
/** Its copy with rotation and a 30-day lifetime renewed a week ahead. */
const ROTATING_PLAN_ID = '5e0b7c52-2f3a-4d8e-9c61-8a4f1d7b3e01';
/** Its copy with rotation and a lifetime of seconds, without renewBefore. */
const SHORT_PLAN_ID = '5e0b7c52-2f3a-4d8e-9c61-8a4f1d7b3e02';
const DAY = 86_400_000;

describe('binding rotation and expiry (OSB 2.17)', () => {
  let system: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;
  const [master] = clusters();

  /** Provisions an instance of `planId`; resolves with its id once it succeeded. */
  async function provision(planId: string): Promise<string> {
    const instanceId = randomUUID();
    const path = `/v2/service_instances/${instanceId}`;
    const accepted = await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE_ID, planId));
    expect(accepted.status).toBe(202);
    const done = await untilSettled(
      osb,
      `${path}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
      120_000,
    );
    expect(done.body.state).toBe('succeeded');
    return instanceId;
  }

  const bindingPath = (instanceId: string, bindingId: string) =>
    `/v2/service_instances/${instanceId}/service_bindings/${bindingId}`;
  const bind = (instanceId: string, bindingId: string, planId: string, extra: Record<string, unknown> = {}) =>
    osb('PUT', bindingPath(instanceId, bindingId), { service_id: SERVICE_ID, plan_id: planId, ...extra });
  const unbind = (instanceId: string, bindingId: string, planId: string) =>
    osb('DELETE', `${bindingPath(instanceId, bindingId)}?service_id=${SERVICE_ID}&plan_id=${planId}`);

  /** The users of the instance's postgresql: one per binding whose credentials the operator keeps. */
  const users = async (instanceId: string) =>
    Object.keys(
      (
        (await master!.custom.getNamespacedCustomObject({
          group: 'acid.zalan.do',
          version: 'v1',
          plural: 'postgresqls',
          namespace: `sf-${instanceId}`,
          name: `mpg-${instanceId}`,
        })) as { spec: { users: Record<string, unknown> } }
      ).spec.users,
    ).sort();

  /** The password the operator keeps for the binding's user; undefined once its Secret is gone. */
  async function operatorPassword(instanceId: string, bindingId: string): Promise<string | undefined> {
    try {
      const secret = await master!.core.readNamespacedSecret({
        namespace: `sf-${instanceId}`,
        name: credentialsSecretName(resourceName(bindingId), `mpg-${instanceId}`),
      });
      return Buffer.from(secret.data?.password ?? '', 'base64').toString('utf8');
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  /** Whether the broker still keeps the binding's response Secret. */
  async function responseSecretExists(instanceId: string, bindingId: string): Promise<boolean> {
    try {
      await master!.core.readNamespacedSecret({
        namespace: `sf-${instanceId}`,
        name: bindingSecretName(resourceName(bindingId)),
      });
      return true;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return false;
      throw err;
    }
  }

  beforeAll(async () => {
    operator = await startOperator();
    system = await startProcess('all', await systemSettings());
    osb = osbClient(system.url);
    const installed = await installCatalog('examples/mustache');
    const mustache = installed.find(
      (o) => o.kind === 'SFPlan' && (o as SFPlan).spec.id === PLAIN_PLAN_ID,
    ) as SFPlan;
    // The rotating plan's status template answers metadata of its own too: an expiry far off and a key of its own.
    const withTemplateMetadata = mustache.spec.templates.map((t) =>
      t.action === 'status'
        ? {
            ...t,
            content: t.content!.replace(
              `response: '{"credentials":`,
              `response: '{"metadata":{"expires_at":"2099-01-01T00:00:00.0Z","tier":"gold"},"credentials":`,
            ),
          }
        : t,
    );
    expect(withTemplateMetadata).not.toEqual(mustache.spec.templates);
    const copy = (id: string, name: string, fields: Partial<SFPlan['spec']>) =>
      applyObject(master!, {
        apiVersion: mustache.apiVersion,
        kind: mustache.kind,
        metadata: { name: id, namespace: mustache.metadata.namespace },
        spec: { ...mustache.spec, id, name: `${mustache.spec.name}-${name}`, ...fields },
      });
    await copy(ROTATING_PLAN_ID, 'rotating', {
      templates: withTemplateMetadata,
      bindingRotatable: true,
      bindingLifetime: { expiresAfter: '30d', renewBefore: '168h' },
    });
    await copy(SHORT_PLAN_ID, 'short-lived', {
      bindingRotatable: true,
      bindingLifetime: { expiresAfter: '2s' },
    });
    await eventually('the copied plans in the catalog', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
      const ids = services.flatMap((s) => s.plans.map((p) => p.id));
      return ids.includes(ROTATING_PLAN_ID) && ids.includes(SHORT_PLAN_ID) ? true : undefined;
    });
  });
  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
  });

  test('the catalog says binding_rotatable for the rotatable plans only', async () => {
    const services = (await osb('GET', '/v2/catalog')).body.services as {
      id: string;
      plans: { id: string; binding_rotatable?: boolean }[];
    }[];
    const plans = services.find((s) => s.id === SERVICE_ID)!.plans;
    const rotatable = (id: string) => plans.find((p) => p.id === id)?.binding_rotatable;
    expect([rotatable(ROTATING_PLAN_ID), rotatable(SHORT_PLAN_ID), rotatable(PLAIN_PLAN_ID)]).toEqual([
      true,
      true,
      undefined,
    ]);
  });

  test('a rotation on a plan that is not rotatable: 400 before anything is looked at', async () => {
    const res = await bind(randomUUID(), randomUUID(), PLAIN_PLAN_ID, {
      predecessor_binding_id: randomUUID(),
    });
    expect([res.status, res.body]).toEqual([
      400,
      {
        error: 'BindingRotationNotSupported',
        description: 'Plan small-mustache is not binding_rotatable; predecessor_binding_id cannot be used.',
      },
    ]);
  });

  test('bind, rotate, unbind the predecessor: both credentials work until then, the successor’s after', async () => {
    const [instanceId, otherInstanceId] = await Promise.all([
      provision(ROTATING_PLAN_ID),
      provision(SHORT_PLAN_ID),
    ]);
    const first = randomUUID();
    const second = randomUUID();

    // GIVEN a binding of a plan with a 30-day lifetime renewed 168h ahead
    const before = Date.now();
    const bound = await bind(instanceId, first, ROTATING_PLAN_ID, { parameters: { note: 'kept' } });
    const after = Date.now();
    expect(bound.status).toBe(201);
    const metadata = bound.body.metadata as { expires_at: string; renew_before: string };
    // THEN expires_at is 30 days after the binding's creation, renew_before 168h ahead of it, in UTC,
    // over the status template's expires_at, whose other metadata stays
    expect(Object.keys(metadata).sort()).toEqual(['expires_at', 'renew_before', 'tier']);
    expect((metadata as unknown as { tier: string }).tier).toBe('gold');
    expect(metadata.expires_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const expiresAt = Date.parse(metadata.expires_at);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 30 * DAY);
    expect(expiresAt).toBeLessThanOrEqual(after + 30 * DAY);
    expect(expiresAt - Date.parse(metadata.renew_before)).toBe(7 * DAY);
    // AND every later answer says the same: a repeated bind, GET binding
    const repeated = await bind(instanceId, first, ROTATING_PLAN_ID, { parameters: { note: 'kept' } });
    expect([repeated.status, repeated.body.metadata]).toEqual([200, metadata]);
    const fetched = await osb('GET', bindingPath(instanceId, first));
    expect([fetched.status, fetched.body.metadata]).toEqual([200, metadata]);
    const firstCredentials = bound.body.credentials as Record<string, string>;

    // WHEN the platform names predecessors that cannot be rotated THEN 400, and nothing is made
    const refusals = [
      [randomUUID(), 'names no binding of this service instance.'],
      [
        await (async () => {
          const foreign = randomUUID();
          expect((await bind(otherInstanceId, foreign, SHORT_PLAN_ID)).status).toBe(201);
          return foreign;
        })(),
        'names a binding of another service instance; only a binding of the same service instance can be rotated.',
      ],
    ] as const;
    for (const [predecessor, why] of refusals) {
      const refused = await bind(instanceId, randomUUID(), ROTATING_PLAN_ID, {
        predecessor_binding_id: predecessor,
      });
      expect([refused.status, refused.body]).toEqual([
        400,
        { error: 'InvalidPredecessorBinding', description: `predecessor_binding_id ${predecessor} ${why}` },
      ]);
    }
    expect(await users(instanceId)).toEqual([first, 'main'].sort());

    // WHEN it rotates the binding (without parameters: the successor takes over the predecessor's)
    const rotated = await bind(instanceId, second, ROTATING_PLAN_ID, { predecessor_binding_id: first });
    expect(rotated.status).toBe(201);
    const secondCredentials = rotated.body.credentials as Record<string, string>;
    // THEN the successor has credentials of its own, with a lifetime of its own
    expect(secondCredentials.username).toBe(second.replace(/-/g, '_'));
    expect(secondCredentials.password).not.toBe(firstCredentials.password);
    const secondMetadata = rotated.body.metadata as { expires_at: string; renew_before: string };
    expect(Date.parse(secondMetadata.expires_at)).toBeGreaterThanOrEqual(expiresAt);
    // AND both bindings' credentials exist and work: users of the database, with the passwords answered
    expect(await users(instanceId)).toEqual([first, second, 'main'].sort());
    expect(await operatorPassword(instanceId, first)).toBe(firstCredentials.password);
    expect(await operatorPassword(instanceId, second)).toBe(secondCredentials.password);
    expect((await osb('GET', bindingPath(instanceId, first))).body.credentials).toEqual(firstCredentials);
    expect((await osb('GET', bindingPath(instanceId, second))).body).toMatchObject({
      credentials: secondCredentials,
      metadata: secondMetadata,
      parameters: { note: 'kept' },
    });
    // AND kubectl shows the lineage on the successor's record
    const record = await getRecord<SFServiceBinding>(
      master!,
      SFSERVICEBINDING,
      `sf-${instanceId}`,
      resourceName(second),
    );
    expect(record?.spec).toMatchObject({
      predecessorBindingId: first,
      expiresAt: secondMetadata.expires_at,
      renewBefore: secondMetadata.renew_before,
    });
    expect(record?.metadata.labels?.[LABELS.predecessorBindingId]).toBe(first);
    // AND the same rotation again is a repeat (200, the same credentials); another predecessor for its id, 409
    const again = await bind(instanceId, second, ROTATING_PLAN_ID, { predecessor_binding_id: first });
    expect([again.status, again.body.credentials]).toEqual([200, secondCredentials]);
    expect(
      (await bind(instanceId, second, ROTATING_PLAN_ID, { predecessor_binding_id: randomUUID() })).status,
    ).toBe(409);

    // WHEN the predecessor is unbound
    expect((await unbind(instanceId, first, ROTATING_PLAN_ID)).status).toBe(200);
    // THEN its credentials are gone and the successor's remain
    expect(await users(instanceId)).toEqual([second, 'main'].sort());
    expect(await responseSecretExists(instanceId, first)).toBe(false);
    expect(await responseSecretExists(instanceId, second)).toBe(true);
    await eventually('the predecessor’s credentials Secret to be gone', async () =>
      (await operatorPassword(instanceId, first)) === undefined ? true : undefined,
    );
    expect(await operatorPassword(instanceId, second)).toBe(secondCredentials.password);
    expect((await osb('GET', bindingPath(instanceId, first))).status).toBe(404);
    expect((await osb('GET', bindingPath(instanceId, second))).body).toMatchObject({
      credentials: secondCredentials,
      metadata: secondMetadata,
    });
    // AND the rotation repeated now is still a repeat, though its predecessor is gone
    expect((await bind(instanceId, second, ROTATING_PLAN_ID, { predecessor_binding_id: first })).status).toBe(
      200,
    );
    // AND a rotation of the unbound predecessor is refused
    const ofGone = await bind(instanceId, randomUUID(), ROTATING_PLAN_ID, { predecessor_binding_id: first });
    expect([ofGone.status, ofGone.body.error]).toEqual([400, 'InvalidPredecessorBinding']);
    // AND the successor may itself be rotated
    const third = randomUUID();
    const chained = await bind(instanceId, third, ROTATING_PLAN_ID, { predecessor_binding_id: second });
    expect(chained.status).toBe(201);
    expect(await users(instanceId)).toEqual([second, third, 'main'].sort());

    // An expired binding cannot be rotated: the short-lived plan's binding, once its expires_at passed
    const shortLived = randomUUID();
    const short = await bind(otherInstanceId, shortLived, SHORT_PLAN_ID);
    expect(short.status).toBe(201);
    const shortMetadata = short.body.metadata as Record<string, string>;
    expect(Object.keys(shortMetadata)).toEqual(['expires_at']);
    await eventually('the short-lived binding to expire', async () =>
      Date.now() > Date.parse(shortMetadata.expires_at!) ? true : undefined,
    );
    const expired = await bind(otherInstanceId, randomUUID(), SHORT_PLAN_ID, {
      predecessor_binding_id: shortLived,
    });
    expect([expired.status, expired.body]).toEqual([
      400,
      {
        error: 'InvalidPredecessorBinding',
        description: `predecessor_binding_id ${shortLived} names a binding that expired at ${shortMetadata.expires_at}; an expired binding cannot be rotated.`,
      },
    ]);
    // ... and is still served as it was until it is unbound
    expect((await osb('GET', bindingPath(otherInstanceId, shortLived))).body.metadata).toEqual(shortMetadata);
  });
});
