/**
 * The dry run route of the admin API over an in-memory AdminService: the spec and page reach the
 * service, its report is the body, and bad input is a 400 in the OSB error shape before the
 * service is called.
 */
import supertest from 'supertest';
import type { PlanDryRunReport } from '../../../src/admin/dry-run.js';
import { MemoryAdmin } from '../../support/memory-admin.js';
import { basic, testApi } from './support.js';

const ADMIN = { username: 'ops', password: 'admin-password-not-secret' };

const spec = {
  id: 'p-1',
  name: 'small',
  serviceId: 's-1',
  description: 'a plan',
  templates: [{ action: 'provision', type: 'gotemplate', content: 'x' }],
};

const report: PlanDryRunReport = {
  planId: 'p-1',
  revision: 'rev-2',
  currentRevision: 'rev-1',
  instances: [
    {
      instanceId: 'i-1',
      clusterId: '1',
      revision: 'rev-1',
      objects: [
        {
          apiVersion: 'acid.zalan.do/v1',
          kind: 'postgresql',
          name: 'db',
          namespace: 'sf-i-1',
          change: 'changed',
          fields: [{ path: 'spec.postgresql.parameters.max_connections', old: '100', new: '120' }],
        },
      ],
    },
  ],
  summary: { changed: 1, unchanged: 0, failed: 0 },
  continue: 'next',
};

function api() {
  const service = new MemoryAdmin();
  const { http } = testApi({ admin: { service, credentials: () => ADMIN } });
  const post = (path: string, body: object) =>
    http.post(path).set('Authorization', basic(ADMIN.username, ADMIN.password)).send(body) as supertest.Test;
  return { service, post };
}

test('GIVEN a new spec WHEN dry run with a page THEN the service gets spec and page, and its report is the body', async () => {
  const { service, post } = api();
  service.dryRunAnswers = [report];
  const res = await post('/admin/plans/p-1/dry-run?limit=10&continue=abc', { spec });
  expect([res.status, res.body]).toEqual([200, report]);
  expect(service.calls).toEqual([
    { method: 'dryRuns.planChange', args: [{ planId: 'p-1', spec, limit: 10, continue: 'abc' }] },
  ]);
});

test.each([
  ['no spec', '/admin/plans/p-1/dry-run', {}, 'spec must be an object'],
  ['another plan’s spec', '/admin/plans/p-2/dry-run', { spec }, "spec.id must be the plan's id p-2"],
  [
    'a page over 200',
    '/admin/plans/p-1/dry-run?limit=500',
    { spec },
    'limit must be a whole number from 1 to 200',
  ],
])(
  'GIVEN %s THEN 400 in the OSB error shape, and the service is not called',
  async (_name, path, body, text) => {
    const { service, post } = api();
    const res = await post(path, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'BadRequest', description: expect.stringContaining(text) });
    expect(service.calls).toEqual([]);
  },
);

test('GIVEN a plan the service does not know THEN 404', async () => {
  const { post } = api();
  const res = await post('/admin/plans/p-1/dry-run', { spec });
  expect([res.status, res.body.description]).toEqual([404, 'There is no plan p-1 in the catalog.']);
});
