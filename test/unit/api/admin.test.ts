/**
 * The admin API's HTTP layer over an in-memory AdminService: its own credentials, the listings'
 * filters and pages, the update, the forced removal, the rollout routes, and errors in the OSB
 * API's shape.
 */
import supertest from 'supertest';
import { concurrencyError } from '../../../src/osb/errors.js';
import { MemoryAdmin, bindingSummary, instanceSummary, progressOf } from '../../support/memory-admin.js';
import { PASSWORD, USERNAME, basic, testApi } from './support.js';

const ADMIN = { username: 'ops', password: 'admin-password-not-secret' };

function adminApi() {
  const service = new MemoryAdmin();
  const { http, log } = testApi({ admin: { service, credentials: () => ADMIN } });
  const as = (t: supertest.Test) => t.set('Authorization', basic(ADMIN.username, ADMIN.password));
  return {
    service,
    log,
    http,
    admin: {
      get: (path: string) => as(http.get(path)),
      post: (path: string, body?: object) => (body ? as(http.post(path)).send(body) : as(http.post(path))),
    },
  };
}

describe('admin authentication', () => {
  test('GIVEN the OSB credentials WHEN they call the admin API THEN 401 with the OSB error shape', async () => {
    const { http, service } = adminApi();
    const res = await http.get('/admin/instances').set('Authorization', basic(USERNAME, PASSWORD));
    expect([res.status, res.body.error, res.headers['www-authenticate']]).toEqual([
      401,
      'Unauthorized',
      'Basic realm="interoperator", charset="UTF-8"',
    ]);
    expect(service.calls).toEqual([]);
  });

  test('GIVEN the admin credentials WHEN they call the OSB API THEN 401', async () => {
    const { http } = adminApi();
    const res = await http
      .get('/v2/catalog')
      .set('Authorization', basic(ADMIN.username, ADMIN.password))
      .set('X-Broker-API-Version', '2.17');
    expect(res.status).toBe(401);
  });

  test('GIVEN no admin API configured WHEN /admin is called with any credentials THEN 401', async () => {
    const { http } = testApi();
    const res = await http.get('/admin/instances').set('Authorization', basic(USERNAME, PASSWORD));
    expect(res.status).toBe(401);
  });

  test('GIVEN X-Requested-By WHEN an admin updates an instance THEN who asked names the person and the user', async () => {
    const { admin, service, log } = adminApi();
    service.instances = [instanceSummary('i-1')];
    const res = await admin.post('/admin/instances/i-1/update').set('X-Requested-By', 'alice');
    expect(res.status).toBe(202);
    expect(service.calls).toEqual([{ method: 'updateInstance', args: ['i-1', 'alice (ops)'] }]);
    expect(log.entries.filter((l) => l.message === 'admin request').map((l) => l.fields)).toEqual([
      expect.objectContaining({ method: 'POST', status: 202, requestedBy: 'alice (ops)' }),
    ]);
  });
});

