/**
 * A bind whose binding record is there already, on the real servers: the record its last, failed
 * attempt left is taken as it is (the step creates a record only when there is none), and the
 * bind sent again identically completes on it: one record, its status the new attempt's.
 */
import { randomUUID } from 'node:crypto';
import { installCatalog } from '../../dev/catalog.js';
import { getRecord, listRecords } from '../../src/kube/custom-objects.js';
import { applyObject, ensureNamespace } from '../../src/kube/objects.js';
import { LABELS, labelValue, resourceName } from '../../src/resources/names.js';
import {
  SFPLAN,
  SFSERVICEBINDING,
  type KubeObject,
  type SFPlan,
  type SFServiceBinding,
} from '../../src/resources/types.js';
import { clusters, eventually, unique } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { startOperator, startProcess, systemSettings, type SystemProcess } from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';

describe('a bind whose record its last attempt left', () => {
  const [master] = clusters();
  const registry = unique('bindrec');
  const planId = randomUUID();
  let example: SFPlan;
  let landscape: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;

  /** The example plan under another id, its bind template `bind` when given. */
  const plan = (bind?: string) =>
    applyObject(master!, {
      apiVersion: SFPLAN.apiVersion,
      kind: SFPLAN.kind,
      metadata: { name: planId, namespace: registry },
      spec: {
        ...example.spec,
        id: planId,
        name: 'binds-closed-for-now',
        templates: example.spec.templates.map((t) =>
          t.action === 'bind' && bind ? { ...t, content: bind } : t,
        ),
      },
    } as KubeObject);

  beforeAll(async () => {
    await ensureNamespace(master!, registry);
    const installed = await installCatalog(master!, registry, ['examples/postgresql']);
    example = installed.find((o) => o.kind === SFPLAN.kind) as SFPlan;
    await plan('{{ fail "binds are closed for now" }}');
    operator = await startOperator();
    landscape = await startProcess('all', await systemSettings({ INTEROP_NAMESPACE: registry }));
    osb = osbClient(landscape.url);
    await eventually('the plan in the catalog', async () =>
      JSON.stringify((await osb('GET', '/v2/catalog')).body).includes(planId) ? true : undefined,
    );
  }, 120_000);

  afterAll(async () => {
    await landscape?.stop();
    await operator?.stop();
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  test('the same bind again completes on the record the failed one left', async () => {
    // GIVEN an instance, and a bind of it that failed, leaving its record
    const id = randomUUID();
    const instancePath = `/v2/service_instances/${id}`;
    const provisioned = await osb(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, planId, { foo: 'bar' }),
    );
    expect(provisioned.status).toBe(202);
    expect((await untilSettled(osb, `${instancePath}/last_operation`, 120_000)).body).toMatchObject({
      state: 'succeeded',
    });
    const bindingId = randomUUID();
    const bindingPath = `${instancePath}/service_bindings/${bindingId}`;
    const body = { service_id: SERVICE_ID, plan_id: planId };
    const failed = await osb('PUT', bindingPath, body);
    expect([failed.status, failed.body.error]).toEqual([500, 'OperationFailed']);
    expect(failed.body.description).toContain('binds are closed for now');
    const record = () =>
      getRecord<SFServiceBinding>(master!, SFSERVICEBINDING, `sf-${id}`, resourceName(bindingId));
    const left = await record();
    expect(left?.status).toMatchObject({ state: 'failed', operation: 'bind' });

    // WHEN binds open again and the platform sends the same bind
    await plan();
    const bound = await eventually(
      'the bind to complete',
      async () => {
        const res = await osb('PUT', bindingPath, body);
        return res.status === 201 || res.status === 200 ? res : undefined;
      },
      60_000,
    );

    // THEN it completes on the record that was there: one record, the new attempt's status
    expect(bound.status).toBe(201);
    expect(bound.body).toMatchObject({ credentials: expect.any(Object) });
    const now = await record();
    expect(now?.metadata.uid).toBe(left?.metadata.uid);
    expect(now?.status).toMatchObject({ state: 'succeeded', operation: 'bind' });
    const records = await listRecords(
      master!,
      SFSERVICEBINDING,
      `sf-${id}`,
      `${LABELS.bindingId}=${labelValue(bindingId)}`,
    );
    expect(records).toHaveLength(1);
  }, 180_000);
});
