/**
 * The certificates example (examples/certificates) end to end with a real operator: cert-manager's
 * own control loops against the run's master and a sister, a broker and worker in front, a platform
 * talking OSB. A provision makes a private CA per instance; a bind returns a certificate, its key
 * and the CA, which Node's X.509 code verifies; a bad SAN is refused before anything runs; a CA
 * issuer cert-manager cannot use fails the provision in cert-manager's words.
 */
import { X509Certificate, createPrivateKey, randomUUID } from 'node:crypto';
import { installCatalog } from '../../dev/catalog.js';
import { registerCluster } from '../../src/kube/cluster-registry.js';
import type { ClusterClient } from '../../src/kube/clients.js';
import { patchRecord, patchRecordStatus } from '../../src/kube/custom-objects.js';
import { applyObject, ensureNamespace } from '../../src/kube/objects.js';
import { SFCLUSTER, type KubeObject, type SFPlan } from '../../src/resources/types.js';
import { certManagerTool, startCertManager, type CertManager } from '../support/cert-manager.js';
import { clusters, environment, eventually, unique, untilGone } from '../support/env.js';
import { osbClient, provisionBody, provisionSettled, untilSettled, type OsbClient } from '../support/osb.js';
import { startProcess, systemSettings, type SystemProcess } from '../support/system.js';
import { describeWithTool } from '../support/tools.js';

const SERVICE_ID = '5b0f7c2e-2d8a-4e61-9a3f-0c6b1e2d4a10';
const PLAN_ID = '5b0f7c2e-2d8a-4e61-9a3f-0c6b1e2d4a11';
/** The same plan, placed by the label-selector scheduler on the sister labelled `certs=sister`. */
const SISTER_PLAN_ID = '5b0f7c2e-2d8a-4e61-9a3f-0c6b1e2d4a12';
/** The same plan whose CA Issuer names a Secret that never exists. */
const BROKEN_PLAN_ID = '5b0f7c2e-2d8a-4e61-9a3f-0c6b1e2d4a13';

const CERT_MANAGER = { group: 'cert-manager.io', version: 'v1' };

