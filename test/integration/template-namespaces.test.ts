/**
 * The namespaces a plan's templates name, on the real servers: an object to apply, or a reference
 * (`getValueFrom`) to read, outside the instance's own namespace is refused unless the plan's
 * SFService lists that namespace in `spec.allowedNamespaces`; the registry's namespace and another
 * instance's are refused even when listed. A platform's parameters can only pick a namespace, never
 * widen the list. A refusal fails the operation, saying how the service's owner allows the
 * namespace, before anything is applied.
 */
import { randomUUID } from 'node:crypto';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import { patchRecordStatus } from '../../src/kube/custom-objects.js';
import { isNotFound } from '../../src/kube/errors.js';
import { applyObject, ensureNamespace, readObject } from '../../src/kube/objects.js';
import { instanceNamespace, LABELS, labelValue } from '../../src/resources/names.js';
import { SFCLUSTER, SFPLAN, SFSERVICE, type KubeObject } from '../../src/resources/types.js';
import { removeRegistry } from '../support/clusters.js';
import { clusters, environment, eventually, unique } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { startProcess, systemSettings, type SystemProcess } from '../support/system.js';

const env = environment();
const [master] = clusters();
const registry = unique('tmplns');
const SERVICE_ID = randomUUID();
/** A plan that applies a ConfigMap in its own namespace and one in the namespace a parameter names. */
const APPLY_PLAN_ID = randomUUID();
/** A plan whose ConfigMap reads a value (getValueFrom) from a ConfigMap in the namespace a parameter names. */
const REFERENCE_PLAN_ID = randomUUID();
/** A namespace the service allows. */
const allowed = unique('allowed');
/** A namespace the service does not list. */
const unlisted = unique('unlisted');
/** The name of the ConfigMap the apply plan puts in the parameter's namespace: this run's own. */
const intruder = unique('intruder');
/** Another instance's namespace, listed by the service all the same. */
const otherInstance = instanceNamespace(randomUUID());

let system: SystemProcess;
let osb: OsbClient;

const STATUS = 'provision:\n  state: succeeded\ndeprovision:\n  state: succeeded\n';

function plan(id: string, name: string, provision: string): KubeObject {
  return {
    apiVersion: SFPLAN.apiVersion,
    kind: SFPLAN.kind,
    metadata: { name: id, namespace: registry, labels: { serviceId: SERVICE_ID, planId: id } },
    spec: {
      id,
      name,
      description: name,
      serviceId: SERVICE_ID,
      free: true,
      bindable: false,
      manager: { async: true },
      // A failure retried rather than failed at once ends at this deadline.
      maximum_polling_duration: 30,
      templates: [
        { action: 'provision', type: 'mustache', content: provision },
        { action: 'status', type: 'mustache', content: STATUS },
      ],
    },
  } as KubeObject;
}

