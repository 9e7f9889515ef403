/**
 * The rule between an instance and its bindings, on the real servers: a bind sent while the
 * instance is being deprovisioned or updated, or an update or deprovision sent while a bind of the
 * instance runs, is refused with 422 `ConcurrencyError`; of two such requests racing, exactly one
 * runs, whichever comes first, and what it leaves behind is whole.
 */
import { randomUUID } from 'node:crypto';
import { installCatalog } from '../../dev/catalog.js';
import { getRecord } from '../../src/kube/custom-objects.js';
import { ensureNamespace } from '../../src/kube/objects.js';
import { ANNOTATIONS, resourceName } from '../../src/resources/names.js';
import {
  SFPLAN,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFPlan,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { clusters, eventually, unique } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient, type OsbResponse } from '../support/osb.js';
import { startOperator, startProcess, systemSettings, type SystemProcess } from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';

/** How many instances race a bind against their own deprovision, and as many against an update. */
const RACES = 6;

describe('operations on an instance and on its bindings exclude each other', () => {
  const [master] = clusters();
  const registry = unique('race');
  let planId: string;
  let landscape: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;

  beforeAll(async () => {
    await ensureNamespace(master!, registry);
    const installed = await installCatalog(master!, registry, ['examples/postgresql']);
    planId = (installed.find((o) => o.kind === SFPLAN.kind) as SFPlan).spec.id;
    operator = await startOperator();
    landscape = await startProcess('all', await systemSettings({ INTEROP_NAMESPACE: registry }));
    osb = osbClient(landscape.url);
    await eventually('the catalog', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
      return services?.some((s) => s.plans.some((p) => p.id === planId)) ? true : undefined;
    });
  }, 120_000);

  afterAll(async () => {
    await landscape?.stop();
    await operator?.stop();
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  const instancePath = (id: string) => `/v2/service_instances/${id}`;
  const bindingPath = (id: string, bindingId: string) => `${instancePath(id)}/service_bindings/${bindingId}`;
  const bind = (id: string, bindingId: string) =>
    osb('PUT', bindingPath(id, bindingId), { service_id: SERVICE_ID, plan_id: planId });
  const deprovision = (id: string) =>
    osb('DELETE', `${instancePath(id)}?service_id=${SERVICE_ID}&plan_id=${planId}&accepts_incomplete=true`);
  const update = (id: string) =>
    osb('PATCH', `${instancePath(id)}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      parameters: { foo: randomUUID() },
    });
  const settled = async (id: string, accepted: OsbResponse) =>
    (
      await untilSettled(
        osb,
        `${instancePath(id)}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
        120_000,
      )
    ).body;
  const bindingRecord = (id: string, bindingId: string) =>
    getRecord<SFServiceBinding>(master!, SFSERVICEBINDING, `sf-${id}`, resourceName(bindingId));
  const instanceRecord = (id: string) =>
    getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, `sf-${id}`, resourceName(id));
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  async function provisioned(): Promise<string> {
    const id = randomUUID();
    const accepted = await osb(
      'PUT',
      `${instancePath(id)}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, planId, { foo: 'bar' }),
    );
    expect(accepted.status).toBe(202);
    expect(await settled(id, accepted)).toMatchObject({ state: 'succeeded' });
    return id;
  }

  /** Sends both requests, the second `lagMs` after the first (either may be the bind). */
  async function race(first: () => Promise<OsbResponse>, second: () => Promise<OsbResponse>, lagMs: number) {
    return Promise.all([first(), pause(lagMs).then(second)]);
  }

  const refused = (res: OsbResponse) => res.status === 422 && res.body.error === 'ConcurrencyError';

  test('a bind sent right after a deprovision is refused with 422, not run into the deprovision', async () => {
    const id = await provisioned();
    const deleting = await deprovision(id);
    expect(deleting.status).toBe(202);
    const bound = await bind(id, randomUUID());
    expect([bound.status, bound.body.error]).toEqual([422, 'ConcurrencyError']);
    expect(bound.body.description).toEqual(expect.any(String));
    expect(await settled(id, deleting)).toMatchObject({ state: 'succeeded' });
  }, 180_000);

  test('a deprovision or an update sent while a bind runs is refused with 422', async () => {
    const id = await provisioned();
    const bindingId = randomUUID();
    const binding = bind(id, bindingId);
    // the bind's claim is on the record: the instance's own operations wait for it
    await eventually('the bind’s claim', async () =>
      (await instanceRecord(id))?.metadata.annotations?.[ANNOTATIONS.operationClaims]?.includes(bindingId)
        ? true
        : undefined,
    );
    const [deleting, updating] = await Promise.all([deprovision(id), update(id)]);
    expect(refused(deleting)).toBe(true);
    expect(refused(updating)).toBe(true);
    expect((await binding).status).toBe(201);
    // once the bind ended, both are accepted again
    const updated = await update(id);
    expect(updated.status).toBe(202);
    expect(await settled(id, updated)).toMatchObject({ state: 'succeeded' });
  }, 180_000);

  test.each([
    ['a deprovision', deprovision],
    ['an update', update],
  ])(
    '%s racing a bind, many times: exactly one of them runs, and it completes',
    async (_name, other) => {
      const ids = await Promise.all(Array.from({ length: RACES }, provisioned));
      const outcomes = await Promise.all(
        ids.map(async (id, i) => {
          const bindingId = randomUUID();
          // alternate which request leaves first, a few milliseconds apart
          const lag = (i * 7) % 25;
          const [operation, bound] =
            i % 2 === 0
              ? await race(
                  () => other(id),
                  () => bind(id, bindingId),
                  lag,
                )
              : await race(
                  () => bind(id, bindingId),
                  () => other(id),
                  lag,
                ).then(([b, o]) => [o, b] as const);
          return { id, bindingId, operation, bound };
        }),
      );
      for (const { id, bindingId, operation, bound } of outcomes) {
        // never a 5xx, never both, never neither
        expect([202, 422]).toContain(operation.status);
        expect([201, 422]).toContain(bound.status);
        expect([operation.status, bound.status]).not.toEqual([202, 201]);
        expect([operation.status, bound.status]).not.toEqual([422, 422]);
        for (const res of [operation, bound]) if (res.status === 422) expect(refused(res)).toBe(true);
        if (operation.status === 202) {
          expect(await settled(id, operation)).toMatchObject({ state: 'succeeded' });
          expect(await bindingRecord(id, bindingId)).toBeUndefined();
        } else {
          expect((await bindingRecord(id, bindingId))?.status?.state).toBe('succeeded');
        }
      }
    },
    300_000,
  );
});