describe('GET /admin/instances and /admin/bindings', () => {
  test('GIVEN instances WHEN listed with filters THEN the service gets the filter and page, and the body is its page', async () => {
    const { admin, service } = adminApi();
    service.instances = [
      instanceSummary('a', { planId: 'p1', state: 'failed' }),
      instanceSummary('b', { planId: 'p1' }),
      instanceSummary('c', { planId: 'p2', state: 'failed' }),
    ];
    const res = await admin.get(
      '/admin/instances?plan=p1&service=svc&cluster=1&state=failed&revision=rev-1&limit=2',
    );
    expect([res.status, res.body]).toEqual([
      200,
      { items: [instanceSummary('a', { planId: 'p1', state: 'failed' })], continue: '2' },
    ]);
    expect(service.calls[0]).toEqual({
      method: 'listInstances',
      args: [
        { serviceId: 'svc', planId: 'p1', clusterId: '1', state: 'failed', revision: 'rev-1' },
        { limit: 2 },
      ],
    });
    const next = await admin.get('/admin/instances?plan=p1&limit=2&continue=2');
    expect(next.body).toEqual({ items: [] });
  });

  test('GIVEN bindings WHEN listed THEN 200 with the page', async () => {
    const { admin, service } = adminApi();
    service.bindings = [bindingSummary('b-1')];
    const res = await admin.get('/admin/bindings');
    expect([res.status, res.body]).toEqual([200, { items: [bindingSummary('b-1')] }]);
  });

  test.each([
    ['/admin/instances?state=sleeping', /state must be one of/],
    ['/admin/instances?limit=0', /limit must be a whole number from 1 to 1000/],
    ['/admin/instances?limit=abc', /limit must be/],
    ['/admin/instances?plan=a&plan=b', /plan may be given once/],
  ])('GIVEN %s THEN 400 BadRequest naming the parameter', async (path, description) => {
    const { admin, service } = adminApi();
    const res = await admin.get(path);
    expect([res.status, res.body.error, res.body.description]).toEqual([
      400,
      'BadRequest',
      expect.stringMatching(description),
    ]);
    expect(service.calls).toEqual([]);
  });
});

describe('POST /admin/instances/:id/update', () => {
  test('GIVEN an idle instance THEN 202 with the operation started', async () => {
    const { admin, service } = adminApi();
    service.instances = [instanceSummary('i-1')];
    const res = await admin.post('/admin/instances/i-1/update');
    expect([res.status, res.body]).toEqual([
      202,
      { instanceId: 'i-1', operation: 'update:run-1', revision: 'rev-2' },
    ]);
  });

  test('GIVEN a busy instance THEN 422 ConcurrencyError, as the OSB API answers it', async () => {
    const { admin, service } = adminApi();
    service.instances = [instanceSummary('i-1')];
    service.busy.add('i-1');
    const res = await admin.post('/admin/instances/i-1/update');
    expect([res.status, res.body]).toEqual([
      422,
      concurrencyError('Another operation (update) is in progress.').toBody(),
    ]);
  });

  test('GIVEN no such instance THEN 404 NotFound', async () => {
    const { admin } = adminApi();
    const res = await admin.post('/admin/instances/nope/update');
    expect([res.status, res.body.error]).toEqual([404, 'NotFound']);
  });
});

describe('POST /admin/{instances,bindings}/:id/force-remove', () => {
  test.each([
    ['instances', 'instance', 'i-1'],
    ['bindings', 'binding', 'b-1'],
  ] as const)('GIVEN a %s record THEN 200 with what was done, and who asked', async (path, kind, id) => {
    const { admin, service } = adminApi();
    service.instances = [instanceSummary('i-1')];
    service.bindings = [bindingSummary('b-1')];
    const res = await admin.post(`/admin/${path}/${id}/force-remove`);
    expect([res.status, res.body]).toEqual([
      200,
      expect.objectContaining({ kind, id, requestedBy: 'ops', finalizerRemoved: true }),
    ]);
    expect(service.calls).toEqual([{ method: 'forceRemove', args: [kind, id, 'ops'] }]);
  });

  test('GIVEN GET on force-remove THEN 405 with Allow: POST', async () => {
    const { admin } = adminApi();
    const res = await admin.get('/admin/instances/i-1/force-remove');
    expect([res.status, res.headers.allow, res.body.error]).toEqual([405, 'POST', 'MethodNotAllowed']);
  });
});

