/** The JSON request body: objects only, a size limit, unknown fields ignored (checklist rows 7–8). */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PLANS, SERVICE_ID, basic, provisionBody, testApi, PASSWORD, USERNAME } from './support.js';

const PATH = '/v2/service_instances/i-1';

describe('request bodies', () => {
  test.each([
    ['malformed JSON (row 8)', '{"service_id":', 'The request body is not valid JSON.'],
    ['an array', '[1]', 'The request body must be a JSON object.'],
    ['a string', '"x"', 'The request body must be a JSON object.'],
    ['null', 'null', 'The request body must be a JSON object.'],
  ])('GIVEN %s WHEN provisioning THEN 400', async (_n, text, description) => {
    const { osb, broker } = testApi();
    const res = await osb.put(PATH, text);
    expect([res.status, res.body]).toEqual([400, { error: 'BadRequest', description }]);
    expect(broker.calls).toEqual([]);
  });

  test('GIVEN an empty body WHEN provisioning THEN it is {} and the missing service_id is the error', async () => {
    const { osb } = testApi();
    const res = await osb.put(PATH);
    expect(res.body).toEqual({ error: 'BadRequest', description: 'service_id is required.' });
  });

  test('GIVEN unknown fields at every level WHEN provisioning THEN they are ignored (row 7)', async () => {
    const { osb, broker } = testApi();
    const res = await osb.put(PATH, provisionBody(PLANS.sync, { vendor_extension: { a: 1 }, metadata: 'x' }));
    expect(res.status).toBe(201);
    expect(broker.requests('provision')).toEqual([
      {
        instanceId: 'i-1',
        serviceId: SERVICE_ID,
        planId: PLANS.sync,
        organizationGuid: 'org-guid',
        spaceGuid: 'space-guid',
        acceptsIncomplete: false,
      },
    ]);
  });

  test('GIVEN a JSON body labelled text/plain WHEN provisioning THEN it is read as JSON', async () => {
    const { osb } = testApi();
    const res = await osb.put(PATH).set('Content-Type', 'text/plain').send(JSON.stringify(provisionBody()));
    expect(res.status).toBe(201);
  });

  test.each([
    [
      // as text/plain: superagent would serialise a Buffer labelled JSON
      'a body that is not UTF-8',
      { 'Content-Type': 'text/plain' },
      Buffer.from([0x7b, 0xff, 0xfe, 0x7d]),
      'The request body is not UTF-8.',
    ],
    [
      'a gzip-encoded body',
      { 'Content-Encoding': 'gzip', 'Content-Type': 'application/json' },
      '{}',
      'Content-Encoding gzip is not supported; send plain JSON.',
    ],
  ])('GIVEN %s WHEN provisioning THEN 400', async (_n, headers, payload, description) => {
    const { osb } = testApi();
    const res = await osb.put(PATH).set(headers).send(payload);
    expect(res.body).toEqual({ error: 'BadRequest', description });
  });

  test('GIVEN maxBodyBytes 200 WHEN a body of exactly 200 bytes THEN accepted; 201 bytes THEN 413', async () => {
    const { osb } = testApi({ maxBodyBytes: 200 });
    const sized = (n: number) => {
      const base = JSON.stringify(provisionBody(PLANS.sync, { pad: '' }));
      return JSON.stringify(provisionBody(PLANS.sync, { pad: 'x'.repeat(n - base.length) }));
    };
    expect(sized(200)).toHaveLength(200);
    expect((await osb.put(PATH, sized(200))).status).toBe(201);
    const res = await osb.put(PATH, sized(201));
    expect([res.status, res.body]).toEqual([
      413,
      {
        error: 'PayloadTooLarge',
        description: 'The request body is larger than the broker accepts (200 bytes).',
      },
    ]);
  });

  test('GIVEN the default limit WHEN a 2 MiB body is sent THEN 413 and the broker is not called', async () => {
    const { osb, broker } = testApi();
    const res = await osb.put(PATH, provisionBody(PLANS.sync, { pad: 'x'.repeat(2 * 1024 * 1024) }));
    expect([res.status, res.body.error]).toEqual([413, 'PayloadTooLarge']);
    expect(broker.calls).toEqual([]);
  });

  test('GIVEN a chunked body without Content-Length WHEN it passes the limit THEN 413 while reading', async () => {
    const { app, broker } = testApi({ maxBodyBytes: 1000 });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port,
            method: 'PUT',
            path: PATH,
            headers: {
              Authorization: basic(USERNAME, PASSWORD),
              'X-Broker-API-Version': '2.17',
              'Content-Type': 'application/json',
              'Transfer-Encoding': 'chunked',
            },
          },
          (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          },
        );
        req.on('error', reject);
        req.write(`{"service_id":"${SERVICE_ID}","pad":"`);
        for (let i = 0; i < 20; i++) req.write('x'.repeat(100));
        req.end('"}');
      });
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body)).toEqual({
        error: 'PayloadTooLarge',
        description: 'The request body is larger than the broker accepts (1000 bytes).',
      });
      expect(broker.calls).toEqual([]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
