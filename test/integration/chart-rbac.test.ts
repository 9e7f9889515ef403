/**
 * The chart's RBAC is enough, and no more than that: a broker and a worker whose only rights in the
 * master are the chart's ClusterRole (bound to a ServiceAccount, as the chart binds it) provision,
 * bind, unbind and deprovision the PostgreSQL example plan on the real servers, generate and rotate
 * the secrets of the generated-secrets example (the rotation schedule's look over the instances
 * included), while that identity may not list Secrets nor touch resources of API groups the values
 * do not name. The chart's admission policy is installed too: the same identity's writes outside
 * the instances' namespaces and the registry's are refused by the apiserver, though RBAC grants them.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  AuthorizationV1Api,
  KubeConfig,
  RbacAuthorizationV1Api,
  type V1ClusterRole,
} from '@kubernetes/client-node';
import { clusterClientFromFile, type ClusterClient } from '../../src/kube/clients.js';
import { getRecord, patchRecord } from '../../src/kube/custom-objects.js';
import { isNotFound } from '../../src/kube/errors.js';
import { applyObject, deleteObject, ensureNamespace } from '../../src/kube/objects.js';
import { dropBoxNamespace } from '../../src/resources/names.js';
import {
  SFPLAN,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFPlan,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { clusters, environment, eventually, unique, untilNamespaceGone } from '../support/env.js';
import { findHelm, renderChart } from '../support/helm.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import {
  installCatalog,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
} from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';
/** The plan of examples/generated-secrets. */
const GENERATED_PLAN_ID = 'd0c9dbe9-eb7f-4e28-9f3f-8c9b4e084f34';

const env = environment();
const [master] = clusters() as [ClusterClient];
const rbac = master.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
const release = unique('rbac');
const account = `${release}-interoperator`;

let role: V1ClusterRole;
/** The chart's ValidatingAdmissionPolicy and its binding, as rendered. */
let admission: KubeObject[];
/** A namespace the inter-operator did not make for an instance, nor is told of. */
const outside = unique('outside');
/** A cluster with a worker of its own, whose drop box the landscape writes and empties. */
const ownWorkerCluster = unique('own');
const dropBox = dropBoxNamespace(env.namespace, ownWorkerCluster);
let chartIdentity: ClusterClient;
let system: SystemProcess;
let operator: { stop(): Promise<void> };
let osb: OsbClient;

/** A kubeconfig of the master for `token`, written to the run's folder. */
function kubeconfigWithToken(token: string): string {
  const admin = new KubeConfig();
  admin.loadFromFile(env.clusters[0]!.kubeconfigPath);
  const cluster = admin.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: account, token }],
    contexts: [{ name: account, cluster: cluster.name, user: account }],
    currentContext: account,
  });
  const file = path.join(env.workDir, `${account}.kubeconfig`);
  writeFileSync(file, kc.exportConfig(), { mode: 0o600 });
  return file;
}

beforeAll(async () => {
  const helm = findHelm();
  if (!helm) throw new Error('no helm binary: run `npm run build:binaries` (or set INTEROP_HELM)');
  // The chart's ClusterRole and binding as it renders them, for a release in the registry's namespace.
  const manifests = renderChart(helm, {
    release,
    namespace: env.namespace,
    set: [`clusterWorkerIdentities={${ownWorkerCluster}}`],
  });
  role = manifests.find((m) => m.kind === 'ClusterRole') as unknown as V1ClusterRole;
  expect(role.metadata?.name).toBe(account);
  await master.core.createNamespacedServiceAccount({
    namespace: env.namespace,
    body: { metadata: { name: account } },
  });
  await rbac.createClusterRole({ body: role });
  admission = manifests.filter((m) =>
    m.kind.startsWith('ValidatingAdmissionPolicy'),
  ) as unknown as KubeObject[];
  expect(admission.map((m) => m.kind).sort()).toEqual([
    'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicyBinding',
  ]);
  for (const m of admission) await applyObject(master, m);
  await ensureNamespace(master, outside);
  await ensureNamespace(master, dropBox);
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: account },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: account },
      subjects: [{ kind: 'ServiceAccount', name: account, namespace: env.namespace }],
    },
  });
  const issued = await master.core.createNamespacedServiceAccountToken({
    name: account,
    namespace: env.namespace,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const kubeconfig = kubeconfigWithToken(issued.status!.token);
  chartIdentity = clusterClientFromFile('1', kubeconfig);

  operator = await startOperator();
  await installCatalog('examples/postgresql', 'examples/generated-secrets');
  system = await startProcess(
    'all',
    await systemSettings({
      INTEROP_MASTER_KUBECONFIG: kubeconfig,
      INTEROP_SECRET_ROTATION_CHECK_SECONDS: '1',
    }),
  );
  osb = osbClient(system.url);
});

