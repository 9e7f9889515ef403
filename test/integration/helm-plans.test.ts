/**
 * Plans whose provision and bind templates are Helm charts, on the real servers: the charts (packed
 * from test/fixtures/helm) are served by a small HTTP server standing for the service owner's chart
 * repository. An instance goes through provision, an update whose values drop one object (pruned)
 * and deprovision; a binding gets its chart's objects. A chart that cannot be fetched, is too
 * large, is not a gzipped tarball or does not render fails the provision with a description that
 * says so, and nothing is applied.
 */
import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { VersionApi } from '@kubernetes/client-node';
import { readObject } from '../../src/kube/objects.js';
import { resourceName } from '../../src/resources/names.js';
import type { PlanTemplate, SFPlan } from '../../src/resources/types.js';
import { releaseName } from '../../src/templates/index.js';
import { clusters, eventually, unique } from '../support/env.js';
import { FIXTURE_CHARTS, packChart } from '../support/helm.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from '../support/osb.js';
import { DESIGN_SERVICE_ID, installDesignPlan, planHelpers } from '../support/plans.js';
import { startProcess, systemSettings, type SystemProcess } from '../support/system.js';

/** The charts' largest size the workers accept here (INTEROP_HELM_CHART_MAX_BYTES). */
const MAX_CHART_BYTES = 256 * 1024;