async function provision(instanceId: string, planId: string, parameters: Record<string, unknown>) {
  const path = `/v2/service_instances/${instanceId}`;
  const accepted = await osb(
    'PUT',
    `${path}?accepts_incomplete=true`,
    provisionBody(SERVICE_ID, planId, parameters),
  );
  expect([accepted.status, accepted.body]).toEqual([
    202,
    expect.objectContaining({ operation: expect.any(String) }),
  ]);
  const settled = await untilSettled(
    osb,
    `${path}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
    120_000,
  );
  return settled.body as { state?: string; description?: string };
}

/** The ConfigMaps labelled with the instance, wherever they are, as `namespace/name`. */
async function configMapsOf(instanceId: string): Promise<string[]> {
  const found = await master!.core.listConfigMapForAllNamespaces({
    labelSelector: `${LABELS.instanceId}=${labelValue(instanceId)}`,
  });
  return found.items.map((c) => `${c.metadata!.namespace}/${c.metadata!.name}`).sort();
}

const configMap = (namespace: string, name: string, data: Record<string, string>): KubeObject =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data }) as KubeObject;

beforeAll(async () => {
  await registerCluster(master!, registry, env.clusters[0]!.id, env.clusters[0]!.kubeconfigPath);
  await patchRecordStatus(master!, SFCLUSTER, registry, env.clusters[0]!.id, { phase: 'running' });
  await applyObject(master!, {
    apiVersion: SFSERVICE.apiVersion,
    kind: SFSERVICE.kind,
    metadata: { name: SERVICE_ID, namespace: registry },
    spec: {
      id: SERVICE_ID,
      name: `namespaces-${SERVICE_ID}`,
      description: 'a service whose owner allows one namespace besides the instances’',
      bindable: false,
      // The registry's and another instance's namespace are listed too: listing never opens them.
      allowedNamespaces: [allowed, registry, otherInstance],
    },
  } as KubeObject);
  await applyObject(
    master!,
    plan(
      APPLY_PLAN_ID,
      'apply-elsewhere',
      [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: marker',
        'data:',
        '  by: "{{instance.metadata.name}}"',
        '---',
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        `  name: ${intruder}`,
        '  namespace: "{{instance.spec.parameters.ns}}"',
        'data:',
        '  by: "{{instance.metadata.name}}"',
        '',
      ].join('\n'),
    ),
  );
  await applyObject(
    master!,
    plan(
      REFERENCE_PLAN_ID,
      'read-elsewhere',
      [
        'apiVersion: v1',
        'kind: ConfigMap',
        'metadata:',
        '  name: reader',
        'data:',
        '  read:',
        '    getValueFrom:',
        '      kind: ConfigMap',
        '      name: shared-settings',
        '      namespace: "{{instance.spec.parameters.ns}}"',
        "      path: '{.data.value}'",
        '',
      ].join('\n'),
    ),
  );
  for (const namespace of [allowed, unlisted]) {
    await ensureNamespace(master!, namespace);
    await applyObject(master!, configMap(namespace, 'shared-settings', { value: `from ${namespace}` }));
  }
  system = await startProcess('all', await systemSettings({ INTEROP_NAMESPACE: registry }));
  osb = osbClient(system.url);
  await eventually(
    'the plans in the catalog',
    async () => {
      const text = JSON.stringify((await osb('GET', '/v2/catalog')).body);
      return text.includes(APPLY_PLAN_ID) && text.includes(REFERENCE_PLAN_ID) ? true : undefined;
    },
    60_000,
  );
});

afterAll(async () => {
  await system?.stop();
  await removeRegistry(master!, registry).catch(() => undefined);
  for (const namespace of [allowed, unlisted])
    await master!.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  // What a broker that let the parameter through would have left there.
  await master!.core
    .deleteNamespacedConfigMap({ name: intruder, namespace: 'kube-system' })
    .catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
});

describe('namespaces a template names', () => {
  test('GIVEN a plan whose object takes its namespace from a parameter WHEN a tenant names kube-system THEN the operation fails saying how the service owner allows a namespace, and nothing is applied anywhere', async () => {
    const instanceId = randomUUID();
    const { state, description } = await provision(instanceId, APPLY_PLAN_ID, { ns: 'kube-system' });
    expect(state).toBe('failed');
    expect(description).toContain(`ConfigMap ${intruder} in namespace kube-system`);
    expect(description).toContain(`spec.allowedNamespaces of SFService ${SERVICE_ID}`);
    expect(
      await readObject(master!, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        name: intruder,
        namespace: 'kube-system',
      }),
    ).toBeUndefined();
    // Refused before anything is applied: not even the ConfigMap of its own namespace.
    expect(await configMapsOf(instanceId)).toEqual([]);
  });

  test('GIVEN the service lists a namespace WHEN a tenant names it THEN the object is applied there', async () => {
    const instanceId = randomUUID();
    const { state } = await provision(instanceId, APPLY_PLAN_ID, { ns: allowed });
    expect(state).toBe('succeeded');
    expect(await configMapsOf(instanceId)).toEqual(
      [`${allowed}/${intruder}`, `${instanceNamespace(instanceId)}/marker`].sort(),
    );
  });

  test.each([
    ["the registry's", () => registry, "the registry's namespace"],
    ["another instance's", () => otherInstance, 'the namespace of another instance'],
  ])(
    'GIVEN the service lists %s namespace WHEN a tenant names it THEN it is refused all the same',
    async (_which, namespace, refusal) => {
      const instanceId = randomUUID();
      const { state, description } = await provision(instanceId, APPLY_PLAN_ID, { ns: namespace() });
      expect(state).toBe('failed');
      expect(description).toContain(refusal);
      expect(await configMapsOf(instanceId)).toEqual([]);
    },
  );

  test('GIVEN a reference whose namespace comes from a parameter WHEN it names an unlisted namespace THEN it is refused, and a listed one is read', async () => {
    const refused = randomUUID();
    const outcome = await provision(refused, REFERENCE_PLAN_ID, { ns: unlisted });
    expect(outcome.state).toBe('failed');
    expect(outcome.description).toContain(`a reference to ConfigMap in namespace ${unlisted}`);
    expect(outcome.description).toContain(`spec.allowedNamespaces of SFService ${SERVICE_ID}`);
    expect(await configMapsOf(refused)).toEqual([]);

    const read = randomUUID();
    expect((await provision(read, REFERENCE_PLAN_ID, { ns: allowed })).state).toBe('succeeded');
    const reader = await readObject(master!, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'reader',
      namespace: instanceNamespace(read),
    });
    expect((reader as KubeObject & { data: Record<string, string> }).data.read).toBe(`from ${allowed}`);
  });
});