afterAll(async () => {
  await system?.stop();
  await operator?.stop();
  for (const m of [...(admission ?? [])].reverse())
    await deleteObject(master, {
      apiVersion: m.apiVersion,
      kind: m.kind,
      name: m.metadata.name,
    });
  for (const remove of [
    () => master.core.deleteNamespace({ name: outside }),
    () => master.core.deleteNamespace({ name: dropBox }),
    () => rbac.deleteClusterRoleBinding({ name: account }),
    () => rbac.deleteClusterRole({ name: account }),
    () => master.core.deleteNamespacedServiceAccount({ name: account, namespace: env.namespace }),
  ]) {
    await remove().catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  }
});

describe("the chart's RBAC", () => {
  test('GIVEN only the ClusterRole THEN provision, bind, unbind and deprovision succeed', async () => {
    const instanceId = randomUUID();
    const bindingId = randomUUID();
    const instancePath = `/v2/service_instances/${instanceId}`;
    const accepted = await osb(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID, { foo: 'bar' }),
    );
    expect(accepted.status).toBe(202);
    const provisioned = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
    );
    expect(provisioned.body).toMatchObject({ state: 'succeeded' });

    // The bind reads the operator's credentials Secret and writes the response into one of its own.
    const bindingPath = `${instancePath}/service_bindings/${bindingId}`;
    const bound = await osb('PUT', bindingPath, { service_id: SERVICE_ID, plan_id: PLAN_ID });
    expect(bound.status).toBe(201);
    expect((bound.body.credentials as Record<string, string>).password).toMatch(/.{16,}/);
    expect((await osb('DELETE', `${bindingPath}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`)).status).toBe(
      200,
    );

    const deleting = await osb(
      'DELETE',
      `${instancePath}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}&accepts_incomplete=true`,
    );
    expect(deleting.status).toBe(202);
    const gone = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
    );
    expect(gone.body).toMatchObject({ state: 'succeeded' });
    await untilNamespaceGone(master, `sf-${instanceId}`);
  });

  test('GIVEN only the ClusterRole THEN generated secrets are made, rotated by rotateAfter, and removed', async () => {
    // A copy of the example plan whose secrets are rotated once they are 2 s old.
    const example = (await getRecord<SFPlan>(master, SFPLAN, env.namespace, GENERATED_PLAN_ID))!;
    const planId = randomUUID();
    await applyObject(master, {
      apiVersion: SFPLAN.apiVersion,
      kind: SFPLAN.kind,
      metadata: { name: planId, namespace: env.namespace },
      spec: { ...example.spec, id: planId, name: 'rbac-rotating', rotateAfter: '2s' },
    } as KubeObject);
    await eventually('the plan in the catalog', async () =>
      JSON.stringify((await osb('GET', '/v2/catalog')).body).includes(planId) ? true : undefined,
    );
    const instanceId = randomUUID();
    const instancePath = `/v2/service_instances/${instanceId}`;
    const accepted = await osb(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, planId, {}),
    );
    expect(accepted.status).toBe(202);
    const provisioned = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
    );
    expect(provisioned.body).toMatchObject({ state: 'succeeded' });
    await eventually(
      'a rotation by rotateAfter',
      async () => {
        const record = await getRecord<SFServiceInstance>(
          master,
          SFSERVICEINSTANCE,
          `sf-${instanceId}`,
          instanceId,
        );
        const rotated = record?.status?.generatedSecrets?.some((g) => g.version >= 2);
        return rotated && record?.status?.lastAction?.state === 'succeeded' ? true : undefined;
      },
      60_000,
    );
    await patchRecord(master, SFPLAN, env.namespace, planId, { spec: { rotateAfter: '3650d' } });
    // A rotation the schedule started before the plan changed holds the instance: the deletion is
    // refused with 422 ConcurrencyError meanwhile, and a platform sends it again.
    const deleting = await eventually(
      'the deletion accepted',
      async () => {
        const res = await osb(
          'DELETE',
          `${instancePath}?service_id=${SERVICE_ID}&plan_id=${planId}&accepts_incomplete=true`,
        );
        if (res.status === 422 && res.body.error === 'ConcurrencyError') return undefined;
        return res;
      },
      60_000,
    );
    expect(deleting.status).toBe(202);
    const gone = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
      120_000,
    );
    expect(gone.body).toMatchObject({ state: 'succeeded' });
    await untilNamespaceGone(master, `sf-${instanceId}`);
  });

  test('GIVEN the same identity THEN it may not list Secrets nor touch groups the values do not name', async () => {
    await expect(chartIdentity.core.listNamespacedSecret({ namespace: env.namespace })).rejects.toMatchObject(
      {
        code: 403,
      },
    );
    await expect(chartIdentity.core.listSecretForAllNamespaces()).rejects.toMatchObject({ code: 403 });
    await expect(chartIdentity.objects.list('apps/v1', 'Deployment', env.namespace)).rejects.toMatchObject({
      code: 403,
    });
    // ...while it reads a Secret by name (a cluster's kubeconfig).
    const registered = await chartIdentity.custom.listNamespacedCustomObject({
      group: 'resource.servicefabrik.io',
      version: 'v1alpha1',
      plural: 'sfclusters',
      namespace: env.namespace,
    });
    const secretRef = (registered as { items: { spec: { secretRef: string } }[] }).items[0]!.spec.secretRef;
    const secret = await chartIdentity.core.readNamespacedSecret({
      name: secretRef,
      namespace: env.namespace,
    });
    expect(secret.data?.kubeconfig).toBeDefined();
  });

  test("GIVEN the admission policy THEN the same identity may not write a Secret, nor any object, outside the instances' namespaces, nor delete a namespace it did not make", async () => {
    const secret = { metadata: { name: 'planted', namespace: outside }, stringData: { a: 'b' } };
    // The policy takes a moment to reach the apiserver's admission.
    const refused = await eventually('the policy in force', async () => {
      try {
        await chartIdentity.core.createNamespacedSecret({ namespace: outside, body: secret });
      } catch (err) {
        if ((err as { code?: number }).code === 403) return err as { body?: unknown };
        throw err;
      }
      await master.core.deleteNamespacedSecret({ name: 'planted', namespace: outside });
      return undefined;
    });
    expect(String(refused.body)).toContain(
      `the inter-operator writes only in the namespaces of instances (labelled interoperator.servicefabrik.io/instance-namespace=true), the registry namespace, rbac.allowedNamespaces and the drop boxes, not in namespace ${outside}`,
    );
    // The refusal is the policy's: RBAC grants the write.
    const review = await master.kubeConfig.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${env.namespace}:${account}`,
          resourceAttributes: { namespace: outside, verb: 'create', resource: 'secrets' },
        },
      },
    });
    expect(review.status?.allowed).toBe(true);
    await expect(
      applyObject(chartIdentity, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'planted', namespace: outside },
      } as KubeObject),
    ).rejects.toMatchObject({ code: 403 });
    await expect(chartIdentity.core.deleteNamespace({ name: outside })).rejects.toMatchObject({ code: 403 });
    expect(await master.core.readNamespace({ name: outside })).toBeDefined();
    // ...while the registry's namespace stays writable (the schedulers' state), and the instances' are
    // shown writable by the lifecycle above.
    const written = await chartIdentity.core.createNamespacedConfigMap({
      namespace: env.namespace,
      body: { metadata: { name: unique('allowed') } },
    });
    await master.core.deleteNamespacedConfigMap({ name: written.metadata!.name!, namespace: env.namespace });
    // ...and so do the drop boxes of the clusters with workers of their own: what the landscape moves on and takes out
    const left = await chartIdentity.core.createNamespacedSecret({
      namespace: dropBox,
      body: { metadata: { name: unique('handed-over') }, stringData: { a: 'b' } },
    });
    await chartIdentity.core.deleteNamespacedSecret({ name: left.metadata!.name!, namespace: dropBox });
  });
});
