/**
 * References to other objects (`getValueFrom`) in a plan's provision template, on the real servers:
 * a platform provisions through OSB; while a referenced ConfigMap is missing the provision waits
 * and last_operation says for what; once it exists the objects are applied with the resolved
 * values (a ConfigMap field through transformers, a label-selected ConfigMap, a Secret field
 * decoded). A reference with a wrong path fails the provision at once and nothing of it is applied.
 * A plan change's dry run resolves references too, and reports a field holding the Secret's value
 * as redacted; a bind template's references are resolved like the provision's. A change of a
 * referenced ConfigMap after the provision reaches the instance through an update the worker starts,
 * also when it was made while the worker was down.
 * The Secret's value
 * is in no workflow history, search attribute, memo, log or record of the run.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { getRecord } from '../../src/kube/custom-objects.js';
import { statusCodeOf } from '../../src/kube/errors.js';
import { applyObject, ensureNamespace, readObject } from '../../src/kube/objects.js';
import { instanceNamespace, LABELS, labelValue, resourceName } from '../../src/resources/names.js';
import { SFSERVICEINSTANCE, type KubeObject, type SFServiceInstance } from '../../src/resources/types.js';
import { payloadCodec } from '../../src/temporal/connection.js';
import { parsePayloadKeys } from '../../src/temporal/codec.js';
import { clusters, environment, eventually, unique } from '../support/env.js';
import { osbClient, provisionBody, provisionSettled, untilSettled, type OsbClient } from '../support/osb.js';
import { ADMIN, callAdmin } from '../support/admin.js';
import { sweepForSecrets } from '../support/secrets-sweep.js';
import { startProcess, systemSettings, type SystemProcess, type SystemSettings } from '../support/system.js';

const SERVICE_ID = randomUUID();
const PLAN_ID = randomUUID();
const BROKEN_PLAN_ID = randomUUID();
/** The value of the referenced Secret: sought by the sweep afterwards. */
const PASSWORD = `ref-password-${randomUUID()}`;

/** The provision template: a ConfigMap and a Secret whose values come from other objects. */
const PROVISION = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-settings
data:
  hosts:
    getValueFrom:
      kind: ConfigMap
      name: shared-settings
      path: '{.data.hosts}'
      format-transformers: [JsonToObject, ArrayToCSString]
  port:
    getValueFrom:
      kind: ConfigMap
      name: shared-settings
      path: ".metadata.labels['example.com/port']"
  tier:
    getValueFrom:
      kind: ConfigMap
      apiVersion: v1
      labels: { role: tier }
      path: .data.tier
---
apiVersion: v1
kind: Secret
metadata:
  name: app-credentials
stringData:
  password:
    getValueFrom:
      kind: Secret
      name: db-admin
      path: '{.data.password}'
      format-transformers: [Base64ToString]
`;

/** A plain ConfigMap, then one whose reference has a path that leads nowhere. */
const BROKEN_PROVISION = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: plain
data:
  a: b
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: broken
data:
  x:
    getValueFrom:
      kind: ConfigMap
      name: shared-settings
      path: .data.nope
`;

/** The bind template: the binding's own ConfigMap, with the hosts from the shared settings. */
const BIND = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: binding-{{ .binding.metadata.name }}
data:
  hosts:
    getValueFrom:
      kind: ConfigMap
      name: shared-settings
      path: '{.data.hosts}'
      format-transformers: [JsonToObject, ArrayToCSString]
`;

const STATUS = `
provision:
  state: succeeded
  description: the application's settings are applied
bind:
  state: succeeded
  response: '{"credentials":{"settings":"binding-{{ .binding.metadata.name }}"}}'
unbind:
  state: succeeded
deprovision:
  state: succeeded
