/**
 * The OSB rules, against the real broker, Temporal and apiservers: authentication, versions,
 * error bodies, idempotency and concurrency, updates, failures classified and described, the
 * catalog following plan changes, and an operation that survives the death of its worker.
 */
import { randomUUID } from 'node:crypto';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { defaultPayloadConverter } from '@temporalio/common';
import {
  SFPLAN,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { getRecord, listRecords, patchRecord } from '../../src/kube/custom-objects.js';
import { applyObject } from '../../src/kube/objects.js';
import { ANNOTATIONS, LABELS, instanceWorkflowId, labelValue } from '../../src/resources/names.js';
import { freePort } from '../../dev/local/processes.js';
import { EncryptionCodec, parsePayloadKeys } from '../../src/temporal/codec.js';
import { conditionOf, waitableCondition } from '../support/conditions.js';
import { clusters, environment, eventually, temporalClient, untilNamespaceGone } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import {
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';

const SERVICE = 'b6f3e0f4-rules-service';
const plan = (id: string, extra: Record<string, unknown>, provision: string) => ({
  apiVersion: SFPLAN.apiVersion,
  kind: SFPLAN.kind,
  metadata: { name: id, namespace: environment().namespace },
  spec: {
    id,
    name: id,
    description: `test plan ${id}`,
    serviceId: SERVICE,
    bindable: true,
    planUpdatable: true,
    manager: { async: true },
    templates: [
      { action: 'provision', type: 'gotemplate', content: provision },
      {
        action: 'sources',
        type: 'gotemplate',
        content:
          'pg:\n  apiVersion: acid.zalan.do/v1\n  kind: postgresql\n  name: db\n  namespace: {{ .instance.metadata.namespace }}\n',
      },
      {
        action: 'status',
        type: 'gotemplate',
        content: [
          '{{- $s := "in progress" }}{{ $d := "" }}',
          '{{- with .pg.status }}{{ if eq .PostgresClusterStatus "Running" }}{{ $s = "succeeded" }}{{ end }}',
          '{{- if eq .PostgresClusterStatus "CreateFailed" }}{{ $s = "failed" }}{{ $d = .reason }}{{ end }}{{ end }}',
          'provision: {state: "{{ $s }}", description: {{ $d | quote }}}',
          'deprovision: {state: "{{ if .pg }}in progress{{ else }}succeeded{{ end }}"}',
        ].join('\n'),
      },
    ],
    ...extra,
  },
});
const pgTemplate = (team: string) =>
  'apiVersion: acid.zalan.do/v1\nkind: postgresql\nmetadata:\n  name: db\nspec:\n  teamId: ' +
  team +
  '\n  users:\n    main: []\n  size: {{ default "s" .instance.spec.parameters.size }}\n';

/**
 * A postgresql whose team is a parameter (`team: fail` makes the operator fail it), and a status
 * that waits for the operator to have seen the latest change (`team: hang` never ends).
 */
const teamPlan = (id: string, async: boolean, extra: Record<string, unknown> = {}) =>
  plan(
    id,
    {
      ...extra,
      manager: { async },
      templates: [
        {
          action: 'provision',
          type: 'gotemplate',
          content:
            'apiVersion: acid.zalan.do/v1\nkind: postgresql\nmetadata:\n  name: db\nspec:\n  teamId: {{ default "ok" .instance.spec.parameters.team }}\n  users:\n    main: []\n',
        },
        plan(id, {}, '').spec.templates[1]!,
        {
          action: 'status',
          type: 'gotemplate',
          content: [
            '{{- $s := "in progress" }}{{ $d := "" }}',
            '{{- with .pg.status }}{{ if eq (toString .observedGeneration) (toString $.pg.metadata.generation) }}',
            '{{- if eq .PostgresClusterStatus "Running" }}{{ $s = "succeeded" }}{{ end }}',
            '{{- if or (eq .PostgresClusterStatus "CreateFailed") (eq .PostgresClusterStatus "UpdateFailed") }}{{ $s = "failed" }}{{ $d = .reason }}{{ end }}{{ end }}{{ end }}',
            '{{- if eq (default "" .instance.spec.parameters.team) "hang" }}{{ $s = "in progress" }}{{ end }}',
            'provision: {state: "{{ $s }}", description: {{ $d | quote }}}',
            // `team: stuck` never lets a deprovision finish
            'deprovision: {state: "{{ if or .pg (eq (default "" .instance.spec.parameters.team) "stuck") }}in progress{{ else }}succeeded{{ end }}"}',
            // a binding's response with endpoints and metadata; `renew: late` renews after it expires;
            // `renew: never` never finishes the bind
            '{{- with .binding }}',
            'bind: {state: "{{ if eq (toString .spec.parameters.renew) "never" }}in progress{{ else }}succeeded{{ end }}", response: {credentials: {user: "{{ .metadata.name }}"}, endpoints: [{host: db.example, ports: ["5432"], protocol: tcp}], metadata: {expires_at: "2030-01-31T00:00:00.0Z", renew_before: "2030-0{{ if eq (toString .spec.parameters.renew) "late" }}2{{ else }}1{{ end }}-01T00:00:00.0Z"}}}',
            'unbind: {state: "{{ if eq (toString .spec.parameters.renew) "hang" }}in progress{{ else }}succeeded{{ end }}"}',
            '{{- end }}',
          ].join('\n'),
        },
      ],
    },
    '',
  );

const PLANS = {
  ok: 'rules-plan-ok',
  team: 'rules-plan-team',
  teamSync: 'rules-plan-team-sync',
  teamQuick: 'rules-plan-team-quick',
  other: 'rules-plan-other',
  maintained: 'rules-plan-maintained',
  failing: 'rules-plan-failing',
  broken: 'rules-plan-broken',
  invalid: 'rules-plan-invalid',
  slow: 'rules-plan-slow',
  never: 'rules-plan-never',
  deadline: 'rules-plan-deadline',
};

describe('OSB rules on the real broker', () => {
  let settings: SystemSettings;
  let system: SystemProcess;
  let operator: { stop(): Promise<void> };
  let osb: OsbClient;
  const [master] = clusters();

  beforeAll(async () => {
    const ns = environment().namespace;
    await applyObject(master!, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFService',
      metadata: { name: SERVICE, namespace: ns },
      spec: { id: SERVICE, name: 'rules', description: 'rules', bindable: true, planUpdatable: true },
    });
    await applyObject(
      master!,
      plan(
        PLANS.ok,
        {
          manager: {
            async: true,
            dashboardUrlTemplate: 'https://dashboard.example/{{instance.metadata.name}}',
          },
        },
        pgTemplate('ok'),
      ),
    );
    // synchronous, and the operator never reports success: only a time limit ends it
    await applyObject(
      master!,
      plan(
        PLANS.never,
        {
          manager: { async: false },
          templates: [
            {
              action: 'provision',
              type: 'gotemplate',
              content: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n',
            },
            { action: 'status', type: 'gotemplate', content: 'provision: {state: in progress}\n' },
          ],
        },
        '',
      ),
    );
    // asynchronous, the operator never reports success, and the plan allows 3 s
    await applyObject(
      master!,
      plan(
        PLANS.deadline,
        {
          maximum_polling_duration: 3,
          templates: [
            {
              action: 'provision',
              type: 'gotemplate',
              content: 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n',
            },
            {
              action: 'status',
              type: 'gotemplate',
              content:
                'provision: {state: in progress, description: "still creating"}\ndeprovision: {state: succeeded}\n',
            },
          ],
        },
        '',
      ),
    );
    await applyObject(master!, plan(PLANS.other, { update_predecessors: ['nothing'] }, pgTemplate('ok')));
    await applyObject(
      master!,
      plan(PLANS.maintained, { maintenance_info: { version: '2.0.0' } }, pgTemplate('ok')),
    );
    await applyObject(master!, plan(PLANS.failing, {}, pgTemplate('fail')));
    await applyObject(master!, plan(PLANS.broken, {}, 'kind: x\n{{ fail "no such size" }}'));
    await applyObject(
      master!,
      plan(
        PLANS.invalid,
        {},
        'apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\nspec:\n  type: NotAType\n  ports: [{port: 5432}]\n',
      ),
    );
    await applyObject(master!, plan(PLANS.slow, {}, pgTemplate('slow')));
    await applyObject(master!, teamPlan(PLANS.team, true));
    await applyObject(master!, teamPlan(PLANS.teamSync, false));
    await applyObject(master!, teamPlan(PLANS.teamQuick, true, { maximum_polling_duration: 4 }));
    operator = await startOperator(1500);
    settings = await systemSettings();
    system = await startProcess('all', settings);
    osb = osbClient(system.url);
    await eventually('the test catalog', async () => {
      const res = await osb('GET', '/v2/catalog');
      const services = res.body.services as { id: string; plans: unknown[] }[];
      return services.find((s) => s.id === SERVICE)?.plans.length === Object.keys(PLANS).length
        ? true
        : undefined;
    });
  });
  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
  });

  /** The body of the settled last_operation at `path`. */
  const until = async (path: string) => (await untilSettled(osb, path)).body;

  /** Deprovisions an instance: 202, then last_operation of that operation until it succeeded. */
  const deprovision = async (path: string, planId: string) => {
    const del = await osb(
      'DELETE',
      `${path}?service_id=${SERVICE}&plan_id=${planId}&accepts_incomplete=true`,
    );
    expect(del.status).toBe(202);
    expect(
      await until(`${path}/last_operation?operation=${encodeURIComponent(String(del.body.operation))}`),
    ).toMatchObject({ state: 'succeeded' });
  };

  /** Leaves a namespace being deleted: an object in it holds a finalizer. */
  const HOLD = 'test.servicefabrik.io/hold';
  const holdNamespace = async (namespace: string) => {
    await master!.core.createNamespace({ body: { metadata: { name: namespace } } });
    await master!.core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'held', finalizers: [HOLD] } },
    });
    await master!.core.deleteNamespace({ name: namespace });
  };
  /** Lets the namespace go. */
  const releaseNamespace = (namespace: string) =>
    master!.core.patchNamespacedConfigMap(
      { namespace, name: 'held', body: [{ op: 'remove', path: '/metadata/finalizers' }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );

  describe('the HTTP contract', () => {
    test('authentication: 401 with a challenge, never a body of secrets', async () => {
      const res = await fetch(`${system.url}/v2/catalog`, { headers: { 'X-Broker-API-Version': '2.17' } });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic/);
      expect(await res.json()).toMatchObject({ description: expect.any(String) });
      const wrong = await fetch(`${system.url}/v2/catalog`, {
        headers: {
          'X-Broker-API-Version': '2.17',
          Authorization: `Basic ${Buffer.from('broker:nope').toString('base64')}`,
        },
      });
      expect(wrong.status).toBe(401);
      // The same paths in another case are no way around it.
      for (const path of ['/V2/catalog', `/V2/service_instances/${randomUUID()}/last_operation`]) {
        const other = await fetch(`${system.url}${path}`, { headers: { 'X-Broker-API-Version': '2.17' } });
        expect([path, other.status]).toEqual([path, 401]);
        expect([path, (await osb('GET', path)).status]).toEqual([path, 404]);
      }
    });

    test.each([
      ['missing', '', 412],
      ['2.11', '2.11', 412],
      ['2.12', '2.12', 200],
    ])('X-Broker-API-Version %s: %i (412 when missing or below 2.12)', async (_, version, status) => {
      expect((await osbClient(system.url, version)('GET', '/v2/catalog')).status).toBe(status);
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
        const codec = new EncryptionCodec(parsePayloadKeys(settings.payloadKeys));
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
      ...settings,
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
