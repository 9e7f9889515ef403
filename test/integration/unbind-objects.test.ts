/**
 * What an unbind template applies of its own, on the real servers: objects that are neither the
 * bind's nor the instance's (in a real plan, a Job that takes the binding's access away) stay while
 * the unbind runs, so that its status template can wait on them, and are deleted once it says
 * `succeeded`; the bind's own objects are deleted at once; nothing of the binding is left. An unbind
 * that failed takes its own objects away, so that the platform's next unbind applies them afresh
 * (a Job that failed would fail it again at once) and can succeed.
 */
import { randomUUID } from 'node:crypto';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { getRecord, patchRecordStatus } from '../../src/kube/custom-objects.js';
import { applyObject, readObject } from '../../src/kube/objects.js';
import { instanceNamespace, resourceName } from '../../src/resources/names.js';
import {
  SFCLUSTER,
  SFPLAN,
  SFSERVICE,
  SFSERVICEBINDING,
  type KubeObject,
} from '../../src/resources/types.js';
import { removeRegistry } from '../support/clusters.js';
import { clusters, environment, eventually, unique } from '../support/env.js';
import { osbClient, provisionBody, provisionSettled, untilSettled, type OsbClient } from '../support/osb.js';
import { startProcess, systemSettings, type SystemProcess } from '../support/system.js';

const env = environment();
const [master] = clusters();
const registry = unique('unbindobj');
const SERVICE_ID = randomUUID();
const PLAN_ID = randomUUID();

/**
 * The bind applies a ConfigMap `login-<binding>`; the unbind a ConfigMap `revoke-<binding>`, done
 * once something (here the test, in a real plan a Job) marks it `done: "yes"`, failed once it is
 * marked `done: "no"`.
 */
const TEMPLATES = [
  {
    action: 'provision',
    type: 'gotemplate',
    content: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db}\ndata: {users: ""}\n',
  },
  {
    action: 'bind',
    type: 'gotemplate',
    content:
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "login-{{ .binding.metadata.name }}"}\ndata: {user: u}\n',
  },
  {
    action: 'unbind',
    type: 'gotemplate',
    content:
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "revoke-{{ .binding.metadata.name }}"}\ndata: {user: u}\n',
  },
  {
    action: 'sources',
    type: 'gotemplate',
    content: [
      'db: {apiVersion: v1, kind: ConfigMap, name: db}',
      '{{- with .binding }}',
      'login: {apiVersion: v1, kind: ConfigMap, name: "login-{{ .metadata.name }}"}',
      'revoke: {apiVersion: v1, kind: ConfigMap, name: "revoke-{{ .metadata.name }}"}',
      '{{- end }}',
      '',
    ].join('\n'),
  },
  {
    action: 'status',
    type: 'gotemplate',
    content: [
      'provision: {state: {{ if .db }}succeeded{{ else }}in progress{{ end }}}',
      'deprovision: {state: succeeded}',
      'bind:',
      '  state: {{ if .login }}succeeded{{ else }}in progress{{ end }}',
      `  response: '{"credentials": {"user": "u"}}'`,
      'unbind:',
      '  {{- $done := "" }}{{ with .revoke }}{{ $done = default "" .data.done }}{{ end }}',
      '  state: {{ if eq $done "yes" }}succeeded{{ else if eq $done "no" }}failed{{ else }}in progress{{ end }}',
      '  error: {{ if eq $done "no" }}"the revoking job failed"{{ else }}""{{ end }}',
      '',
    ].join('\n'),
  },
];

let system: SystemProcess;
let osb: OsbClient;