const tenant = packChart(path.join(FIXTURE_CHARTS, 'tenant'));
const access = packChart(path.join(FIXTURE_CHARTS, 'tenant-access'));
const webapp = packChart(path.join(FIXTURE_CHARTS, 'webapp'));
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** The chart repository: charts by path, how often each was fetched. */
async function startChartServer() {
  const hits = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const url = req.url!;
    hits.set(url, (hits.get(url) ?? 0) + 1);
    if (url === '/tenant-1.0.0.tgz') res.end(tenant);
    else if (url === '/tenant-access-1.0.0.tgz') res.end(access);
    else if (url === '/webapp-0.3.1.tgz') res.end(webapp);
    else if (url === '/huge.tgz') res.end(Buffer.alloc(MAX_CHART_BYTES + 1, 0x1f));
    else if (url === '/index.html') res.end('<html>no chart here</html>');
    else res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Says every operation succeeded: the charts' objects need no operator. */
const STATUS: PlanTemplate = {
  action: 'status',
  type: 'gotemplate',
  content: [
    'provision:',
    '  state: succeeded',
    'bind:',
    '  state: succeeded',
    '  response:',
    '    credentials:',
    '      user: {{ .binding.metadata.name }}',
    'unbind:',
    '  state: succeeded',
    'deprovision:',
    '  state: succeeded',
    '',
  ].join('\n'),
};

describe('helm charts as plan templates', () => {
  const [master] = clusters();
  const registry = unique('helm-plans');
  let design: SFPlan;
  let system: SystemProcess;
  let osb: OsbClient;
  let charts: Awaited<ReturnType<typeof startChartServer>>;
  const { planCopy } = planHelpers({
    master: master!,
    registry,
    osb: () => osb,
    design: () => design,
  });

  beforeAll(async () => {
    charts = await startChartServer();
    design = await installDesignPlan(master!, registry);
    system = await startProcess(
      'all',
      await systemSettings({
        INTEROP_NAMESPACE: registry,
        INTEROP_HELM_CHART_MAX_BYTES: String(MAX_CHART_BYTES),
      }),
    );
    osb = osbClient(system.url);
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    charts?.close();
    await master!.core.deleteNamespace({ name: registry }).catch(() => undefined);
  });

  /** A plan of the design plan's service whose provision is the chart at `url` with `values`. */
  const helmPlan = (name: string, url: string, values: string, bind?: PlanTemplate) =>
    planCopy(unique(name), {
      templates: [
        { action: 'provision', type: 'helm', url, content: values },
        ...(bind ? [bind] : []),
        STATUS,
      ],
      schemas: {},
    });

  const configMap = (instanceId: string, name: string) =>
    readObject(master!, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name,
      namespace: `sf-${instanceId}`,
    }) as Promise<{ data?: Record<string, string>; metadata: { ownerReferences?: unknown[] } } | undefined>;

  /** Waits until `read` finds nothing. */
  const gone = (what: string, read: () => Promise<unknown>) =>
    eventually(what, async () => ((await read()) === undefined ? true : undefined));

  /** Starts an operation and waits until it settles; resolves with its last_operation answer. */
  async function operate(method: string, pathAndQuery: string, body: unknown, lastOperation: string) {
    const accepted = await osb(method, pathAndQuery, body);
    expect([202, 201, 200]).toContain(accepted.status);
    if (accepted.status !== 202) return accepted;
    const operation = encodeURIComponent(String(accepted.body.operation));
    return untilSettled(osb, `${lastOperation}?operation=${operation}`, 120_000);
  }

  test('provision, update with one object pruned, bind, unbind and deprovision', async () => {
    // GIVEN a plan whose provision is the tenant chart (pinned by its digest) with values from the
    // instance's parameters, and whose bind is the tenant-access chart
    const planId = await helmPlan(
      'helm',
      `${charts.base}/tenant-1.0.0.tgz#sha256=${sha256(tenant)}`,
      [
        'size: {{ .instance.spec.parameters.size | default "small" }}',
        'extra:',
        '  enabled: {{ not .instance.spec.parameters.dropExtra }}',
        '',
      ].join('\n'),
      {
        action: 'bind',
        type: 'helm',
        url: `${charts.base}/tenant-access-1.0.0.tgz`,
        content: 'user: {{ .binding.metadata.name }}\n',
      },
    );
    const instanceId = randomUUID();
    const release = releaseName(resourceName(instanceId));
    const instancePath = `/v2/service_instances/${instanceId}`;

    // WHEN it is provisioned
    const provisioned = await operate(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(DESIGN_SERVICE_ID, planId, { size: 'medium' }),
      `${instancePath}/last_operation`,
    );
    // THEN the chart's objects are in the instance's namespace, with the values given and the
    // cluster's own capabilities (its version, and our CRDs' kinds, which Helm's defaults lack)
    expect(provisioned.body.state).toBe('succeeded');
    const config = await configMap(instanceId, `${release}-config`);
    const { gitVersion } = await master!.kubeConfig.makeApiClient(VersionApi).getCode();
    expect(config?.data).toEqual({
      size: 'medium',
      namespace: `sf-${instanceId}`,
      kubeVersion: gitVersion,
      knowsRecords: 'true',
    });
    expect(config?.metadata.ownerReferences).toHaveLength(1);
    expect((await configMap(instanceId, `${release}-extra`))?.data).toEqual({ extra: 'yes' });

    // WHEN it is updated with values that change the size and drop the extra object
    const updated = await operate(
      'PATCH',
      `${instancePath}?accepts_incomplete=true`,
      { service_id: DESIGN_SERVICE_ID, plan_id: planId, parameters: { size: 'large', dropExtra: true } },
      `${instancePath}/last_operation`,
    );
    // THEN the object is changed and the dropped one pruned
    expect(updated.body.state).toBe('succeeded');
    expect((await configMap(instanceId, `${release}-config`))?.data?.size).toBe('large');
    await gone('the extra ConfigMap', () => configMap(instanceId, `${release}-extra`));

    // WHEN a binding is made
    const bindingId = randomUUID();
    const bindingPath = `${instancePath}/service_bindings/${bindingId}`;
    const bound = await osb('PUT', bindingPath, { service_id: DESIGN_SERVICE_ID, plan_id: planId });
    // THEN its chart's objects are there, named after the binding's release
    expect([bound.status, bound.body]).toEqual([201, { credentials: { user: resourceName(bindingId) } }]);
    const bindingRelease = releaseName(resourceName(bindingId));
    expect((await configMap(instanceId, `${bindingRelease}-access`))?.data).toEqual({
      user: resourceName(bindingId),
    });

    // WHEN it is unbound and the instance deprovisioned
    const unbound = await osb('DELETE', `${bindingPath}?service_id=${DESIGN_SERVICE_ID}&plan_id=${planId}`);
    expect(unbound.status).toBe(200);
    const deprovisioned = await operate(
      'DELETE',
      `${instancePath}?accepts_incomplete=true&service_id=${DESIGN_SERVICE_ID}&plan_id=${planId}`,
      undefined,
      `${instancePath}/last_operation`,
    );
    // THEN every object is gone; the pinned chart was fetched once for all of it
    expect(deprovisioned.body.state).toBe('succeeded');
    await gone('the config ConfigMap', () => configMap(instanceId, `${release}-config`));
    expect(charts.hits.get('/tenant-1.0.0.tgz')).toBe(1);
  });

  test.each([
    [
      'a chart that cannot be fetched',
      '/missing.tgz',
      '',
      /fetching chart .*\/missing\.tgz failed: HTTP 404/,
    ],
    [
      'a chart over the size limit',
      '/huge.tgz',
      '',
      new RegExp(`fetching chart .*/huge\\.tgz failed: it is over the limit of ${MAX_CHART_BYTES} bytes`),
    ],
    [
      'a chart that is no gzipped tarball',
      '/index.html',
      '',
      /is not a chart archive: it is not a gzipped tarball/,
    ],
    [
      'a chart whose rendering fails',
      '/webapp-0.3.1.tgz',
      'replicaCount: 2\n',
      /failed: helm: provision: execution error at \(webapp\/templates\/secret\.yaml:1:11\): database\.host is required$/,
    ],
  ])('%s: the provision fails and says why; nothing is applied', async (_, chartPath, values, why) => {
    // GIVEN a plan with such a chart
    const planId = await helmPlan('helm-failing', `${charts.base}${chartPath}`, values);
    const instanceId = randomUUID();
    const instancePath = `/v2/service_instances/${instanceId}`;
    // WHEN an instance is provisioned
    const settled = await operate(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(DESIGN_SERVICE_ID, planId),
      `${instancePath}/last_operation`,
    );
    // THEN it failed, saying why, and the namespace holds none of the chart's objects
    expect(settled.body.state).toBe('failed');
    expect(String(settled.body.description)).toMatch(why);
    const listed = await eventually('the namespace listed', async () =>
      master!.core.listNamespacedConfigMap({ namespace: `sf-${instanceId}` }).catch(() => ({ items: [] })),
    );
    expect(listed.items.map((c) => c.metadata?.name).filter((n) => n !== 'kube-root-ca.crt')).toEqual([]);
  });
});