`;

/**
 * The file's own registry: its worker follows the references of its catalog's instances, and no
 * other test's worker (which follows none) acts on them.
 */
const REGISTRY = unique('references');

const plan = (id: string, name: string, provision: string): KubeObject => ({
  apiVersion: 'osb.servicefabrik.io/v1alpha1',
  kind: 'SFPlan',
  metadata: { name: id, namespace: REGISTRY },
  spec: {
    id,
    name,
    serviceId: SERVICE_ID,
    description: 'objects whose values come from other objects',
    free: true,
    bindable: true,
    planUpdatable: false,
    maximum_polling_duration: 600,
    manager: { async: true },
    templates: [
      { action: 'provision', type: 'gotemplate', content: provision },
      { action: 'bind', type: 'gotemplate', content: BIND },
      { action: 'status', type: 'gotemplate', content: STATUS },
    ],
  },
});

describe('references to other objects in a plan’s templates', () => {
  const [master] = clusters();
  let settings: SystemSettings;
  let system: SystemProcess;
  let osb: OsbClient;
  const descriptions: string[] = [];
  /** The logs of the landscapes stopped before the end. */
  const logFiles: string[] = [];
  /** The instance the first test provisions. */
  let provisioned: string | undefined;

  const read = (kind: string, name: string, namespace: string) =>
    readObject(master!, { apiVersion: 'v1', kind, name, namespace });

  const lastOperation = async (instanceId: string, operation: string) => {
    const res = await osb(
      'GET',
      `/v2/service_instances/${instanceId}/last_operation?operation=${encodeURIComponent(operation)}`,
    );
    descriptions.push(String(res.body.description ?? ''));
    return res.body;
  };

  beforeAll(async () => {
    await ensureNamespace(master!, REGISTRY);
    await applyObject(master!, {
      apiVersion: 'osb.servicefabrik.io/v1alpha1',
      kind: 'SFService',
      metadata: { name: SERVICE_ID, namespace: REGISTRY },
      spec: {
        id: SERVICE_ID,
        name: `references-${SERVICE_ID.slice(0, 8)}`,
        description: 'a service whose plans refer to other objects',
        bindable: true,
        planUpdatable: false,
      },
    });
    await applyObject(master!, plan(PLAN_ID, 'references', PROVISION));
    await applyObject(master!, plan(BROKEN_PLAN_ID, 'references-broken', BROKEN_PROVISION));
    settings = await systemSettings({
      INTEROP_ADMIN_USERNAME: ADMIN.username,
      INTEROP_ADMIN_PASSWORD: ADMIN.password,
      INTEROP_NAMESPACE: REGISTRY,
      INTEROP_FOLLOW_REFERENCES: 'true',
    });
    system = await startProcess('all', settings);
    osb = osbClient(system.url);
    await eventually('the plans in the catalog', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { id: string; plans: unknown[] }[];
      return services?.find((s) => s.id === SERVICE_ID)?.plans.length === 2 ? true : undefined;
    });
  });
  afterAll(async () => {
    await system?.stop();
  });

  test('GIVEN a referenced ConfigMap that is missing WHEN a platform provisions THEN it waits, saying for what, and once the ConfigMap exists the objects carry the resolved values', async () => {
    const instanceId = randomUUID();
    provisioned = instanceId;
    const namespace = instanceNamespace(instanceId);
    // GIVEN the instance's namespace with the Secret and the label-selected ConfigMap, but not shared-settings
    await ensureNamespace(master!, namespace);
    await applyObject(master!, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'db-admin', namespace },
      data: { password: Buffer.from(PASSWORD).toString('base64') },
    } as KubeObject);
    await applyObject(master!, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'tier', namespace, labels: { role: 'tier' } },
      data: { tier: 'gold' },
    } as KubeObject);

    // WHEN a platform provisions
    const accepted = await osb(
      'PUT',
      `/v2/service_instances/${instanceId}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID),
    );
    expect(accepted.status).toBe(202);
    const operation = String(accepted.body.operation);

    // THEN last_operation is in progress, saying it waits for the ConfigMap
    const waiting = await eventually(
      'last_operation to say what the provision waits for',
      async () => {
        const body = await lastOperation(instanceId, operation);
        expect(body.state).toBe('in progress');
        return String(body.description).startsWith('waiting for referenced object') ? body : undefined;
      },
      90_000,
    );
    expect(waiting.description).toContain(`ConfigMap shared-settings in ${namespace}, path {.data.hosts}`);
    expect(waiting.description).toContain('referenced object not found');
    // AND nothing is applied while it waits, not even the objects whose references resolve
    expect(await read('Secret', 'app-credentials', namespace)).toBeUndefined();
    expect(await read('ConfigMap', 'app-settings', namespace)).toBeUndefined();

    // WHEN the ConfigMap is created
    await applyObject(master!, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'shared-settings', namespace, labels: { 'example.com/port': '5432' } },
      data: { hosts: '["db-0.example", "db-1.example"]' },
    } as KubeObject);

    // THEN the provision succeeds
    const done = await untilSettled(
      osb,
      `/v2/service_instances/${instanceId}/last_operation?operation=${encodeURIComponent(operation)}`,
      120_000,
    );
    descriptions.push(String(done.body.description ?? ''));
    expect(done.body).toMatchObject({ state: 'succeeded' });
    // AND the applied objects carry the resolved values
    const settingsMap = (await read('ConfigMap', 'app-settings', namespace)) as KubeObject & {
      data: Record<string, string>;
    };
    expect(settingsMap.data).toEqual({ hosts: 'db-0.example,db-1.example', port: '5432', tier: 'gold' });
    expect(settingsMap.metadata.labels?.[LABELS.instanceId]).toBe(labelValue(instanceId));
    const credentials = (await read('Secret', 'app-credentials', namespace)) as KubeObject & {
      data: Record<string, string>;
    };
    expect(Buffer.from(credentials.data.password!, 'base64').toString('utf8')).toBe(PASSWORD);
    // AND both are recorded as the instance's objects
    const record = await getRecord<SFServiceInstance>(
      master!,
      SFSERVICEINSTANCE,
      namespace,
      resourceName(instanceId),
    );
    expect(record?.status?.resources?.map((r) => `${r.kind}/${r.name}`).sort()).toEqual([
      'ConfigMap/app-settings',
      'Secret/app-credentials',
    ]);
  }, 240_000);

  test('GIVEN a reference whose path leads nowhere WHEN a platform provisions THEN it fails at once with "field not found", and nothing of it is applied', async () => {
    const instanceId = randomUUID();
    const namespace = instanceNamespace(instanceId);
    await ensureNamespace(master!, namespace);
    await applyObject(master!, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'shared-settings', namespace },
      data: { hosts: '[]' },
    } as KubeObject);

    const done = await provisionSettled(osb, instanceId, provisionBody(SERVICE_ID, BROKEN_PLAN_ID), 120_000);
    const description = String(done.body.description);
    descriptions.push(description);
    expect(done.body.state).toBe('failed');
    // The description names the object, the reference and the kind of failure, and it is the
    // reference's own failure, not the deadline's (which would mean it was retried).
    expect(description).toContain('the provision template of plan references-broken');
    expect(description).toContain(`ConfigMap shared-settings in ${namespace}, path .data.nope`);
    expect(description).toContain('for data.x of ConfigMap broken');
    expect(description).toContain('field not found: no field .data.nope');
    expect(description).not.toMatch(/Not done within/);
    // AND nothing of the operation was applied: neither the broken object nor the plain one before it
    expect(await read('ConfigMap', 'plain', namespace)).toBeUndefined();
    expect(await read('ConfigMap', 'broken', namespace)).toBeUndefined();
  }, 240_000);

  test('GIVEN the provisioned instance WHEN a plan change that copies the Secret’s value into the ConfigMap is dry run THEN the field is reported redacted, and nothing is applied', async () => {
    expect(provisioned).toBeDefined();
    const instanceId = provisioned!;
    const namespace = instanceNamespace(instanceId);
    const copy = `
  copy:
    getValueFrom:
      kind: Secret
      name: db-admin
      path: .data.password
      format-transformers: [Base64ToString]
`;
    const provision = PROVISION.replace('\n  tier:\n', `${copy}  tier:\n`);
    expect(provision).not.toBe(PROVISION);
    const { spec } = plan(PLAN_ID, 'references', provision) as KubeObject & { spec: unknown };
    const res = await callAdmin(system.url, 'POST', `/admin/plans/${PLAN_ID}/dry-run`, { body: { spec } });
    expect(res.status).toBe(200);
    const report = res.body as { instances: { instanceId: string; error?: string; objects: unknown[] }[] };
    const instance = report.instances.find((i) => i.instanceId === instanceId);
    expect(instance?.error).toBeUndefined();
    expect(instance?.objects).toEqual([
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        name: 'app-settings',
        namespace,
        change: 'changed',
        fields: [{ path: 'data.copy', redacted: true }],
      },
      { apiVersion: 'v1', kind: 'Secret', name: 'app-credentials', namespace, change: 'unchanged' },
    ]);
    expect(JSON.stringify(res.body)).not.toContain(PASSWORD);
    const live = (await read('ConfigMap', 'app-settings', namespace)) as KubeObject & {
      data: Record<string, string>;
    };
    expect(live.data.copy).toBeUndefined();
  }, 120_000);

  test('GIVEN the provisioned instance WHEN a platform binds THEN the bind template’s reference is resolved too', async () => {
    expect(provisioned).toBeDefined();
    const instanceId = provisioned!;
    const bindingId = randomUUID();
    const bound = await osb('PUT', `/v2/service_instances/${instanceId}/service_bindings/${bindingId}`, {
      service_id: SERVICE_ID,
      plan_id: PLAN_ID,
    });
    expect(bound.status).toBe(201);
    const name = `binding-${resourceName(bindingId)}`;
    expect(bound.body.credentials).toEqual({ settings: name });
    const applied = (await read('ConfigMap', name, instanceNamespace(instanceId))) as KubeObject & {
      data: Record<string, string>;
    };
    expect(applied.data).toEqual({ hosts: 'db-0.example,db-1.example' });
  }, 120_000);

  test('GIVEN the provisioned instance WHEN a referenced ConfigMap changes THEN an update of the instance, started by the worker, applies the new value', async () => {
    expect(provisioned).toBeDefined();
    const instanceId = provisioned!;
    const namespace = instanceNamespace(instanceId);
    const recordOf = () =>
      getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, namespace, resourceName(instanceId));
    // GIVEN the record names what its references read, and where, never their values
    const before = await recordOf();
    expect(before?.status?.references?.map((r) => `${r.kind} ${r.namespace}/${r.name}`).sort()).toEqual([
      `ConfigMap ${namespace}/shared-settings`,
      `ConfigMap ${namespace}/tier`,
      `Secret ${namespace}/db-admin`,
    ]);
    expect(JSON.stringify(before?.status?.references)).not.toContain(PASSWORD);
    expect(before?.status).toMatchObject({ operation: 'provision', state: 'succeeded' });

    // WHEN the shared settings change
    await applyObject(master!, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'shared-settings', namespace, labels: { 'example.com/port': '6432' } },
      data: { hosts: '["db-2.example"]' },
    } as KubeObject);

    // THEN the instance's object follows
    await eventually(
      'the applied ConfigMap to carry the new values',
      async () => {
        const live = (await read('ConfigMap', 'app-settings', namespace)) as
          (KubeObject & { data: Record<string, string> }) | undefined;
        return live?.data.hosts === 'db-2.example' && live.data.port === '6432' ? live : undefined;
      },
      120_000,
    );
    // AND through an update of the instance, which Temporal lists under the instance's id
    const { temporal: server } = environment();
    const connection = await Connection.connect({ address: server.address });
    try {
      const client = new Client({
        connection,
        namespace: server.namespace,
        dataConverter: {
          payloadCodecs: [payloadCodec({ payloadKeys: parsePayloadKeys(settings.payloadKeys) })],
        },
      });
      const updates = await eventually(
        'the update workflow of the instance to have succeeded',
        async () => {
          const runs: { workflowId: string; type: string }[] = [];
          for await (const run of client.workflow.list({
            query: `OsbInstanceId = "${instanceId}" AND OsbOperation = "update" AND OsbState = "succeeded"`,
          }))
            runs.push({ workflowId: run.workflowId, type: run.type });
          return runs.length > 0 ? runs : undefined;
        },
        120_000,
      );
      expect(updates).toEqual([{ workflowId: `instance/${instanceId}`, type: 'updateWorkflow' }]);
    } finally {
      await connection.close();
    }
    // AND the record's last operation is that update, succeeded, on the ConfigMap's new version
    const shared = await readObject(master!, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'shared-settings',
      namespace,
    });
    const after = await eventually('the record to tell of the update', async () => {
      const record = await recordOf();
      return record?.status?.operation === 'update' && record.status.state === 'succeeded'
        ? record
        : undefined;
    });
    expect(after.status?.references?.find((r) => r.name === 'shared-settings')?.resourceVersion).toBe(
      shared?.metadata.resourceVersion,
    );
    expect(after.spec.planId).toBe(PLAN_ID);
  }, 300_000);

  test('GIVEN the worker is down WHEN the referenced ConfigMap changes THEN the worker, started again, updates the instance', async () => {
    expect(provisioned).toBeDefined();
    const namespace = instanceNamespace(provisioned!);
    // GIVEN the landscape stopped
    await system.stop();
    logFiles.push(system.logFile);
    // WHEN the shared settings change meanwhile
    await applyObject(master!, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'shared-settings', namespace, labels: { 'example.com/port': '6432' } },
      data: { hosts: '["db-3.example"]' },
    } as KubeObject);
    // AND the landscape starts again
    system = await startProcess('all', settings);
    osb = osbClient(system.url);
    // THEN the worker learns from the record what the instance read, and the object follows
    await eventually(
      'the applied ConfigMap to carry the value changed while the worker was down',
      async () => {
        const live = (await read('ConfigMap', 'app-settings', namespace)) as
          (KubeObject & { data: Record<string, string> }) | undefined;
        return live?.data.hosts === 'db-3.example' ? live : undefined;
      },
      120_000,
    );
  }, 300_000);

  test('GIVEN the run THEN the referenced Secret’s value is in no history, search attribute, memo, log, record or description', async () => {
    await system.stop();
    // The apiserver answers 429 while it first fills its cache of a kind no one has listed yet.
    const sweep = () =>
      sweepForSecrets({
        taskQueue: settings.taskQueue,
        payloadKeys: settings.payloadKeys,
        credentials: [
          ['the referenced Secret’s value', PASSWORD],
          ['the referenced Secret’s value, base64', Buffer.from(PASSWORD).toString('base64')],
        ],
        logFiles: [...logFiles, system.logFile],
        records: { master: master!, labelSelector: `${LABELS.serviceId}=${labelValue(SERVICE_ID)}` },
        texts: { 'last_operation descriptions': descriptions.join('\n') },
      });
    const result = await eventually('the sweep to read the run', async () => {
      try {
        return await sweep();
      } catch (err) {
        if (statusCodeOf(err) === 429) return undefined;
        throw err;
      }
    });
    expect(result.hits).toEqual([]);
    // The sweep read the run: both provisions', the dry run's and the bind's workflows, their payloads decoded.
    expect(result.executions).toBeGreaterThanOrEqual(4);
    expect(result.payloads).toBeGreaterThan(result.executions);
    const decoded = [...result.corpus.values()].join('\n');
    expect(decoded).toContain(PLAN_ID);
    expect(decoded).toContain('waiting for referenced object ConfigMap shared-settings');
  }, 300_000);
});