beforeAll(async () => {
  await registerCluster(master!, registry, env.clusters[0]!.id, env.clusters[0]!.kubeconfigPath);
  await patchRecordStatus(master!, SFCLUSTER, registry, env.clusters[0]!.id, { phase: 'running' });
  await applyObject(master!, {
    apiVersion: SFSERVICE.apiVersion,
    kind: SFSERVICE.kind,
    metadata: { name: SERVICE_ID, namespace: registry },
    spec: {
      id: SERVICE_ID,
      name: `unbind-objects-${SERVICE_ID}`,
      description: 'unbind objects',
      bindable: true,
    },
  } as KubeObject);
  await applyObject(master!, {
    apiVersion: SFPLAN.apiVersion,
    kind: SFPLAN.kind,
    metadata: { name: PLAN_ID, namespace: registry, labels: { serviceId: SERVICE_ID, planId: PLAN_ID } },
    spec: {
      id: PLAN_ID,
      name: 'revoking-unbind',
      description: 'an unbind that applies an object of its own and waits on it',
      serviceId: SERVICE_ID,
      free: true,
      bindable: true,
      manager: { async: true, asyncBinding: true },
      templates: TEMPLATES,
    },
  } as KubeObject);
  system = await startProcess('all', await systemSettings({ INTEROP_NAMESPACE: registry }));
  osb = osbClient(system.url);
  await eventually(
    'the plan in the catalog',
    async () => (JSON.stringify((await osb('GET', '/v2/catalog')).body).includes(PLAN_ID) ? true : undefined),
    60_000,
  );
});

afterAll(async () => {
  await system?.stop();
  await removeRegistry(master!, registry).catch(() => undefined);
});

test('GIVEN a binding WHEN it is unbound THEN the bind’s objects go at once, the unbind’s own stay until its status says succeeded, then go too', async () => {
  const instanceId = randomUUID();
  const bindingId = randomUUID();
  const namespace = instanceNamespace(instanceId);
  const configMap = (name: string) =>
    readObject(master!, { apiVersion: 'v1', kind: 'ConfigMap', name, namespace });
  const provisioned = await provisionSettled(osb, instanceId, provisionBody(SERVICE_ID, PLAN_ID), 120_000);
  expect(provisioned.body.state).toBe('succeeded');
  const bindingPath = `/v2/service_instances/${instanceId}/service_bindings/${bindingId}`;
  const query = `service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`;
  const binding = await osb('PUT', `${bindingPath}?accepts_incomplete=true`, {
    service_id: SERVICE_ID,
    plan_id: PLAN_ID,
  });
  expect(binding.status).toBe(202);
  const bound = await untilSettled(
    osb,
    `${bindingPath}/last_operation?${query}&operation=${encodeURIComponent(String(binding.body.operation))}`,
  );
  expect(bound.body.state).toBe('succeeded');
  expect(await configMap(`login-${bindingId}`)).toBeDefined();

  // WHEN the platform unbinds
  const unbinding = await osb('DELETE', `${bindingPath}?${query}&accepts_incomplete=true`);
  expect(unbinding.status).toBe(202);
  const lastOperation = `${bindingPath}/last_operation?${query}&operation=${encodeURIComponent(String(unbinding.body.operation))}`;

  // THEN the unbind's own object is there and the bind's gone, while the unbind waits on it
  await eventually(
    'the unbind’s object applied and the bind’s deleted',
    async () =>
      (await configMap(`revoke-${bindingId}`)) && !(await configMap(`login-${bindingId}`)) ? true : undefined,
    30_000,
  );
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect((await osb('GET', lastOperation)).body.state).toBe('in progress');
  expect(await configMap(`revoke-${bindingId}`)).toBeDefined();
  const record = await getRecord<KubeObject & { status?: { unbindResources?: unknown[] } }>(
    master!,
    SFSERVICEBINDING,
    namespace,
    resourceName(bindingId),
  );
  expect(record?.status?.unbindResources).toEqual([
    { apiVersion: 'v1', kind: 'ConfigMap', name: `revoke-${bindingId}`, namespace },
  ]);

  // WHEN what the unbind waits for is done
  await applyObject(
    master!,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `revoke-${bindingId}`, namespace },
      data: { done: 'yes' },
    } as KubeObject,
    'the-revoking-job',
  );

  // THEN the unbind succeeds, and nothing of the binding is left
  const unbound = await untilSettled(osb, lastOperation);
  expect(unbound.body.state).toBe('succeeded');
  expect(await configMap(`revoke-${bindingId}`)).toBeUndefined();
  expect(await configMap(`login-${bindingId}`)).toBeUndefined();
  expect(await getRecord(master!, SFSERVICEBINDING, namespace, resourceName(bindingId))).toBeUndefined();
}, 180_000);

