/**
 * Generated secrets on the real servers, with the example plan examples/generated-secrets (an
 * admin password, a CA, and a server certificate the CA signs): a provision generates each once
 * into `<secretName>-v1` and the operator's resource names those Secrets; an update keeps every
 * value; a rotation through the admin API makes `-v2`, which the resource then names, while `-v1`
 * stays for the binding made before it and goes once that binding is unbound. No generated value
 * reaches Temporal's histories, the records, the Events or the logs; an SFSecret that asks for
 * something unknown fails the provision at once with a description.
 */
import { X509Certificate, randomUUID } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { getRecord } from '../../src/kube/custom-objects.js';
import { applyObject, ensureNamespace, readObject } from '../../src/kube/objects.js';
import { LABELS, instanceNamespace, instanceWorkflowId, resourceName } from '../../src/resources/names.js';
import {
  SFPLAN,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type SFPlan,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../../src/resources/types.js';
import { ADMIN, callAdmin, POSTGRESQL_SERVICE_ID } from '../support/admin.js';
import { clusters, environment, eventually, temporalClient, unique } from '../support/env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { sweepForSecrets, type Credential } from '../support/secrets-sweep.js';
import { installCatalog } from '../../dev/catalog.js';
import {
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';

const SERVICE_ID = POSTGRESQL_SERVICE_ID;
/** The plan of examples/generated-secrets. */
const PLAN_ID = 'd0c9dbe9-eb7f-4e28-9f3f-8c9b4e084f34';

type Postgresql = KubeObject & {
  spec: {
    tls: { secretName: string; caSecretName: string };
    env: { name: string; valueFrom: { secretKeyRef: { name: string; key: string } } }[];
  };
};

describe('generated secrets', () => {
  const [master] = clusters();
  const instanceId = randomUUID();
  const bindingId = randomUUID();
  const namespace = instanceNamespace(instanceId);
  const name = `sapcp-${resourceName(instanceId)}`;
  const registry = unique('gensecrets');
  let settings: SystemSettings;
  let system: SystemProcess | undefined;
  let operator: { stop(): Promise<void> } | undefined;
  let osb: OsbClient;
  /** Every generated value seen, for the sweep. */
  const credentials: Credential[] = [];
  /** The descriptions clients were given. */
  const texts: Record<string, string> = {};

  beforeAll(async () => {
    operator = await startOperator();
    settings = await systemSettings({
      INTEROP_ADMIN_USERNAME: ADMIN.username,
      INTEROP_ADMIN_PASSWORD: ADMIN.password,
      // A registry of its own, whose rotation schedule looks every second: a plan's short
      // rotateAfter shows within the test.
      INTEROP_NAMESPACE: registry,
      INTEROP_SECRET_ROTATION_CHECK_SECONDS: '1',
    });
    system = await startProcess('all', settings);
    osb = osbClient(system.url);
    await ensureNamespace(master!, registry);
    await installCatalog(master!, registry, ['examples/postgresql', 'examples/generated-secrets']);
    await eventually('the plan in the catalog', async () => {
      const res = await osb('GET', '/v2/catalog');
      return JSON.stringify(res.body).includes(PLAN_ID) ? true : undefined;
    });
  }, 120_000);
  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  const admin = (method: 'GET' | 'POST', path: string) => callAdmin(system!.url, method, path);

  const secret = async (secretName: string): Promise<V1Secret | undefined> => {
    try {
      return await master!.core.readNamespacedSecret({ namespace, name: secretName });
    } catch {
      return undefined;
    }
  };
  const value = (s: V1Secret | undefined, key: string): string =>
    Buffer.from(s?.data?.[key] ?? '', 'base64').toString('utf8');
  const record = async () =>
    (await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, namespace, resourceName(instanceId)))!;
  const postgresql = async () =>
    (await readObject(master!, { apiVersion: 'acid.zalan.do/v1', kind: 'postgresql', name, namespace })) as
      Postgresql | undefined;
  const passwordSecretOf = (pg: Postgresql | undefined) =>
    pg?.spec.env.find((e) => e.name === 'ADMIN_PASSWORD')?.valueFrom.secretKeyRef.name;

  /** Keeps a generated value (and its base64, as a Secret holds it) for the sweep. */
  const remember = (what: string, text: string) => {
    credentials.push([what, text], [`${what} (base64)`, Buffer.from(text).toString('base64')]);
  };
  /** A private key's most telling part: a line from the middle of its PEM body. */
  const keyLine = (pem: string) => {
    const lines = pem.split('\n').filter((l) => l && !l.startsWith('-----'));
    return lines[Math.floor(lines.length / 2)]!;
  };

  async function settle(path: string, operation: unknown, what: string) {
    const done = await untilSettled(
      osb,
      `${path}/last_operation?operation=${encodeURIComponent(String(operation))}`,
      120_000,
    );
    texts[what] = JSON.stringify(done.body);
    return done;
  }

  /** Runs a rotation through the admin API and waits for its end. */
  async function rotate(secretName: string) {
    const res = await admin('POST', `/admin/instances/${instanceId}/secrets/${secretName}/rotate`);
    expect(res.status).toBe(202);
    const started = res.body as { runId: string; action: string; workflowId: string };
    expect(started).toMatchObject({ action: 'x-rotate-secret', workflowId: instanceWorkflowId(instanceId) });
    const ended = await eventually(
      `the rotation of ${secretName} to end`,
      async () => {
        const state = await admin(
          'GET',
          `/admin/instances/${instanceId}/actions/x-rotate-secret/${started.runId}`,
        );
        expect(state.status).toBe(200);
        return state.body.state === 'in progress' ? undefined : state.body;
      },
      120_000,
    );
    texts[`rotation of ${secretName}`] = JSON.stringify(ended);
    return { started, ended };
  }

  test('a provision generates each secret once, as -v1, and the operator’s resource names those Secrets', async () => {
    // WHEN the instance is provisioned
    const path = `/v2/service_instances/${instanceId}`;
    const res = await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE_ID, PLAN_ID, {}));
    expect(res.status).toBe(202);
    const done = await settle(path, res.body.operation, 'provision');
    expect(done.body.state).toBe('succeeded');

    // THEN each generated secret is the Secret <secretName>-v1 in the instance's namespace,
    // labelled with the instance, the SFSecret and the version, and owned by the instance's record
    const instance = await record();
    const [password, ca, tls] = await Promise.all(
      ['admin', 'ca', 'tls'].map((s) => secret(`${name}-${s}-v1`)),
    );
    for (const [s, generated] of [
      [password, 'password'],
      [ca, 'ca'],
      [tls, 'tls'],
    ] as const) {
      expect(s?.metadata?.labels).toMatchObject({
        [LABELS.instanceId]: instanceId,
        [LABELS.generatedSecret]: generated,
        [LABELS.generatedVersion]: '1',
      });
      expect(s?.metadata?.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'SFServiceInstance', uid: instance.metadata.uid }),
      ]);
    }
    expect(value(password, 'password')).toMatch(/^[A-Za-z0-9]{40}$/);
    expect(tls?.type).toBe('kubernetes.io/tls');
    expect([password?.immutable, ca?.immutable, tls?.immutable]).toEqual([true, true, true]);
    remember('password v1', value(password, 'password'));
    remember('CA key v1', keyLine(value(ca, 'tls.key')));
    remember('TLS key v1', keyLine(value(tls, 'tls.key')));

    // AND the certificate verifies against its CA, which is the generated one
    const caCert = new X509Certificate(value(ca, 'tls.crt'));
    const cert = new X509Certificate(value(tls, 'tls.crt'));
    expect(caCert.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(value(tls, 'ca.crt')).toBe(value(ca, 'tls.crt'));
    expect(cert.subject).toContain(`CN=${name}`);
    expect(cert.subjectAltName).toContain(`DNS:${name}.${namespace}.svc`);

    // AND the operator's resource names the -v1 Secrets
    const pg = await postgresql();
    expect(pg?.spec.tls).toMatchObject({ secretName: `${name}-tls-v1`, caSecretName: `${name}-ca-v1` });
    expect(passwordSecretOf(pg)).toBe(`${name}-admin-v1`);
    // AND the record keeps the current versions: names, never values
    expect(instance.status?.generatedSecrets).toEqual([
      expect.objectContaining({
        name: 'password',
        type: 'password',
        version: 1,
        secret: `${name}-admin-v1`,
        versions: [1],
      }),
      expect.objectContaining({
        name: 'ca',
        type: 'certificate',
        version: 1,
        secret: `${name}-ca-v1`,
        versions: [1],
      }),
      expect.objectContaining({
        name: 'tls',
        type: 'certificate',
        version: 1,
        secret: `${name}-tls-v1`,
        versions: [1],
      }),
    ]);
  });

  test('an update renders again and keeps every generated value', async () => {
    const before = await Promise.all(['admin', 'ca', 'tls'].map((s) => secret(`${name}-${s}-v1`)));
    const path = `/v2/service_instances/${instanceId}`;
    const res = await osb('PATCH', `${path}?accepts_incomplete=true`, {
      service_id: SERVICE_ID,
      parameters: { note: 'after the update' },
    });
    expect(res.status).toBe(202);
    expect((await settle(path, res.body.operation, 'update')).body.state).toBe('succeeded');
    const after = await Promise.all(['admin', 'ca', 'tls'].map((s) => secret(`${name}-${s}-v1`)));
    expect(after.map((s) => s?.data)).toEqual(before.map((s) => s?.data));
    expect(await secret(`${name}-admin-v2`)).toBeUndefined();
    expect((await record()).status?.generatedSecrets?.map((g) => g.version)).toEqual([1, 1, 1]);
    expect(passwordSecretOf(await postgresql())).toBe(`${name}-admin-v1`);
  });

  test('a rotation makes -v2, which the resource then names; -v1 stays while the binding made before exists', async () => {
    // GIVEN a binding made with version 1
    const bindPath = `/v2/service_instances/${instanceId}/service_bindings/${bindingId}`;
    const bind = await osb('PUT', bindPath, { service_id: SERVICE_ID, plan_id: PLAN_ID });
    expect(bind.status).toBe(201);
    texts.bind = JSON.stringify(bind.body);
    const binding = await getRecord<SFServiceBinding>(
      master!,
      SFSERVICEBINDING,
      namespace,
      resourceName(bindingId),
    );
    expect(binding?.status?.generatedSecrets).toEqual(
      expect.arrayContaining([{ name: 'password', version: 1, secret: `${name}-admin-v1` }]),
    );
    const v1 = value(await secret(`${name}-admin-v1`), 'password');

    // WHEN an admin rotates the password
    const { ended } = await rotate('password');

    // THEN it succeeded, and version 2 is a new value the resource names
    expect(ended).toMatchObject({ state: 'succeeded', action: 'x-rotate-secret' });
    expect(ended.description).toContain(`Secret ${name}-admin-v2`);
    const v2 = value(await secret(`${name}-admin-v2`), 'password');
    remember('password v2', v2);
    expect(v2).toMatch(/^[A-Za-z0-9]{40}$/);
    expect(v2).not.toBe(v1);
    expect(passwordSecretOf(await postgresql())).toBe(`${name}-admin-v2`);
    // AND the other secrets are untouched
    expect((await postgresql())?.spec.tls.secretName).toBe(`${name}-tls-v1`);
    // AND version 1 stays, kept for the binding
    expect(value(await secret(`${name}-admin-v1`), 'password')).toBe(v1);
    const status = (await record()).status!;
    expect(status.generatedSecrets?.find((g) => g.name === 'password')).toMatchObject({
      version: 2,
      secret: `${name}-admin-v2`,
      versions: [1, 2],
    });
    // AND the record tells of the rotation apart from the last OSB operation
    expect(status.lastAction).toMatchObject({ operation: 'x-rotate-secret', state: 'succeeded' });
    expect(status).toMatchObject({ operation: 'update', state: 'succeeded' });

    // WHEN the binding is unbound THEN version 1 goes
    const unbind = await osb('DELETE', `${bindPath}?service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`);
    expect(unbind.status).toBe(200);
    await eventually('version 1 to be deleted', async () =>
      (await secret(`${name}-admin-v1`)) === undefined ? true : undefined,
    );
    expect((await record()).status?.generatedSecrets?.find((g) => g.name === 'password')?.versions).toEqual([
      2,
    ]);
    expect(value(await secret(`${name}-admin-v2`), 'password')).toBe(v2);
  });

  test('a rotation with no binding left removes the previous version at once; the new certificate verifies against the CA', async () => {
    const { ended } = await rotate('tls');
    expect(ended).toMatchObject({ state: 'succeeded' });
    expect(ended.description).toContain(`removed ${name}-tls-v1`);
    expect(await secret(`${name}-tls-v1`)).toBeUndefined();
    const tls = await secret(`${name}-tls-v2`);
    remember('TLS key v2', keyLine(value(tls, 'tls.key')));
    const caCert = new X509Certificate(value(await secret(`${name}-ca-v1`), 'tls.crt'));
    expect(new X509Certificate(value(tls, 'tls.crt')).verify(caCert.publicKey)).toBe(true);
    expect((await postgresql())?.spec.tls.secretName).toBe(`${name}-tls-v2`);
  });

  test('a rotation of a secret the instance does not have, or of an unknown instance, gets a clear 404', async () => {
    const none = await admin('POST', `/admin/instances/${instanceId}/secrets/nope/rotate`);
    expect(none.status).toBe(404);
    expect(none.body.description).toBe(
      'The service instance has no generated secret "nope"; its generated secrets are password, ca, tls.',
    );
    const unknown = await admin('POST', `/admin/instances/${randomUUID()}/secrets/password/rotate`);
    expect(unknown.status).toBe(404);
  });

  test('an SFSecret of an unknown type fails the provision at once, saying why', async () => {
    // GIVEN a plan whose provision template renders an SFSecret of a type there is none of
    const design = (await getRecord<SFPlan>(master!, SFPLAN, registry, PLAN_ID))!;
    const planId = randomUUID();
    const templates = design.spec.templates.map((t) =>
      t.action === 'provision'
        ? { ...t, content: t.content!.replace('type: password', 'type: passphrase') }
        : t,
    );
    await applyObject(master!, {
      apiVersion: SFPLAN.apiVersion,
      kind: SFPLAN.kind,
      metadata: { name: planId, namespace: registry },
      spec: { ...design.spec, id: planId, name: 'bad-secrets', templates },
    } as KubeObject);
    await eventually('the plan in the catalog', async () =>
      JSON.stringify((await osb('GET', '/v2/catalog')).body).includes(planId) ? true : undefined,
    );
    // WHEN an instance is provisioned THEN it fails with the SFSecret's problem
    const badId = randomUUID();
    const path = `/v2/service_instances/${badId}`;
    const res = await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE_ID, planId, {}));
    expect(res.status).toBe(202);
    const done = await settle(path, res.body.operation, 'bad provision');
    expect(done.body).toMatchObject({ state: 'failed' });
    expect(done.body.description).toContain(
      'SFSecret password: spec.type "passphrase" is not one of password, rsa, ssh, certificate',
    );
  });

  test('a plan’s rotateAfter rotates the generated secrets of its instances on its own, visibly in Temporal', async () => {
    // GIVEN a plan like the example whose generated secrets are rotated once they are 3 s old
    const example = (await getRecord<SFPlan>(master!, SFPLAN, registry, PLAN_ID))!;
    const planId = randomUUID();
    const plan = (rotateAfter: string) =>
      applyObject(master!, {
        apiVersion: SFPLAN.apiVersion,
        kind: SFPLAN.kind,
        metadata: { name: planId, namespace: registry },
        spec: { ...example.spec, id: planId, name: 'rotating', rotateAfter },
      } as KubeObject);
    await plan('3s');
    await eventually('the plan in the catalog', async () =>
      JSON.stringify((await osb('GET', '/v2/catalog')).body).includes(planId) ? true : undefined,
    );
    const id = randomUUID();
    const ns = instanceNamespace(id);
    const pgName = `sapcp-${resourceName(id)}`;
    const path = `/v2/service_instances/${id}`;
    const res = await osb('PUT', `${path}?accepts_incomplete=true`, provisionBody(SERVICE_ID, planId, {}));
    expect(res.status).toBe(202);
    expect((await settle(path, res.body.operation, 'rotating provision')).body.state).toBe('succeeded');
    const readRecord = async () =>
      (await getRecord<SFServiceInstance>(master!, SFSERVICEINSTANCE, ns, resourceName(id)))!;

    // WHEN time passes THEN a rotation started by the schedule succeeds, recorded as asked by rotateAfter
    const rotatedRecord = await eventually(
      'a scheduled rotation to succeed',
      async () => {
        const r = await readRecord();
        return r.status?.lastAction?.operation === 'x-rotate-secret' &&
          r.status.lastAction.state === 'succeeded'
          ? r
          : undefined;
      },
      60_000,
    );
    expect(rotatedRecord.status?.lastAction?.requestedBy).toBe('rotateAfter');
    // AND Temporal lists it by the instance and the operation, like the admin's
    const raw = await temporalClient();
    try {
      const { executions } = await raw.client.workflowService.listWorkflowExecutions({
        namespace: environment().temporal.namespace,
        query: `OsbInstanceId = "${id}" AND OsbOperation = "x-rotate-secret"`,
      });
      expect(executions.length).toBeGreaterThanOrEqual(1);
    } finally {
      await raw.close();
    }

    // WHEN the plan rotates no more and the last rotation has ended
    await plan('3650d');
    const settled = await eventually(
      'the rotations to settle',
      async () => {
        const before = await readRecord();
        if (before.status?.lastAction?.state === 'in progress') return undefined;
        // Quiet for longer than rotateAfter was: the worker's catalog has the new one.
        await new Promise((resolve) => setTimeout(resolve, 5000));
        const after = await readRecord();
        return JSON.stringify(after.status?.generatedSecrets) ===
          JSON.stringify(before.status?.generatedSecrets) && after.status?.lastAction?.state !== 'in progress'
          ? after
          : undefined;
      },
      60_000,
    );
    // THEN some secret moved on, each current version is what the resource names, and with no
    // binding only the current versions are kept
    const generated = settled.status!.generatedSecrets!;
    expect(Math.max(...generated.map((g) => g.version))).toBeGreaterThanOrEqual(2);
    for (const g of generated) expect(g.versions).toEqual([g.version]);
    const pg = (await readObject(master!, {
      apiVersion: 'acid.zalan.do/v1',
      kind: 'postgresql',
      name: pgName,
      namespace: ns,
    })) as Postgresql;
    const current = (n: string) => generated.find((g) => g.name === n)!.secret;
    expect(pg.spec.tls).toMatchObject({ secretName: current('tls'), caSecretName: current('ca') });
    expect(passwordSecretOf(pg)).toBe(current('password'));
    const secrets = await master!.core.listNamespacedSecret({
      namespace: ns,
      labelSelector: LABELS.generatedSecret,
    });
    expect(secrets.items.map((i) => i.metadata?.name).sort()).toEqual(generated.map((g) => g.secret).sort());
    for (const item of secrets.items) {
      const data = item.data ?? {};
      if (data.password) remember(`password of ${item.metadata?.name}`, value(item, 'password'));
      if (data['tls.key']) remember(`key of ${item.metadata?.name}`, keyLine(value(item, 'tls.key')));
    }
  });

  test('a deprovision leaves none of the instance’s generated Secrets behind', async () => {
    const path = `/v2/service_instances/${instanceId}`;
    const res = await osb(
      'DELETE',
      `${path}?accepts_incomplete=true&service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`,
    );
    expect(res.status).toBe(202);
    expect((await settle(path, res.body.operation, 'deprovision')).body.state).toBe('succeeded');
    await eventually('the generated Secrets to be gone', async () => {
      const left = await master!.core
        .listNamespacedSecret({ namespace, labelSelector: LABELS.generatedSecret })
        .then((l) => l.items.length)
        .catch(() => 0);
      return left === 0 ? true : undefined;
    });
  });

  test('no generated value reaches Temporal’s histories, the records, the Events or the logs', async () => {
    expect(credentials.length).toBeGreaterThanOrEqual(10);
    const result = await sweepForSecrets({
      taskQueue: settings.taskQueue,
      payloadKeys: settings.payloadKeys,
      credentials,
      logFiles: [system!.logFile],
      records: { master: master!, labelSelector: `${LABELS.instanceId}=${instanceId}` },
      eventNamespaces: [namespace],
      texts,
    });
    expect(result.hits).toEqual([]);
    // The sweep read the rotation's history and the instance's record (it could have found them)
    expect(
      [...result.corpus.keys()].some((k) => k.startsWith(`workflow ${instanceWorkflowId(instanceId)}`)),
    ).toBe(true);
    expect([...result.corpus.values()].some((text) => text.includes(`${name}-admin-v2`))).toBe(true);
  });
});
