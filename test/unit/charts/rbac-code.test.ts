/**
 * The chart's RBAC grants nothing the code does not use: the verbs the code calls are read from
 * src/ (every Kubernetes client call it makes, each mapped to the verb the apiserver authorizes),
 * and every rule of the chart's ClusterRole must be among them; and every one of them on a fixed
 * resource must be granted. The records' kinds (our API groups) are one unit: the code reaches
 * them through kind-generic functions. The objects plans render (services, configmaps, secrets,
 * the operators' resources) get what the generic object client does with them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { findHelm, helmTool, renderChart } from '../../support/helm.js';
import { describeWithTool } from '../../support/tools.js';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..', '..');

/** Every TypeScript file of src/, read. */
function sources(dir = path.join(root, 'src')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(path.join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [readFileSync(path.join(dir, e.name), 'utf8')]
        : [],
  );
}

const VERBS: Record<string, string> = {
  read: 'get',
  get: 'get',
  list: 'list',
  create: 'create',
  patch: 'patch',
  replace: 'update',
  delete: 'delete',
};

/** `group resource verb`, the way a rule grants it. */
type Grant = string;
const grant = (group: string, resource: string, verb: string): Grant => `${group} ${resource} ${verb}`;

/** Our API groups, whose kinds the code reaches through kind-generic functions. */
const OURS = ['osb.servicefabrik.io', 'resource.servicefabrik.io'];
/** Methods of an array, which a list named `objects` has. */
const ARRAY_METHODS = new Set(['some', 'every', 'filter', 'map', 'forEach', 'find', 'flatMap', 'reduce']);

/**
 * Discovery (`/version`, `/api`, `/apis`, `/apis/<group>/<version>`): non-resource URLs every
 * authenticated user may read (the apiserver's `system:discovery` role), so no rule of ours.
 */
const DISCOVERY_METHODS = new Set(['getAPIResources', 'getAPIVersions']);
const DISCOVERY_CLIENTS = new Set(['VersionApi', 'CoreApi', 'ApisApi']);

/** What the generic object client (`objects.*`) does: server-side apply creates what is missing. */
const OBJECT_VERBS: Record<string, string[]> = {
  patch: ['patch', 'create'],
  read: ['get'],
  delete: ['delete'],
  list: ['list'],
};

/** The verbs the code calls: on fixed core resources, on our kinds, and through the object client. */
function verbsOfCode(texts: readonly string[]) {
  const core = new Set<Grant>();
  const ours = new Set<string>();
  const oursStatus = new Set<string>();
  const objects = new Set<string>();
  const unknown: string[] = [];
  for (const text of texts) {
    for (const [, method] of text.matchAll(/\.core\.(\w+)\(/g)) {
      if (DISCOVERY_METHODS.has(method!)) continue;
      const m =
        /^(read|list|create|patch|replace|delete)(?:Namespaced)?([A-Z]\w*?)(?:ForAllNamespaces)?$/.exec(
          method!,
        );
      if (!m) {
        unknown.push(`core.${method}`);
        continue;
      }
      const kind = m[2]!.toLowerCase();
      core.add(grant('', kind.endsWith('s') ? `${kind}es` : `${kind}s`, VERBS[m[1]!]!));
    }
    for (const [, method] of text.matchAll(/\.custom\.(\w+)\(/g)) {
      if (DISCOVERY_METHODS.has(method!)) continue;
      const m = /^(get|list|create|patch|replace|delete)\w*?CustomObject(?:ForAllNamespaces)?(Status)?$/.exec(
        method!,
      );
      if (!m) unknown.push(`custom.${method}`);
      else if (m[2]) oursStatus.add(VERBS[m[1]!]!);
      else ours.add(VERBS[m[1]!]!);
    }
    // The catalog's informers list and watch.
    if (/\bmakeInformer\b/.test(text)) ['list', 'watch'].forEach((v) => ours.add(v));
    // A watch of a kind (kind-watch.ts) watches objects of the kinds the plans render.
    if (/\bnew Watch\(/.test(text)) objects.add('watch');
    for (const [, method] of text.matchAll(/\.objects\.(\w+)\(/g)) {
      // A list named `objects` (a dry run's report) is no client.
      if (ARRAY_METHODS.has(method!)) continue;
      const verbs = OBJECT_VERBS[method!];
      if (!verbs) unknown.push(`objects.${method}`);
      else verbs.forEach((v) => objects.add(v));
    }
    for (const [, api] of text.matchAll(/makeApiClient\((\w+)\)/g))
      if (!DISCOVERY_CLIENTS.has(api!)) unknown.push(`an API client ${api}`);
  }
  return { core, ours, oursStatus, objects, unknown };
}

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

const helm = findHelm();
const withHelm = describeWithTool(helmTool(helm));

withHelm("the chart's RBAC against the code", () => {
  const code = verbsOfCode(sources());
  const rules = renderChart(helm!, { namespace: 'interop' }).find((m) => m.kind === 'ClusterRole')!
    .rules as Rule[];
  const granted = rules.flatMap((r) =>
    r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => grant(g, res, v)))),
  );
  /** What the plans render: the core kinds the chart names for them, and the operators' resources. */
  const rendered = (group: string, resource: string) =>
    (group === '' && ['secrets', 'services', 'configmaps'].includes(resource)) ||
    (group !== '' && !OURS.includes(group));

  test('GIVEN src/ THEN every Kubernetes call it makes is one the test knows how to read', () => {
    expect(code.unknown).toEqual([]);
    // The reading finds what the code is known to do, so an empty result cannot pass.
    expect([...code.core]).toEqual(
      expect.arrayContaining([grant('', 'namespaces', 'create'), grant('', 'secrets', 'get')]),
    );
    expect([...code.ours].sort()).toEqual(['create', 'delete', 'get', 'list', 'patch', 'watch']);
    expect([...code.objects].sort()).toEqual(['create', 'delete', 'get', 'list', 'patch', 'watch']);
  });

  test('GIVEN the ClusterRole THEN it grants nothing the code does not call', () => {
    const used = (g: Grant) => {
      const [group, resource, verb] = g.split(' ') as [string, string, string];
      if (OURS.includes(group))
        return resource.endsWith('/status')
          ? code.oursStatus.has(verb)
          : code.ours.has(verb) || code.objects.has(verb);
      return code.core.has(g) || (rendered(group, resource) && code.objects.has(verb));
    };
    expect(granted.filter((g) => !used(g))).toEqual([]);
  });

  test('GIVEN the ClusterRole THEN it grants every call the code makes on a fixed resource', () => {
    const needed = [
      ...code.core,
      ...['sfserviceinstances', 'sfservicebindings', 'sfplans', 'sfservices'].flatMap((r) =>
        [...code.ours].map((v) => grant('osb.servicefabrik.io', r, v)),
      ),
      ...[...code.oursStatus].map((v) => grant('osb.servicefabrik.io', 'sfserviceinstances/status', v)),
      ...[...code.ours].map((v) => grant('resource.servicefabrik.io', 'sfclusters', v)),
    ];
    expect(needed.filter((g) => !granted.includes(g))).toEqual([]);
  });
});