test('GIVEN an unbind that failed on its own object WHEN the platform unbinds again THEN that object is applied afresh and the unbind succeeds', async () => {
  const instanceId = randomUUID();
  const bindingId = randomUUID();
  const namespace = instanceNamespace(instanceId);
  const configMap = (name: string) =>
    readObject(master!, { apiVersion: 'v1', kind: 'ConfigMap', name, namespace });
  const markRevoke = (done: 'yes' | 'no') =>
    applyObject(
      master!,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: `revoke-${bindingId}`, namespace },
        data: { done },
      } as KubeObject,
      'the-revoking-job',
    );
  expect(
    (await provisionSettled(osb, instanceId, provisionBody(SERVICE_ID, PLAN_ID), 120_000)).body.state,
  ).toBe('succeeded');
  const bindingPath = `/v2/service_instances/${instanceId}/service_bindings/${bindingId}`;
  const query = `service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`;
  const lastOperationOf = (res: { body: Record<string, unknown> }) =>
    `${bindingPath}/last_operation?${query}&operation=${encodeURIComponent(String(res.body.operation))}`;
  const binding = await osb('PUT', `${bindingPath}?accepts_incomplete=true`, {
    service_id: SERVICE_ID,
    plan_id: PLAN_ID,
  });
  expect((await untilSettled(osb, lastOperationOf(binding))).body.state).toBe('succeeded');

  // GIVEN an unbind whose own object says it failed
  const first = await osb('DELETE', `${bindingPath}?${query}&accepts_incomplete=true`);
  expect(first.status).toBe(202);
  await eventually('the unbind’s object applied', async () => configMap(`revoke-${bindingId}`), 30_000);
  await markRevoke('no');
  const failed = await untilSettled(osb, lastOperationOf(first));
  expect(failed.body).toMatchObject({ state: 'failed' });
  // THEN that object is taken away, and the binding is still there
  await eventually(
    'the failed unbind’s object gone',
    async () => ((await configMap(`revoke-${bindingId}`)) ? undefined : true),
    30_000,
  );
  const record = await getRecord<KubeObject & { status?: { unbindResources?: unknown[] } }>(
    master!,
    SFSERVICEBINDING,
    namespace,
    resourceName(bindingId),
  );
  expect(record?.status?.unbindResources ?? []).toEqual([]);

  // WHEN the platform unbinds again
  const second = await osb('DELETE', `${bindingPath}?${query}&accepts_incomplete=true`);
  expect(second.status).toBe(202);
  // THEN its object is applied afresh, and the unbind waits on it rather than failing at once
  await eventually('the unbind’s object applied again', async () => configMap(`revoke-${bindingId}`), 30_000);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect((await osb('GET', lastOperationOf(second))).body.state).toBe('in progress');
  expect((await configMap(`revoke-${bindingId}`))?.data).toEqual({ user: 'u' });
  // AND once its object says done, it succeeds and nothing of the binding is left
  await markRevoke('yes');
  expect((await untilSettled(osb, lastOperationOf(second))).body.state).toBe('succeeded');
  expect(await configMap(`revoke-${bindingId}`)).toBeUndefined();
  expect(await getRecord(master!, SFSERVICEBINDING, namespace, resourceName(bindingId))).toBeUndefined();
}, 180_000);