describe('POST /admin/adopt', () => {
  test('GIVEN dryRun=true THEN 200 with the report, the dry run passed with who asked; without it an adoption', async () => {
    const { admin, service } = adminApi();
    const dry = await admin.post('/admin/adopt?dryRun=true');
    expect([dry.status, dry.body]).toEqual([
      200,
      { dryRun: true, adopted: [], refused: [], alreadyAdopted: 0 },
    ]);
    expect((await admin.post('/admin/adopt')).body.dryRun).toBe(false);
    expect(service.calls).toEqual([
      { method: 'adoptServiceFabrik', args: [true, 'ops'] },
      { method: 'adoptServiceFabrik', args: [false, 'ops'] },
    ]);
  });

  test('GIVEN dryRun=maybe THEN 400 naming it, and nothing is adopted', async () => {
    const { admin, service } = adminApi();
    const res = await admin.post('/admin/adopt?dryRun=maybe');
    expect([res.status, res.body.description]).toEqual([400, 'dryRun must be true or false, not "maybe".']);
    expect(service.calls).toEqual([]);
  });
});

describe('the drain of a cluster', () => {
  test('GIVEN settings WHEN a cluster is drained THEN 202 with its progress, the settings passed through', async () => {
    const { admin, service } = adminApi();
    const res = await admin.post('/admin/clusters/sister-1/drain', { maxConcurrency: 1 });
    expect([res.status, res.body.drain, res.body.planId, res.body.settings.maxConcurrency]).toEqual([
      202,
      { clusterId: 'sister-1' },
      undefined,
      1,
    ]);
    expect(service.calls).toEqual([
      { method: 'rollouts.drain', args: ['sister-1', { maxConcurrency: 1 }, 'ops'] },
    ]);
  });

  test('GIVEN no body WHEN a cluster is drained THEN the defaults; an unknown setting is a 400 and nothing starts', async () => {
    const { admin, service } = adminApi();
    expect((await admin.post('/admin/clusters/sister-1/drain')).status).toBe(202);
    const bad = await admin.post('/admin/clusters/sister-1/drain', { concurrency: 2 });
    expect([bad.status, bad.body.description]).toEqual([
      400,
      expect.stringMatching(/Unknown rollout setting concurrency/),
    ]);
    expect(service.calls).toEqual([{ method: 'rollouts.drain', args: ['sister-1', {}, 'ops'] }]);
  });
});

describe('rollouts', () => {
  test('GIVEN settings WHEN a rollout starts THEN 202 with its progress, the settings passed through', async () => {
    const { admin, service } = adminApi();
    const res = await admin.post('/admin/plans/p1/rollout', { canary: 2, maxConcurrency: 3 });
    expect([res.status, res.body.state, res.body.settings.canary]).toEqual([202, 'canary', 2]);
    expect(service.calls).toEqual([
      { method: 'rollouts.start', args: ['p1', { canary: 2, maxConcurrency: 3 }, 'ops'] },
    ]);
  });

  test.each([
    [{ maxConcurrency: 0 }, /maxConcurrency must be a whole number, 1 or more/],
    [{ canary: 1.5 }, /canary must be a whole number, 0 or more/],
    [{ soakSecs: 1 }, /Unknown rollout setting soakSecs/],
  ])('GIVEN %j THEN 400 and nothing starts', async (body, description) => {
    const { admin, service } = adminApi();
    const res = await admin.post('/admin/plans/p1/rollout', body);
    expect([res.status, res.body.description]).toEqual([400, expect.stringMatching(description)]);
    expect(service.calls).toEqual([]);
  });

  test.each([
    ['pause', 'paused'],
    ['resume', 'waves'],
    ['abort', 'aborted'],
  ] as const)(
    'GIVEN a running rollout WHEN %s THEN 200 with its progress in the state it took (%s)',
    async (action, state) => {
      const { admin, service } = adminApi();
      service.progressAnswers = [progressOf({ state: 'waves' })];
      const res = await admin.post(`/admin/plans/p1/rollout/${action}`);
      expect([res.status, res.body]).toEqual([200, { ...progressOf({ state }), planId: 'p1' }]);
      expect(service.calls.map((c) => c.method)).toEqual([`rollouts.${action}`]);
    },
  );

  test('GIVEN a rollout whose state does not allow the command WHEN paused THEN 409 with why', async () => {
    const { admin, service } = adminApi();
    service.progressAnswers = [progressOf({ state: 'paused' })];
    service.commandRefusal = 'The rollout of plan p1 to revision r1 is already paused.';
    const res = await admin.post('/admin/plans/p1/rollout/pause');
    expect([res.status, res.body]).toEqual([
      409,
      { error: 'Conflict', description: 'The rollout of plan p1 to revision r1 is already paused.' },
    ]);
  });

  test('GIVEN no rollout THEN its progress and its pause are 404', async () => {
    const { admin } = adminApi();
    expect((await admin.get('/admin/plans/p1/rollout')).status).toBe(404);
    expect((await admin.post('/admin/plans/p1/rollout/pause')).status).toBe(404);
  });
});

