/** openapi.yaml describes exactly the routes the app serves, in both directions. */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { createAdminRoutes, createRoutes } from '../../../src/api/app.js';
import { MemoryAdmin } from '../../support/memory-admin.js';
import { FakeBroker, testApi, testCatalog } from './support.js';

const METHODS = ['get', 'put', 'patch', 'delete', 'post', 'head', 'options'] as const;

interface Operation {
  parameters?: { $ref?: string; name?: string; in?: string }[];
  responses: Record<string, unknown>;
}
type PathItem = Partial<Record<(typeof METHODS)[number], Operation>> & {
  parameters?: unknown[];
  servers?: { url: string }[];
};
const doc = parse(readFileSync(new URL('../../../openapi.yaml', import.meta.url), 'utf8')) as {
  openapi: string;
  paths: Record<string, PathItem>;
  components: { parameters: Record<string, { name: string; in: string }> };
};

/** `METHOD /path/{param}` of every route the app serves (HEAD comes with GET), OSB or admin. */
function servedRoutes(api: 'osb' | 'admin'): string[] {
  const routes =
    api === 'osb'
      ? createRoutes({ broker: new FakeBroker(), catalog: testCatalog(), maxBodyBytes: 1024 })
      : createAdminRoutes({ admin: new MemoryAdmin(), maxBodyBytes: 1024 });
  return routes
    .list()
    .map((route) => route.replace(/:([a-z_]+)/g, '{$1}'))
    .sort();
}

/** Each documented route under each of its path's servers (their path after the host), or as it is. */
function documentedRoutes(api: 'osb' | 'admin'): string[] {
  return Object.entries(doc.paths)
    .filter(([path]) => path.startsWith('/admin/') === (api === 'admin'))
    .flatMap(([path, item]) => {
      const prefixes = item.servers?.map((server) => new URL(server.url.replace(/[{}]/g, '_')).pathname) ?? [
        '',
      ];
      return prefixes.flatMap((prefix) =>
        METHODS.filter((m) => item[m] !== undefined).map(
          (m) => `${m.toUpperCase()} ${prefix.replace(/\/$/, '').replace(/_([a-z]+)_/g, '{$1}')}${path}`,
        ),
      );
    })
    .sort();
}

test('GIVEN the routers and openapi.yaml WHEN their routes are listed THEN they are the same, both ways', () => {
  expect(doc.openapi).toMatch(/^3\./);
  const plain = [
    'DELETE /v2/service_instances/{instance_id}',
    'DELETE /v2/service_instances/{instance_id}/service_bindings/{binding_id}',
    'GET /healthz',
    'GET /v2/catalog',
    'GET /v2/service_instances/{instance_id}',
    'GET /v2/service_instances/{instance_id}/last_operation',
    'GET /v2/service_instances/{instance_id}/service_bindings/{binding_id}',
    'GET /v2/service_instances/{instance_id}/service_bindings/{binding_id}/last_operation',
    'PATCH /v2/service_instances/{instance_id}',
    'PUT /v2/service_instances/{instance_id}',
    'PUT /v2/service_instances/{instance_id}/service_bindings/{binding_id}',
  ];
  // Each OSB route also under the platform prefixes of Service Fabrik's broker.
  const prefixed = (prefix: string) =>
    plain.filter((r) => r !== 'GET /healthz').map((r) => r.replace(' /v2/', ` ${prefix}/v2/`));
  expect(servedRoutes('osb')).toEqual(
    [...plain, ...prefixed('/{platform}'), ...prefixed('/{platform}/region/{region}')].sort(),
  );
  expect(documentedRoutes('osb')).toEqual(servedRoutes('osb'));
});

test('GIVEN the admin routes and openapi.yaml WHEN their routes are listed THEN they are the same, both ways', () => {
  expect(servedRoutes('admin')).toEqual([
    'GET /admin/bindings',
    'GET /admin/instances',
    'GET /admin/instances/{instance_id}/actions/{action}/{run_id}',
    'GET /admin/plans/{plan_id}/rollout',
    'GET /admin/rollouts',
    'GET /admin/rollouts/{rollout_id}',
    'POST /admin/adopt',
    'POST /admin/bindings/{binding_id}/force-remove',
    'POST /admin/clusters/{cluster_id}/drain',
    'POST /admin/instances/{instance_id}/actions/{action}',
    'POST /admin/instances/{instance_id}/force-remove',
    'POST /admin/instances/{instance_id}/move',
    'POST /admin/instances/{instance_id}/secrets/{secret}/rotate',
    'POST /admin/instances/{instance_id}/update',
    'POST /admin/plans/{plan_id}/dry-run',
    'POST /admin/plans/{plan_id}/rollout',
    'POST /admin/plans/{plan_id}/rollout/abort',
    'POST /admin/plans/{plan_id}/rollout/pause',
    'POST /admin/plans/{plan_id}/rollout/resume',
    'POST /admin/rollouts/{rollout_id}/abort',
    'POST /admin/rollouts/{rollout_id}/pause',
    'POST /admin/rollouts/{rollout_id}/resume',
  ]);
  expect(documentedRoutes('admin')).toEqual(servedRoutes('admin'));
});

test('GIVEN every /admin operation in the document THEN it takes the admin credentials, never the OSB ones, and declares 401', () => {
  for (const [path, item] of Object.entries(doc.paths).filter(([p]) => p.startsWith('/admin/'))) {
    for (const method of METHODS) {
      const op = item[method] as (Operation & { security?: unknown }) | undefined;
      if (!op) continue;
      expect([path, method, op.security, Object.keys(op.responses)]).toEqual([
        path,
        method,
        [{ adminBasic: [] }],
        expect.arrayContaining(['401']),
      ]);
    }
  }
});

test('GIVEN the app WHEN a route outside the document is called THEN it is not served (404)', async () => {
  const { osb } = testApi();
  expect((await osb.get('/v2/service_instances')).status).toBe(404);
});

test('GIVEN every /v2 operation in the document THEN it declares the version header and the 401 and 412 answers', () => {
  const refs = (op: Operation) =>
    (op.parameters ?? []).map((p) =>
      p.$ref ? doc.components.parameters[p.$ref.split('/').at(-1)!]?.name : p.name,
    );
  for (const [path, item] of Object.entries(doc.paths).filter(([p]) => p.startsWith('/v2/'))) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      expect([path, method, refs(op)]).toEqual([
        path,
        method,
        expect.arrayContaining(['X-Broker-API-Version']),
      ]);
      expect([path, method, Object.keys(op.responses)]).toEqual([
        path,
        method,
        expect.arrayContaining(['401', '412']),
      ]);
    }
  }
});

test('GIVEN openapi.yaml WHEN every $ref is followed THEN each resolves inside the document', () => {
  const refs: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === '$ref' && typeof value === 'string') refs.push(value);
        else walk(value);
      }
    }
  };
  walk(doc);
  const unresolved = [...new Set(refs)].filter((ref) => {
    let target: unknown = doc;
    for (const part of ref.replace(/^#\//, '').split('/')) {
      target = (target as Record<string, unknown> | undefined)?.[part];
    }
    return !ref.startsWith('#/') || target === undefined;
  });
  expect(refs.length).toBeGreaterThan(50);
  expect(unresolved).toEqual([]);
});