describeWithTool(certManagerTool())('the certificates service with cert-manager', () => {
  const all = clusters();
  const master = all[0]!;
  const sister = all[1]!;
  const env = environment();
  const sisterId = env.clusters[1]!.id;
  const registry = unique('certs');
  let certManager: CertManager;
  let system: SystemProcess;
  let osb: OsbClient;

  beforeAll(async () => {
    await ensureNamespace(master, registry);
    for (const c of env.clusters.slice(0, 2)) {
      await registerCluster(master, registry, c.id, c.kubeconfigPath);
      await patchRecordStatus(master, SFCLUSTER, registry, c.id, { phase: 'running' });
    }
    await patchRecord(master, SFCLUSTER, registry, sisterId, { spec: { labels: { certs: 'sister' } } });
    const [started] = await Promise.all([
      startCertManager(env.clusters.slice(0, 2), env.workDir),
      (async () => {
        const installed = await installCatalog(master, registry, ['examples/certificates']);
        const plan = installed.find((o) => o.kind === 'SFPlan') as SFPlan;
        const copy = (
          id: string,
          name: string,
          templates: SFPlan['spec']['templates'],
          context: Record<string, unknown> = {},
        ) =>
          applyObject(master, {
            apiVersion: plan.apiVersion,
            kind: plan.kind,
            metadata: { name: id, namespace: registry, labels: { serviceId: SERVICE_ID, planId: id } },
            spec: { ...plan.spec, id, name, templates, context: { ...plan.spec.context, ...context } },
          } as KubeObject);
        await copy(SISTER_PLAN_ID, 'private-ca-on-sister', [
          ...plan.spec.templates,
          { action: 'clusterSelector', type: 'gotemplate', content: 'certs=sister' },
        ]);
        await copy(
          BROKEN_PLAN_ID,
          'private-ca-broken-issuer',
          plan.spec.templates.map((t) =>
            t.action === 'provision'
              ? {
                  ...t,
                  content: t.content!.replace(
                    '{{- $caIssuerSecret := $caSecret }}',
                    '{{- $caIssuerSecret := "no-such-secret" }}',
                  ),
                }
              : t,
          ),
          // The issuer that cannot sign is given up on sooner than the example's default.
          { issuerGraceSeconds: 10 },
        );
      })(),
    ]);
    certManager = started;
    system = await startProcess(
      'all',
      await systemSettings({
        INTEROP_NAMESPACE: registry,
        INTEROP_PLAN_SCHEDULERS: `${SISTER_PLAN_ID}=label-selector`,
      }),
    );
    osb = osbClient(system.url);
    await eventually('the certificates plans in the catalog', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
      const ids = services?.flatMap((s) => s.plans.map((p) => p.id)) ?? [];
      return [PLAN_ID, SISTER_PLAN_ID, BROKEN_PLAN_ID].every((id) => ids.includes(id)) ? true : undefined;
    });
  }, 90_000);

  afterAll(async () => {
    await system?.stop();
    await certManager?.stop();
    await master.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  const instancePath = (id: string) => `/v2/service_instances/${id}`;
  const query = (planId: string) => `service_id=${SERVICE_ID}&plan_id=${planId}`;

  async function provision(planId: string) {
    const instanceId = randomUUID();
    const done = await provisionSettled(osb, instanceId, provisionBody(SERVICE_ID, planId));
    return { instanceId, done };
  }

  async function bind(instanceId: string, planId: string, parameters: Record<string, unknown>) {
    const bindingId = randomUUID();
    const res = await osb('PUT', `${instancePath(instanceId)}/service_bindings/${bindingId}`, {
      service_id: SERVICE_ID,
      plan_id: planId,
      parameters,
    });
    return { bindingId, res };
  }

  async function deprovision(instanceId: string, planId: string) {
    const deleting = await osb(
      'DELETE',
      `${instancePath(instanceId)}?${query(planId)}&accepts_incomplete=true`,
    );
    expect(deleting.status).toBe(202);
    const gone = await untilSettled(
      osb,
      `${instancePath(instanceId)}/last_operation?operation=${encodeURIComponent(String(deleting.body.operation))}`,
    );
    expect(gone.body.state).toBe('succeeded');
  }

  const readCm = (cluster: ClusterClient, plural: string, namespace: string, name: string) =>
    cluster.custom.getNamespacedCustomObject({ ...CERT_MANAGER, plural, namespace, name });
  const readSecret = (cluster: ClusterClient, namespace: string, name: string) =>
    cluster.core.readNamespacedSecret({ namespace, name });

  /** The bind's credentials: a certificate for `hosts` that the instance's CA signed, and its key. */
  function verifyCredentials(credentials: Record<string, string>, hosts: readonly string[]): X509Certificate {
    const cert = new X509Certificate(credentials['tls.crt']!);
    const ca = new X509Certificate(credentials['ca.crt']!);
    expect(ca.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkIssued(ca)).toBe(true);
    for (const host of hosts) expect(cert.checkHost(host)).toBeDefined();
    expect(cert.checkHost('elsewhere.example.com')).toBeUndefined();
    expect(cert.checkPrivateKey(createPrivateKey(credentials['tls.key']!))).toBe(true);
    return ca;
  }

  /** Provisions, binds and checks the credentials, refuses a bad SAN, unbinds and deprovisions on `cluster`. */
  async function lifecycle(planId: string, cluster: ClusterClient, other: ClusterClient) {
    const started = Date.now();
    let { instanceId, done } = await provision(planId);
    if (done.body.state === 'failed' && /the CA certificate failed/.test(String(done.body.description))) {
      // cert-manager's own issuance can fail when its caches lag under load (a CSR signed by a
      // private key it has replaced meanwhile), and it backs off for an hour; the provision says
      // so in its words. A platform provisions anew; so does the test, once.
      console.log(`[certificates] cert-manager failed the CA certificate: ${String(done.body.description)}`);
      await deprovision(instanceId, planId);
      ({ instanceId, done } = await provision(planId));
    }
    // succeeded, in cert-manager's own words on the CA Issuer (a failure shows its own)
    expect(done.body).toMatchObject({
      state: 'succeeded',
      description: expect.stringMatching(/KeyPairVerified: Signing CA verified/),
    });
    const namespace = `sf-${instanceId}`;

    // WHEN a platform binds with a common name and more DNS names
    const hosts = ['app.example.org', '*.app.example.org', 'api.example.org'];
    const { bindingId, res } = await bind(instanceId, planId, {
      commonName: 'app.example.org',
      dnsNames: hosts.slice(1),
    });
    expect(res.status).toBe(201);
    const usableMs = Date.now() - started;
    // THEN the credentials are a certificate and key for those names, signed by the instance's CA
    const ca = verifyCredentials(res.body.credentials as Record<string, string>, [
      'app.example.org',
      'www.app.example.org',
      'api.example.org',
    ]);
    // the objects are on the instance's cluster only
    await readCm(cluster, 'certificates', namespace, `binding-${bindingId}`);
    await expect(readCm(other, 'issuers', namespace, `ca-${instanceId}`)).rejects.toThrow();

    // WHEN a SAN is not a DNS name, THEN 400 with a description, and nothing is made
    const bad = await bind(instanceId, planId, { commonName: 'app.example.org', dnsNames: ['bad name!'] });
    expect(bad.res.status).toBe(400);
    expect(bad.res.body.error).toBeDefined();
    expect(String(bad.res.body.description)).toMatch(/dnsNames/);
    await expect(readCm(cluster, 'certificates', namespace, `binding-${bad.bindingId}`)).rejects.toThrow();

    // WHEN it unbinds, THEN the Certificate and the Secret cert-manager wrote for it go
    const unbind = await osb(
      'DELETE',
      `${instancePath(instanceId)}/service_bindings/${bindingId}?${query(planId)}`,
    );
    expect(unbind.status).toBe(200);
    await untilGone('the binding’s Certificate', () =>
      readCm(cluster, 'certificates', namespace, `binding-${bindingId}`),
    );
    await untilGone('the binding’s Secret', () => readSecret(cluster, namespace, `binding-${bindingId}-tls`));

    // WHEN it deprovisions, THEN the Issuers, the CA Certificate and the CA's Secret go
    await deprovision(instanceId, planId);
    for (const [plural, name] of [
      ['issuers', `selfsigned-${instanceId}`],
      ['issuers', `ca-${instanceId}`],
      ['certificates', `ca-${instanceId}`],
    ] as const)
      await untilGone(`${plural}/${name}`, () => readCm(cluster, plural, namespace, name));
    await untilGone('the CA’s Secret', () => readSecret(cluster, namespace, `ca-${instanceId}`));
    return { ca, usableMs };
  }

  test('provision, bind, a bad SAN, unbind and deprovision, on the master and on a sister, each instance its own CA; a CA Issuer cert-manager cannot use fails the provision in its words', async () => {
    const [first, second, onSister] = await Promise.all([
      lifecycle(PLAN_ID, master, sister),
      lifecycle(PLAN_ID, master, sister),
      lifecycle(SISTER_PLAN_ID, sister, master),
      (async () => {
        const { instanceId, done } = await provision(BROKEN_PLAN_ID);
        expect(done.body.state).toBe('failed');
        expect(String(done.body.description)).toMatch(
          /ErrGetKeyPair: Error getting keypair for CA issuer: .*no-such-secret/,
        );
        await deprovision(instanceId, BROKEN_PLAN_ID);
      })(),
    ]);
    expect(first.ca.fingerprint256).not.toBe(second.ca.fingerprint256);
    expect(onSister.ca.fingerprint256).not.toBe(first.ca.fingerprint256);
    console.log(
      `[certificates] provision to usable credentials: ${[first, second, onSister].map((r) => `${(r.usableMs / 1000).toFixed(1)} s`).join(', ')}`,
    );
  }, 60_000);
});