describe('custom actions: POST /admin/instances/:id/actions/:action and GET …/:run_id', () => {
  test('GIVEN parameters WHEN an admin runs an action THEN 202 with the run, the parameters and who asked passed through', async () => {
    const { admin, service } = adminApi();
    service.instances = [instanceSummary('i-1')];
    service.actionsOf.set('i-1', ['x-backup']);
    const res = await admin
      .post('/admin/instances/i-1/actions/x-backup', { parameters: { label: 'nightly' } })
      .set('X-Requested-By', 'alice');
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      instanceId: 'i-1',
      action: 'x-backup',
      workflowId: 'instance/i-1',
      runId: 'run-1',
      operation: 'x-backup:run-1',
    });
    expect(service.calls).toEqual([
      { method: 'runAction', args: ['i-1', 'x-backup', { label: 'nightly' }, 'alice (ops)'] },
    ]);
  });

  test('GIVEN no body THEN the action runs without parameters', async () => {
    const { admin, service } = adminApi();
    service.instances = [instanceSummary('i-1')];
    service.actionsOf.set('i-1', ['x-backup']);
    expect((await admin.post('/admin/instances/i-1/actions/x-backup')).status).toBe(202);
    expect(service.calls[0]?.args[2]).toBeUndefined();
  });

  test.each([
    [{ label: 'x' }, 'Unknown field label of an action request; known: parameters.'],
    [{ parameters: ['a'] }, 'parameters must be an object.'],
    [{ parameters: 'a' }, 'parameters must be an object.'],
  ])('GIVEN the body %j THEN 400 and the service is not called', async (body, description) => {
    const { admin, service } = adminApi();
    const res = await admin.post('/admin/instances/i-1/actions/x-backup', body);
    expect([res.status, res.body]).toEqual([400, { error: 'BadRequest', description }]);
    expect(service.calls).toEqual([]);
  });

  test('GIVEN an action the plan lacks, or a busy instance THEN the service’s 404 and 422 in the OSB shape', async () => {
    const { admin, service } = adminApi();
    service.instances = [instanceSummary('i-1')];
    const lacking = await admin.post('/admin/instances/i-1/actions/x-restart');
    expect([lacking.status, lacking.body.error]).toEqual([404, 'NotFound']);
    service.actionsOf.set('i-1', ['x-restart']);
    service.busy.add('i-1');
    const busy = await admin.post('/admin/instances/i-1/actions/x-restart');
    expect([busy.status, busy.body.error]).toEqual([422, 'ConcurrencyError']);
  });

  test('GIVEN a run WHEN its state is read THEN 200 with it', async () => {
    const { admin, service } = adminApi();
    service.actionStates = ['failed'];
    const res = await admin.get('/admin/instances/i-1/actions/x-backup/run-1');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      instanceId: 'i-1',
      action: 'x-backup',
      runId: 'run-1',
      state: 'failed',
      description: 'x-backup failed: the operator said no',
    });
    expect(service.calls).toEqual([{ method: 'actionState', args: ['i-1', 'x-backup', 'run-1'] }]);
  });
});
