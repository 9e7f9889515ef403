/**
 * The OSB rules of time limits and failures, against the real broker, Temporal and apiservers: an
 * operator that does not finish within the plan's maximum_polling_duration, a synchronous request
 * repeated while it runs or that runs out of time, failures classified and described, a step that
 * keeps failing; and the catalog following plan changes. On a broker of its own beside
 * osb-rules.test.ts's (test/support/rules-broker.ts).
 */
import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import {
  SFPLAN,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { getRecord, listRecords, patchRecord } from '../../src/kube/custom-objects.js';
import { applyObject } from '../../src/kube/objects.js';
import { LABELS, instanceWorkflowId, labelValue } from '../../src/resources/names.js';
import { freePort } from '../../dev/local/processes.js';
import { EncryptionCodec, parsePayloadKeys } from '../../src/temporal/codec.js';
import { conditionOf, waitableCondition } from '../support/conditions.js';
import { clusters, environment, eventually, temporalClient, untilNamespaceGone } from '../support/env.js';
import { osbClient, provisionBody } from '../support/osb.js';
import { PLANS, SERVICE, pgTemplate, plan, rulesBroker } from '../support/rules-broker.js';
import { startProcess } from '../support/system.js';

describe('OSB rules on the real broker', () => {
  const rules = rulesBroker();
  const { osb, until, deprovision, holdNamespace, releaseNamespace } = rules;
  const [master] = clusters();

  describe('operations', () => {
    test('a synchronous provision repeated while it runs waits for the same operation; a failed synchronous update answers 500 and changes nothing', async () => {
      const id = randomUUID();
      const path = `/v2/service_instances/${id}`;
      const body = provisionBody(SERVICE, PLANS.teamSync, { team: 'blue' });
      const first = osb('PUT', path, body);
      await new Promise((r) => setTimeout(r, 300));
      const repeat = await osb('PUT', path, body);
      const answers = [(await first).status, repeat.status].sort();
      expect(answers).toEqual([200, 201]);
      expect((await osb('GET', `${path}/last_operation`)).body).toMatchObject({ state: 'succeeded' });

      const failing = await osb('PATCH', path, { service_id: SERVICE, parameters: { team: 'fail' } });
      expect([failing.status, failing.body.error]).toEqual([500, 'OperationFailed']);
      expect(failing.body.description).toMatch(/rolled back/);
      expect((await osb('GET', path)).body).toMatchObject({
        plan_id: PLANS.teamSync,
        parameters: { team: 'blue' },
      });

      // a binding: the status template's response, endpoints and metadata as the platform gets them
      const bindingPath = `${path}/service_bindings/${randomUUID()}`;
      const bindBody = (renew: string) => ({
        service_id: SERVICE,
        plan_id: PLANS.teamSync,
        parameters: { renew },
      });
      const bound = await osb('PUT', bindingPath, bindBody('early'));
      expect([bound.status, bound.body]).toEqual([
        201,
        {
          credentials: { user: expect.any(String) },
          endpoints: [{ host: 'db.example', ports: ['5432'], protocol: 'tcp' }],
          metadata: { expires_at: '2030-01-31T00:00:00.0Z', renew_before: '2030-01-01T00:00:00.0Z' },
        },
      ]);
      expect((await osb('GET', bindingPath)).body).toMatchObject({ metadata: bound.body.metadata });
      // a response that breaks the OSB rules fails the bind, naming the field
      const late = await osb('PUT', `${path}/service_bindings/${randomUUID()}`, bindBody('late'));
      expect([late.status, late.body.error, late.body.description]).toEqual([
        500,
        'OperationFailed',
        'The bind response the status template rendered has a metadata.renew_before after its metadata.expires_at; check the plan’s status template',
      ]);

      const del = `${path}?service_id=${SERVICE}&plan_id=${PLANS.teamSync}`;
      expect((await osb('DELETE', del)).status).toBe(200);
      expect((await osb('DELETE', del)).status).toBe(410);
    });

    test.each([
      [PLANS.failing, /fail/],
      [
        PLANS.broken,
        /The provision template of plan rules-plan-broken failed: template: provision:2:3: executing "provision" at <fail "no such size">: error calling fail: no such size/,
      ],
      [PLANS.invalid, /applying Service .*svc in cluster 1: .*Unsupported value: "NotAType"/],
    ])('a provision with plan %s fails with a human description', async (planId, description) => {
      const id = randomUUID();
      const path = `/v2/service_instances/${id}`;
      expect(
        (await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE, planId))).status,
      ).toBe(202);
      const result = await until(`${path}/last_operation`);
      expect(result.state).toBe('failed');
      expect(String(result.description)).toMatch(description);
      expect(String(result.description)).not.toMatch(/\n\s+at /);
      const record = await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, `sf-${id}`, id);
      expect(record?.status).toMatchObject({ state: 'failed' });
      // kstatus: Stalled with the description, not Ready, for the generation it describes
      expect(record?.status?.observedGeneration).toBe(record?.metadata.generation);
      expect(conditionOf(record, 'Stalled')).toMatchObject({
        status: 'True',
        reason: 'ProvisionFailed',
        message: result.description,
      });
      expect(waitableCondition(record, 'Ready')).toBe('False');
      expect(conditionOf(record, 'Reconciling')?.status).toBe('False');
      // nothing to bind to, as GET says; not a ConcurrencyError, which would have the platform retry
      expect((await osb('GET', path)).status).toBe(404);
      const bind = await osb('PUT', `${path}/service_bindings/${randomUUID()}`, {
        service_id: SERVICE,
        plan_id: planId,
      });
      expect([bind.status, bind.body.description]).toEqual([
        404,
        'The service instance failed to provision; it cannot be bound.',
      ]);
      // orphan mitigation: the platform deletes what failed, and that works
      await deprovision(path, planId);
    });

    test('an operator that does not answer within the plan’s maximum_polling_duration fails the provision at the deadline', async () => {
      const id = randomUUID();
      const path = `/v2/service_instances/${id}`;
      const started = Date.now();
      expect(
        (await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE, PLANS.deadline))).status,
      ).toBe(202);
      const result = await until(`${path}/last_operation`);
      const took = Date.now() - started;
      expect(result).toEqual({
        state: 'failed',
        description: 'The operator did not report the outcome within 3 s (last: still creating)',
      });
      // the last check is at the deadline, not one backoff before it
      expect(took).toBeGreaterThanOrEqual(3000);
      const record = await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, `sf-${id}`, id);
      expect(record?.status).toMatchObject({ state: 'failed', operation: 'provision' });
      await deprovision(path, PLANS.deadline);
    });

    test('a step that keeps failing past the plan’s maximum_polling_duration fails the operation with its last failure', async () => {
      const id = randomUUID();
      const namespace = `sf-${id}`;
      const path = `/v2/service_instances/${id}`;
      await holdNamespace(namespace);
      try {
        expect(
          (await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE, PLANS.deadline)))
            .status,
        ).toBe(202);
        expect(await until(`${path}/last_operation`)).toEqual({
          state: 'failed',
          description: `Not done within 3 s: namespace ${namespace} on cluster 1 is still being deleted`,
        });
        // nothing was recorded, so there is nothing to delete
        const del = await osb(
          'DELETE',
          `${path}?service_id=${SERVICE}&plan_id=${PLANS.deadline}&accepts_incomplete=true`,
        );
        expect(del.status).toBe(410);
      } finally {
        await releaseNamespace(namespace);
      }
    });

    test('a deprovision the operator does not finish in time fails, and the instance is no longer usable', async () => {
      const id = randomUUID();
      const path = `/v2/service_instances/${id}`;
      const body = provisionBody(SERVICE, PLANS.teamQuick, { team: 'stuck' });
      expect((await osb('PUT', `${path}?accepts_incomplete=true`, body)).status).toBe(202);
      expect(await until(`${path}/last_operation`)).toMatchObject({ state: 'succeeded' });
      const query = `service_id=${SERVICE}&plan_id=${PLANS.teamQuick}&accepts_incomplete=true`;
      const deleting = await osb('DELETE', `${path}?${query}`);
      expect(deleting.status).toBe(202);
      expect(
        await until(
          `${path}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
        ),
      ).toEqual({
        state: 'failed',
        description: 'The operator did not report the outcome within 4 s',
        instance_usable: false,
      });
      // the operator lets go; deleting again finishes it
      await patchRecord(master!, SFSERVICEINSTANCE, `sf-${id}`, id, {
        spec: { parameters: { team: 'blue' } },
      });
      await deprovision(path, PLANS.teamQuick);
    });

    test('a step that keeps failing waits queued, shown in Temporal with its last failure, and the provision then succeeds', async () => {
      const id = randomUUID();
      const namespace = `sf-${id}`;
      const path = `/v2/service_instances/${id}`;
      await holdNamespace(namespace);
      expect(
        (await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE, PLANS.ok))).status,
      ).toBe(202);

      const temporal = await temporalClient();
      try {
        // Raw calls, as the Temporal UI makes them (the memo is encrypted; this client has no key).
        const pending = await eventually('the step to wait queued', async () => {
          const described = await temporal.client.workflowService.describeWorkflowExecution({
            namespace: environment().temporal.namespace,
            execution: { workflowId: instanceWorkflowId(id) },
          });
          const step = described.pendingActivities?.[0];
          return step?.lastFailure?.message ? step : undefined;
        });
        expect(pending.activityType?.name).toBe('recordInstance');
        // Its message is encrypted with the payloads; the UI reads it through the codec endpoint.
        expect(pending.lastFailure?.message).toBe('Encoded failure');
        const codec = new EncryptionCodec(parsePayloadKeys(rules.settings.payloadKeys));
        const [attributes] = await codec.decode([pending.lastFailure!.encodedAttributes!]);
        expect(defaultPayloadConverter.fromPayload(attributes!)).toMatchObject({
          message: `namespace ${namespace} on cluster 1 is still being deleted`,
        });
        expect((await osb('GET', `${path}/last_operation`)).body.state).toBe('in progress');
      } finally {
        await temporal.close();
      }

      // The holder lets go; the namespace goes, the queued step creates it anew and the provision ends.
      await releaseNamespace(namespace);
      expect(await until(`${path}/last_operation`)).toMatchObject({ state: 'succeeded' });
      await deprovision(path, PLANS.ok);
    }, 120_000);
  });

  test('a synchronous request that runs out of time answers 504 and leaves nothing behind', async () => {
    // A second broker beside the first, with the same worker and keys, that waits 2 s for a synchronous request.
    const quick = await startProcess('broker', {
      ...rules.settings,
      port: await freePort(),
      extraEnv: { INTEROP_SYNC_TIMEOUT_SECONDS: '2' },
    });
    try {
      const client = osbClient(quick.url);
      const id = randomUUID();
      const res = await client('PUT', `/v2/service_instances/${id}`, provisionBody(SERVICE, PLANS.never));
      expect(res.status).toBe(504);
      expect(res.body.description).toBe('The provision did not finish within 2 s and was rolled back.');
      await untilNamespaceGone(master!, `sf-${id}`);
      expect(await client('GET', `/v2/service_instances/${id}/last_operation`)).toMatchObject({
        body: { state: 'failed', description: 'The provision was cancelled and rolled back.' },
      });

      // an update that runs out of time puts the instance back as it was
      const updated = `/v2/service_instances/${randomUUID()}`;
      expect(
        (await osb('PUT', updated, provisionBody(SERVICE, PLANS.teamSync, { team: 'blue' }))).status,
      ).toBe(201);
      const hanging = await client('PATCH', updated, { service_id: SERVICE, parameters: { team: 'hang' } });
      expect([hanging.status, hanging.body.description]).toEqual([
        504,
        'The update did not finish within 2 s and was rolled back.',
      ]);
      expect(await until(`${updated}/last_operation`)).toEqual({
        state: 'failed',
        description: 'The update was cancelled and rolled back.',
        instance_usable: true,
        update_repeatable: true,
      });
      expect((await osb('GET', updated)).body).toMatchObject({ parameters: { team: 'blue' } });

      // an unbind and a deprovision that run out of time stop where they are, and say so
      const stopped = (type: string) =>
        `The ${type} was stopped before it finished; send the request again to finish it.`;
      const bindingPath = `${updated}/service_bindings/${randomUUID()}`;
      const bindBody = { service_id: SERVICE, plan_id: PLANS.teamSync, parameters: { renew: 'hang' } };
      expect((await osb('PUT', bindingPath, bindBody)).status).toBe(201);
      const unbinding = await client(
        'DELETE',
        `${bindingPath}?service_id=${SERVICE}&plan_id=${PLANS.teamSync}`,
      );
      expect([unbinding.status, unbinding.body.description]).toEqual([
        504,
        'The unbind did not finish within 2 s and was stopped; send the request again to finish it.',
      ]);
      expect(await until(`${bindingPath}/last_operation`)).toEqual({
        state: 'failed',
        description: stopped('unbind'),
      });

      // a bind that runs out of time is rolled back: no binding, no credentials, nothing it applied
      const lateId = randomUUID();
      const latePath = `${updated}/service_bindings/${lateId}`;
      const late = await client('PUT', latePath, { ...bindBody, parameters: { renew: 'never' } });
      expect([late.status, late.body.description]).toEqual([
        504,
        'The bind did not finish within 2 s and was rolled back.',
      ]);
      expect(await until(`${latePath}/last_operation`)).toEqual({
        state: 'failed',
        description: 'The bind was cancelled and rolled back.',
      });
      const updatedNamespace = `sf-${updated.split('/').pop()!}`;
      await eventually('the rolled-back binding to be gone', async () => {
        const records = await listRecords(
          master!,
          SFSERVICEBINDING,
          updatedNamespace,
          `${LABELS.bindingId}=${labelValue(lateId)}`,
        );
        const secrets = await master!.core.listNamespacedSecret({
          namespace: updatedNamespace,
          labelSelector: `${LABELS.bindingId}=${labelValue(lateId)}`,
        });
        return records.length === 0 && secrets.items.length === 0 ? true : undefined;
      });
      expect((await osb('GET', latePath)).status).toBe(404);
      // and the platform's next bind of the same id is a new one, which completes
      const again = await client('PUT', latePath, bindBody);
      expect(again.status).toBe(201);
      expect(again.body).toMatchObject({ credentials: { user: expect.any(String) } });

      const stuck = `/v2/service_instances/${randomUUID()}`;
      const stuckId = stuck.split('/').pop()!;
      expect(
        (await osb('PUT', stuck, provisionBody(SERVICE, PLANS.teamSync, { team: 'stuck' }))).status,
      ).toBe(201);
      const deleting = await client('DELETE', `${stuck}?service_id=${SERVICE}&plan_id=${PLANS.teamSync}`);
      expect([deleting.status, deleting.body.description]).toEqual([
        504,
        'The deprovision did not finish within 2 s and was stopped; send the request again to finish it.',
      ]);
      expect(await until(`${stuck}/last_operation`)).toMatchObject({
        state: 'failed',
        description: stopped('deprovision'),
      });
      const record = await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, `sf-${stuckId}`, stuckId);
      expect(record?.status).toMatchObject({ state: 'failed', operation: 'deprovision' });
      // the operator lets go; deleting again finishes it
      await patchRecord(master!, SFSERVICEINSTANCE, `sf-${stuckId}`, stuckId, {
        spec: { parameters: { team: 'blue' } },
      });
      expect((await osb('DELETE', `${stuck}?service_id=${SERVICE}&plan_id=${PLANS.teamSync}`)).status).toBe(
        200,
      );
      expect((await osb('DELETE', `${updated}?service_id=${SERVICE}&plan_id=${PLANS.teamSync}`)).status).toBe(
        200,
      );
    } finally {
      await quick.stop();
    }
  });

  test('a change of an SFPlan shows in the next catalog call; a plan that breaks a catalog rule does not show', async () => {
    // a second plan named like PLANS.ok in the same service: platforms refuse such a catalog
    const twin = plan('rules-plan-twin', {}, pgTemplate('ok'));
    await applyObject(master!, { ...twin, spec: { ...twin.spec, name: PLANS.ok } });
    await patchRecord(master!, SFPLAN, environment().namespace, PLANS.ok, {
      spec: { description: 'changed just now' },
    });
    await eventually(
      'the changed description',
      async () => {
        const services = (await osb('GET', '/v2/catalog')).body.services as {
          id: string;
          plans: { id: string; description: string }[];
        }[];
        const p = services.find((s) => s.id === SERVICE)?.plans.find((x) => x.id === PLANS.ok);
        return p?.description === 'changed just now' ? true : undefined;
      },
      5000,
    );
    const services = (await osb('GET', '/v2/catalog')).body.services as {
      id: string;
      plans: { id: string }[];
    }[];
    const ids = services.find((s) => s.id === SERVICE)!.plans.map((p) => p.id);
    expect(ids).toHaveLength(Object.keys(PLANS).length);
    expect(ids).not.toContain('rules-plan-twin');
    await master!.custom.deleteNamespacedCustomObject({
      group: SFPLAN.group,
      version: SFPLAN.version,
      plural: SFPLAN.plural,
      namespace: environment().namespace,
      name: 'rules-plan-twin',
    });
  });
});
