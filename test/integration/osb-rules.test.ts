/**
 * The OSB rules, against the real broker, Temporal and apiservers: authentication, versions,
 * error bodies, idempotency and concurrency, and updates. osb-rules-limits.test.ts has the rules of
 * time limits, failures and the catalog, on a broker of its own beside this one
 * (test/support/rules-broker.ts): the two run side by side.
 */
import { randomUUID } from 'node:crypto';
import { SFSERVICEINSTANCE, type SFServiceInstance } from '../../src/resources/types.js';
import { getRecord } from '../../src/kube/custom-objects.js';
import { ANNOTATIONS } from '../../src/resources/names.js';
import { clusters, eventually } from '../support/env.js';
import { osbClient, provisionBody } from '../support/osb.js';
import { PLANS, SERVICE, rulesBroker } from '../support/rules-broker.js';

describe('OSB rules on the real broker', () => {
  const rules = rulesBroker();
  const { osb, until, deprovision } = rules;
  const [master] = clusters();

  describe('the HTTP contract', () => {
    test('authentication: 401 with a challenge, never a body of secrets', async () => {
      const res = await fetch(`${rules.system.url}/v2/catalog`, {
        headers: { 'X-Broker-API-Version': '2.17' },
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic/);
      expect(await res.json()).toMatchObject({ description: expect.any(String) });
      const wrong = await fetch(`${rules.system.url}/v2/catalog`, {
        headers: {
          'X-Broker-API-Version': '2.17',
          Authorization: `Basic ${Buffer.from('broker:nope').toString('base64')}`,
        },
      });
      expect(wrong.status).toBe(401);
      // The same paths in another case are no way around it.
      for (const path of ['/V2/catalog', `/V2/service_instances/${randomUUID()}/last_operation`]) {
        const other = await fetch(`${rules.system.url}${path}`, {
          headers: { 'X-Broker-API-Version': '2.17' },
        });
        expect([path, other.status]).toEqual([path, 401]);
        expect([path, (await osb('GET', path)).status]).toEqual([path, 404]);
      }
    });

    test.each([
      ['missing', '', 412],
      ['2.11', '2.11', 412],
      ['2.12', '2.12', 200],
    ])('X-Broker-API-Version %s: %i (412 when missing or below 2.12)', async (_, version, status) => {
      expect((await osbClient(rules.system.url, version)('GET', '/v2/catalog')).status).toBe(status);
    });

    test('unknown routes 404 and wrong methods 405, in the OSB error format', async () => {
      const missing = await osb('GET', '/v2/nothing');
      expect(missing.status).toBe(404);
      expect(missing.body).toMatchObject({ description: expect.any(String) });
      const wrong = await osb('POST', '/v2/catalog', {});
      expect(wrong.status).toBe(405);
      expect(wrong.headers.get('allow')).toMatch(/GET/);
      expect(wrong.body).toMatchObject({ error: 'MethodNotAllowed' });
    });

    test('bad bodies: malformed JSON, not an object, too large, missing ids, unknown ids, bad query', async () => {
      const path = `/v2/service_instances/${randomUUID()}?accepts_incomplete=true`;
      expect((await osb('PUT', path, '{"service_id":')).status).toBe(400);
      expect((await osb('PUT', path, '[1]')).status).toBe(400);
      expect(
        (await osb('PUT', path, { ...provisionBody(SERVICE, PLANS.ok), pad: 'x'.repeat(2 * 1024 * 1024) }))
          .status,
      ).toBe(413);
      const noPlan = await osb('PUT', path, { service_id: SERVICE });
      expect([noPlan.status, noPlan.body.description]).toEqual([400, 'plan_id is required.']);
      const unknown = await osb('PUT', path, provisionBody(SERVICE, 'no-such-plan'));
      expect(unknown.status).toBe(400);
      expect(unknown.body.description).toMatch(/no-such-plan/);
      const foreign = await osb('PUT', path, {
        ...provisionBody(SERVICE, PLANS.ok),
        service_id: '24731fb8-7b84-5f57-914f-c3d55d793dd4',
      });
      expect(foreign.status).toBe(400);
      expect(
        (
          await osb(
            'PUT',
            `/v2/service_instances/x?accepts_incomplete=maybe`,
            provisionBody(SERVICE, PLANS.ok),
          )
        ).status,
      ).toBe(400);
      const body = JSON.stringify((await osb('PUT', path, '{"service_id":')).body);
      expect(body).not.toMatch(/at .*\.js/);
    });

    test('identity headers: the request identity is echoed; an unreadable originating identity fails nothing and is recorded as unreadable', async () => {
      const res = await osb('GET', '/v2/catalog', undefined, { 'X-Broker-API-Request-Identity': 'req-123' });
      expect(res.headers.get('x-broker-api-request-identity')).toBe('req-123');
      const id = randomUUID();
      const path = `/v2/service_instances/${id}`;
      const started = await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE, PLANS.ok), {
        'X-Broker-API-Originating-Identity': 'cloudfoundry %%%',
      });
      expect(started.status).toBe(202);
      expect(await until(`${path}/last_operation`)).toMatchObject({ state: 'succeeded' });
      const record = await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, `sf-${id}`, id);
      expect(JSON.parse(record!.metadata.annotations![ANNOTATIONS.requestedBy]!)).toEqual({
        platform: 'cloudfoundry',
        unreadable: true,
      });
    });

    const unknown = `/v2/service_instances/${randomUUID()}`;
    const ids = `service_id=${SERVICE}&plan_id=${PLANS.ok}`;
    test.each([
      { request: 'last_operation', method: 'GET', path: `${unknown}/last_operation`, status: 404 },
      { request: 'fetch', method: 'GET', path: unknown, status: 404 },
      { request: 'update', method: 'PATCH', path: unknown, body: { service_id: SERVICE }, status: 404 },
      {
        request: 'bind',
        method: 'PUT',
        path: `${unknown}/service_bindings/b`,
        body: { service_id: SERVICE, plan_id: PLANS.ok },
        status: 404,
      },
      {
        request: 'deprovision',
        method: 'DELETE',
        path: `${unknown}?${ids}&accepts_incomplete=true`,
        status: 410,
      },
      { request: 'unbind', method: 'DELETE', path: `${unknown}/service_bindings/b?${ids}`, status: 410 },
    ])(
      'unknown instances and bindings: $request is $status (404 to read or change, 410 to delete)',
      async ({ method, path, body, status }) => {
        expect((await osb(method, path, body)).status).toBe(status);
      },
    );

    test('maintenance_info that is not the plan’s: 422 MaintenanceInfoConflict', async () => {
      const res = await osb('PUT', `/v2/service_instances/${randomUUID()}?accepts_incomplete=true`, {
        ...provisionBody(SERVICE, PLANS.maintained),
        maintenance_info: { version: '1.0.0' },
      });
      expect([res.status, res.body.error]).toEqual([422, 'MaintenanceInfoConflict']);
    });
  });

  describe('operations', () => {
    test('an update repeating the recorded context is accepted on a service without allow_context_updates; a changed context is refused and changes nothing', async () => {
      const id = randomUUID();
      const path = `/v2/service_instances/${id}`;
      const context = { platform: 'kubernetes', namespace: 'shop', clusterid: 'c-1' };
      const started = await osb('PUT', `${path}?accepts_incomplete=true`, {
        ...provisionBody(SERVICE, PLANS.ok),
        context,
      });
      expect(started.status).toBe(202);
      expect(await until(`${path}/last_operation`)).toMatchObject({ state: 'succeeded' });

      // as a Kubernetes service catalog sends it: the context again (keys in another order), the same plan
      const repeated = await osb('PATCH', `${path}?accepts_incomplete=true`, {
        service_id: SERVICE,
        plan_id: PLANS.ok,
        context: { clusterid: 'c-1', namespace: 'shop', platform: 'kubernetes' },
      });
      expect([200, 202]).toContain(repeated.status);
      expect(await until(`${path}/last_operation`)).toMatchObject({ state: 'succeeded' });

      const changed = await osb('PATCH', `${path}?accepts_incomplete=true`, {
        service_id: SERVICE,
        plan_id: PLANS.ok,
        context: { ...context, namespace: 'elsewhere' },
      });
      expect([changed.status, changed.body.error]).toEqual([400, 'ContextUpdateNotSupported']);
      const record = await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, `sf-${id}`, id);
      expect(record?.spec.context).toEqual(context);
      await deprovision(path, PLANS.ok);
    });

    test('one operation at a time; updates; plan change rules; audit; deprovision', async () => {
      const id = randomUUID();
      const path = `/v2/service_instances/${id}`;
      const identity = Buffer.from(JSON.stringify({ user_id: 'alice' })).toString('base64');
      const started = await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE, PLANS.ok), {
        'X-Broker-API-Originating-Identity': `cloudfoundry ${identity}`,
      });
      expect(started.status).toBe(202);
      expect(started.body.dashboard_url).toBe(`https://dashboard.example/${id}`);
      // while it runs: updates and deletes are a ConcurrencyError, GET is 404
      const patch = await osb('PATCH', `${path}?accepts_incomplete=true`, {
        service_id: SERVICE,
        parameters: { size: 'm' },
      });
      expect([patch.status, patch.body.error, patch.body.description]).toEqual([
        422,
        'ConcurrencyError',
        expect.any(String),
      ]);
      const del = await osb(
        'DELETE',
        `${path}?service_id=${SERVICE}&plan_id=${PLANS.ok}&accepts_incomplete=true`,
      );
      expect([del.status, del.body.error]).toEqual([422, 'ConcurrencyError']);
      expect((await osb('GET', path)).status).toBe(404);
      const last = await osb('GET', `${path}/last_operation`);
      expect(last.body.state).toBe('in progress');
      expect(last.headers.get('retry-after')).toBe('2');
      expect(await until(`${path}/last_operation`)).toMatchObject({ state: 'succeeded' });

      const record = await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, `sf-${id}`, id);
      expect(JSON.parse(record!.metadata.annotations![ANNOTATIONS.requestedBy]!)).toEqual({
        platform: 'cloudfoundry',
        identity: { user_id: 'alice' },
      });

      // a plan change the target plan forbids: 400
      const forbidden = await osb('PATCH', `${path}?accepts_incomplete=true`, {
        service_id: SERVICE,
        plan_id: PLANS.other,
      });
      expect(forbidden.status).toBe(400);
      expect(forbidden.body.description).toMatch(/cannot be updated/);
      // an update with new parameters re-renders the resources
      const update = await osb('PATCH', `${path}?accepts_incomplete=true`, {
        service_id: SERVICE,
        parameters: { size: 'm' },
      });
      expect(update.status).toBe(202);
      expect(String(update.body.operation)).toMatch(/^update:/);
      expect(
        await until(`${path}/last_operation?operation=${encodeURIComponent(String(update.body.operation))}`),
      ).toMatchObject({
        state: 'succeeded',
      });
      const pg = (await master!.custom.getNamespacedCustomObject({
        group: 'acid.zalan.do',
        version: 'v1',
        plural: 'postgresqls',
        namespace: `sf-${id}`,
        name: 'db',
      })) as { spec: { size: string } };
      expect(pg.spec.size).toBe('m');
      expect((await osb('GET', path)).body).toMatchObject({ plan_id: PLANS.ok, parameters: { size: 'm' } });
      // the same update again: nothing to do, 200
      expect(
        (
          await osb('PATCH', `${path}?accepts_incomplete=true`, {
            service_id: SERVICE,
            parameters: { size: 'm' },
          })
        ).status,
      ).toBe(200);
      // the provision's operation string still answers from its own run
      expect(
        (
          await osb(
            'GET',
            `${path}/last_operation?operation=${encodeURIComponent(String(started.body.operation))}`,
          )
        ).body,
      ).toMatchObject({ state: 'succeeded' });

      // a DELETE that names a synchronous plan: the instance's own plan is asynchronous, so 422, and nothing changes
      const named = await osb('DELETE', `${path}?service_id=${SERVICE}&plan_id=${PLANS.teamSync}`);
      expect([named.status, named.body.error]).toEqual([422, 'AsyncRequired']);
      expect((await osb('GET', path)).body).toMatchObject({ plan_id: PLANS.ok, parameters: { size: 'm' } });

      const deleting = await osb(
        'DELETE',
        `${path}?service_id=${SERVICE}&plan_id=${PLANS.ok}&accepts_incomplete=true`,
      );
      expect(deleting.status).toBe(202);
      const repeat = await osb(
        'DELETE',
        `${path}?service_id=${SERVICE}&plan_id=${PLANS.ok}&accepts_incomplete=true`,
      );
      expect([repeat.status, repeat.body.operation]).toEqual([202, deleting.body.operation]);
      expect(
        await until(
          `${path}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
        ),
      ).toMatchObject({
        state: 'succeeded',
      });
    });

    const teamOf = async (id: string) =>
      (await master!.custom.getNamespacedCustomObject({
        group: 'acid.zalan.do',
        version: 'v1',
        plural: 'postgresqls',
        namespace: `sf-${id}`,
        name: 'db',
      })) as { spec: { teamId: string }; status?: { PostgresClusterStatus?: string } };

    test('a failed update changes nothing: the record and the operator’s resources are put back', async () => {
      const id = randomUUID();
      const path = `/v2/service_instances/${id}`;
      const body = provisionBody(SERVICE, PLANS.team, { team: 'blue' });
      expect((await osb('PUT', `${path}?accepts_incomplete=true`, body)).status).toBe(202);
      expect(await until(`${path}/last_operation`)).toMatchObject({ state: 'succeeded' });

      const update = await osb('PATCH', `${path}?accepts_incomplete=true`, {
        service_id: SERVICE,
        parameters: { team: 'fail' },
      });
      expect(update.status).toBe(202);
      const result = await until(
        `${path}/last_operation?operation=${encodeURIComponent(String(update.body.operation))}`,
      );
      expect(result).toEqual({
        state: 'failed',
        description: expect.stringMatching(
          /\(rolled back: the instance keeps its previous plan and parameters\)$/,
        ),
        instance_usable: true,
        update_repeatable: true,
      });
      expect(result.description).toMatch(/team fail/i);
      expect((await osb('GET', path)).body).toMatchObject({
        plan_id: PLANS.team,
        parameters: { team: 'blue' },
      });
      await eventually('the operator to run the previous team again', async () => {
        const pg = await teamOf(id);
        return pg.spec.teamId === 'blue' && pg.status?.PostgresClusterStatus === 'Running' ? true : undefined;
      });
      // the update can be repeated with other parameters
      const again = await osb('PATCH', `${path}?accepts_incomplete=true`, {
        service_id: SERVICE,
        parameters: { team: 'green' },
      });
      expect(
        await until(`${path}/last_operation?operation=${encodeURIComponent(String(again.body.operation))}`),
      ).toMatchObject({ state: 'succeeded' });
      expect((await teamOf(id)).spec.teamId).toBe('green');
      // a plan change, polled as platforms do, with the plan the instance had (row 56)
      const moved = await osb('PATCH', `${path}?accepts_incomplete=true`, {
        service_id: SERVICE,
        plan_id: PLANS.ok,
        previous_values: { plan_id: PLANS.team },
      });
      expect(moved.status).toBe(202);
      expect(
        await until(
          `${path}/last_operation?operation=${encodeURIComponent(String(moved.body.operation))}&service_id=${SERVICE}&plan_id=${PLANS.team}`,
        ),
      ).toMatchObject({ state: 'succeeded' });
      expect((await osb('GET', path)).body).toMatchObject({ plan_id: PLANS.ok });
      await deprovision(path, PLANS.ok);
    });

    test('while an update runs: GET and DELETE are 422, the same PATCH gets its operation, another is 422; past the deadline it is rolled back', async () => {
      const id = randomUUID();
      const path = `/v2/service_instances/${id}`;
      const body = provisionBody(SERVICE, PLANS.teamQuick, { team: 'blue' });
      expect((await osb('PUT', `${path}?accepts_incomplete=true`, body)).status).toBe(202);
      expect(await until(`${path}/last_operation`)).toMatchObject({ state: 'succeeded' });

      const hang = { service_id: SERVICE, parameters: { team: 'hang' } };
      const update = await osb('PATCH', `${path}?accepts_incomplete=true`, hang);
      expect(update.status).toBe(202);
      const same = await osb('PATCH', `${path}?accepts_incomplete=true`, hang);
      expect([same.status, same.body.operation]).toEqual([202, update.body.operation]);
      const other = await osb('PATCH', `${path}?accepts_incomplete=true`, {
        service_id: SERVICE,
        parameters: { team: 'red' },
      });
      expect([other.status, other.body.error]).toEqual([422, 'ConcurrencyError']);
      const get = await osb('GET', path);
      expect([get.status, get.body.error]).toEqual([422, 'ConcurrencyError']);
      const del = await osb(
        'DELETE',
        `${path}?service_id=${SERVICE}&plan_id=${PLANS.teamQuick}&accepts_incomplete=true`,
      );
      expect([del.status, del.body.error]).toEqual([422, 'ConcurrencyError']);

      expect(
        await until(`${path}/last_operation?operation=${encodeURIComponent(String(update.body.operation))}`),
      ).toEqual({
        state: 'failed',
        description:
          'The operator did not report the outcome within 4 s (rolled back: the instance keeps its previous plan and parameters)',
        instance_usable: true,
        update_repeatable: true,
      });
      expect((await osb('GET', path)).body).toMatchObject({ parameters: { team: 'blue' } });
      await deprovision(path, PLANS.teamQuick);
    });
  });
});
