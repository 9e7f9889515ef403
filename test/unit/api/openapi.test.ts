/** The OpenAPI document describes exactly the routes the app serves, in both directions. */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { createApp } from '../../../src/api/app.js';
import type { ServiceBroker } from '../../../src/broker/types.js';

interface Layer {
  path: string;
  methods: string[];
}

function servedRoutes(): string[] {
  const app = createApp({
    broker: {} as ServiceBroker,
    catalog: { services: () => [], plans: () => [], plan: () => undefined, service: () => undefined },
    credentials: () => [],
  });
  return app.middleware
    .flatMap((mw) => ((mw as { router?: { stack: Layer[] } }).router?.stack ?? []) as Layer[])
    .flatMap((layer) =>
      layer.methods
        .filter((m) => m !== 'HEAD')
        .map((m) => `${m} ${layer.path.replace(/:([a-z_]+)/g, '{$1}')}`),
    )
    .sort();
}

function documentedRoutes(): string[] {
  const doc = parse(readFileSync('openapi.yaml', 'utf8')) as {
    paths: Record<string, Record<string, unknown>>;
  };
  return Object.entries(doc.paths)
    .flatMap(([path, item]) =>
      Object.keys(item)
        .filter((k) => ['get', 'put', 'patch', 'delete', 'post'].includes(k))
        .map((m) => `${m.toUpperCase()} ${path}`),
    )
    .sort();
}

test('every served route is documented and every documented route is served', () => {
  const served = servedRoutes();
  expect(served.length).toBeGreaterThanOrEqual(11);
  expect(documentedRoutes()).toEqual(served);
});
