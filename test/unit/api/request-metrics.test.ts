import { request } from 'node:http';
import type Koa from 'koa';
import type { OsbRequestRecorder } from '../../../src/metrics/recorders.js';
import { basic, PLANS, provisionBody, testApi } from './support.js';

/** Records what the middleware reports. */
function recording() {
  const requests: { route: string; method: string; status: number }[] = [];
  const recorder: OsbRequestRecorder = {
    request(route, method, status, seconds) {
      expect(seconds).toBeGreaterThanOrEqual(0);
      requests.push({ route, method, status });
    },
  };
  return { requests, recorder };
}

describe('OSB request metrics', () => {
  test('GIVEN requests on routes with ids WHEN answered THEN each is recorded by its route pattern, method and status', async () => {
    const { requests, recorder } = recording();
    const api = testApi({ requests: recorder });
    await api.osb.get('/v2/catalog');
    await api.osb.put('/v2/service_instances/instance-a?accepts_incomplete=true', provisionBody(PLANS.sync));
    await api.osb.get('/v2/service_instances/instance-b/service_bindings/binding-c/last_operation');
    expect(requests).toEqual([
      { route: '/v2/catalog', method: 'GET', status: 200 },
      { route: '/v2/service_instances/:instance_id', method: 'PUT', status: expect.any(Number) },
      {
        route: '/v2/service_instances/:instance_id/service_bindings/:binding_id/last_operation',
        method: 'GET',
        status: expect.any(Number),
      },
    ]);
    expect(JSON.stringify(requests)).not.toMatch(/instance-a|instance-b|binding-c/);
  });

  test('GIVEN failing requests WHEN answered THEN the status recorded is the one sent', async () => {
    const { requests, recorder } = recording();
    const api = testApi({ requests: recorder });
    await api.http.get('/v2/catalog').set('Authorization', basic('broker', 'wrong'));
    await api.osb.get('/v2/no/such/route');
    await api.osb.post('/v2/catalog');
    await api.http.get('/healthz');
    expect(requests).toEqual([
      { route: '/v2/catalog', method: 'GET', status: 401 },
      { route: 'unknown', method: 'GET', status: 404 },
      { route: '/v2/catalog', method: 'POST', status: 405 },
    ]);
  });

  test('GIVEN a method no route takes WHEN answered THEN its label is `other`', async () => {
    const { requests, recorder } = recording();
    const api = testApi({ requests: recorder });
    await supertestMethod(api.app, 'PROPFIND', '/v2/catalog');
    expect(requests).toEqual([{ route: '/v2/catalog', method: 'other', status: 401 }]);
  });
});

/** Sends a request with a method supertest has no function for. */
async function supertestMethod(app: Koa, method: string, path: string): Promise<void> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path }, (res) => {
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
    req.end();
  });
  await new Promise((r) => server.close(r));
}
