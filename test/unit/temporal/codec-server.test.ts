/**
 * The codec endpoint over the real payload codec: what it decodes, for whom, and for which
 * browser origins. The requests are the ones the Temporal Web UI sends (POST `<endpoint>/decode`
 * with `Content-Type: application/json` and `X-Namespace`, after a CORS preflight).
 */
import { defaultPayloadConverter } from '@temporalio/common';
import request from 'supertest';
import { EncryptionCodec, parsePayloadKeys } from '../../../src/temporal/codec.js';
import { codecEndpoint } from '../../../src/temporal/codec-server.js';

const TOKEN = 'codec-token-0123456789';
const UI = 'http://127.0.0.1:8233';
const codec = new EncryptionCodec(parsePayloadKeys(`k1:${Buffer.alloc(32, 3).toString('base64')}`));
const endpoint = (maxBodyBytes?: number) =>
  codecEndpoint({
    codec,
    namespace: 'default',
    tokens: () => [TOKEN],
    origins: [UI],
    ...(maxBodyBytes ? { maxBodyBytes } : {}),
  });

const json = (payload: { metadata?: Record<string, Uint8Array> | null; data?: Uint8Array | null }) => ({
  metadata: Object.fromEntries(
    Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(payload.data ?? []).toString('base64'),
});

const value = { instanceId: 'i-1', parameters: { password: 'from the request' } };
let encrypted: ReturnType<typeof json>;

beforeAll(async () => {
  const [payload] = await codec.encode([defaultPayloadConverter.toPayload(value)]);
  encrypted = json(payload!);
});

const decoded = (body: { payloads: ReturnType<typeof json>[] }) =>
  body.payloads.map((p) => JSON.parse(Buffer.from(p.data, 'base64').toString('utf8')) as unknown);

describe('decoding', () => {
  test.each([
    ['a bearer token', '/decode', { Authorization: `Bearer ${TOKEN}` }],
    ['a bearer token, under the namespace', '/default/decode', { Authorization: `Bearer ${TOKEN}` }],
    ['the token in the path', `/token/${TOKEN}/decode`, {}],
    ['the token in the path, under the namespace', `/token/${TOKEN}/default/decode`, {}],
  ])('GIVEN %s WHEN a payload is posted THEN it comes back decoded', async (_, path, headers) => {
    const res = await request(endpoint())
      .post(path)
      .set({ 'Content-Type': 'application/json', 'X-Namespace': 'default', ...headers })
      .send({ payloads: [encrypted] });
    expect(res.status).toBe(200);
    expect(res.body.payloads[0].metadata).toEqual({ encoding: Buffer.from('json/plain').toString('base64') });
    expect(decoded(res.body)).toEqual([value]);
  });

  test('GIVEN a payload that is not encrypted WHEN decoded THEN it comes back as it was', async () => {
    const plain = json(defaultPayloadConverter.toPayload('plain'));
    const res = await request(endpoint())
      .post('/decode')
      .set('Authorization', `Bearer ${TOKEN}`)
      .send({ payloads: [plain] });
    expect(res.body).toEqual({ payloads: [plain] });
  });

  test('GIVEN a value WHEN encoded and decoded again THEN it is the same, encrypted in between', async () => {
    const plain = json(defaultPayloadConverter.toPayload({ a: 1 }));
    const enc = await request(endpoint())
      .post('/encode')
      .set('Authorization', `Bearer ${TOKEN}`)
      .send({ payloads: [plain] });
    expect(enc.status).toBe(200);
    expect(Buffer.from(enc.body.payloads[0].metadata.encoding, 'base64').toString()).toBe('binary/encrypted');
    const dec = await request(endpoint())
      .post('/decode')
      .set('Authorization', `Bearer ${TOKEN}`)
      .send(enc.body);
    expect(decoded(dec.body)).toEqual([{ a: 1 }]);
  });
});

/**
 * The bodies the Temporal CLI's `--codec-endpoint` posts: the Go SDK's remote codec writes
 * `Payloads` with Go's encoding/json, whose `omitempty` leaves out an empty list, an empty
 * metadata map and empty data; it sends `X-Namespace` and the `--codec-auth` value as is. It
 * posts once for every payload field of the history it reads, the empty ones too, and any answer
 * but a 200 fails the read, which the SDK then retries until the command's deadline.
 */
describe('the Temporal CLI`s requests', () => {
  const cli = (body: string) =>
    request(endpoint())
      .post('/decode')
      .set({
        'Content-Type': 'application/json',
        'X-Namespace': 'default',
        Authorization: `Bearer ${TOKEN}`,
      })
      .send(body);

  test.each([
    ['a field with no payloads (a signal sent with no arguments)', '{}', { payloads: [] }],
    ['a list left null', '{"payloads": null}', { payloads: [] }],
    [
      'a payload with no metadata and no data',
      '{"payloads": [{}]}',
      { payloads: [{ metadata: {}, data: '' }] },
    ],
    [
      'a payload with null metadata and data',
      '{"payloads": [{"metadata": null, "data": null}]}',
      { payloads: [{ metadata: {}, data: '' }] },
    ],
  ])('GIVEN %s WHEN decoded THEN 200 with as many payloads', async (_, body, expected) => {
    const res = await cli(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(expected);
  });

  test('GIVEN an encrypted payload beside empty ones WHEN decoded THEN each comes back in its place', async () => {
    const res = await cli(JSON.stringify({ payloads: [{}, encrypted, { data: '' }] }));
    expect(res.status).toBe(200);
    expect(res.body.payloads).toHaveLength(3);
    expect(JSON.parse(Buffer.from(res.body.payloads[1].data, 'base64').toString('utf8'))).toEqual(value);
  });
});

describe('refusals', () => {
  test.each([
    ['no token', '/decode', {}],
    ['a wrong token', '/decode', { Authorization: 'Bearer codec-token-0123456780' }],
    ['a token of another length', '/decode', { Authorization: `Bearer ${TOKEN}x` }],
    [
      'basic credentials',
      '/decode',
      { Authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` },
    ],
    ['a wrong token in the path', '/token/codec-token-0123456780/decode', {}],
  ])('GIVEN %s WHEN a payload is posted THEN 401 and nothing decoded', async (_, path, headers) => {
    const res = await request(endpoint())
      .post(path)
      .set(headers)
      .send({ payloads: [encrypted] });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'a valid token is required' });
  });

  test('GIVEN the token rotated WHEN each is presented THEN those accepted now decode, the one dropped gets 401', async () => {
    const NEXT = 'codec-token-next-456789';
    let accepted: readonly string[] = [TOKEN, NEXT];
    const rotating = codecEndpoint({ codec, namespace: 'default', tokens: () => accepted, origins: [] });
    const post = (token: string) =>
      request(rotating)
        .post('/decode')
        .set({ Authorization: `Bearer ${token}` })
        .send({ payloads: [encrypted] });
    // During the overlap, both.
    expect((await post(TOKEN)).status).toBe(200);
    expect((await post(NEXT)).status).toBe(200);
    // After it, the new one only.
    accepted = [NEXT];
    expect((await post(TOKEN)).status).toBe(401);
    expect((await post(NEXT)).status).toBe(200);
    expect(
      (
        await request(rotating)
          .post(`/token/${TOKEN}/decode`)
          .send({ payloads: [encrypted] })
      ).status,
    ).toBe(401);
  });

  test.each([
    ['another namespace in the path', '/other/decode', {}, 404],
    ['another namespace in X-Namespace', '/decode', { 'X-Namespace': 'other' }, 404],
    ['an unknown path', '/decrypt', {}, 404],
    ['a deeper path', '/a/b/decode', {}, 404],
  ])('GIVEN %s WHEN posted with the token THEN it is refused', async (_, path, headers, status) => {
    const res = await request(endpoint())
      .post(path)
      .set({ Authorization: `Bearer ${TOKEN}`, ...headers })
      .send({ payloads: [encrypted] });
    expect(res.status).toBe(status);
    expect(typeof res.body.error).toBe('string');
  });

  test.each([
    ['not JSON', '{', 400],
    ['payloads that are not a list', '{"payloads": 1}', 400],
    ['a list, not an object', '[]', 400],
    ['data that is not base64', '{"payloads": [{"metadata": {}, "data": "**"}]}', 400],
    ['metadata that is a list', '{"payloads": [{"metadata": [], "data": ""}]}', 400],
  ])('GIVEN a body that is %s THEN 400 or 413 with a JSON error', async (_, body, status) => {
    const res = await request(endpoint())
      .post('/decode')
      .set({ Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' })
      .send(body);
    expect(res.status).toBe(status);
    expect(Object.keys(res.body)).toEqual(['error']);
  });

  test('GIVEN a payload encrypted with a key it does not hold THEN 400, and no detail of why', async () => {
    const other = new EncryptionCodec(parsePayloadKeys(`k2:${Buffer.alloc(32, 4).toString('base64')}`));
    const [payload] = await other.encode([defaultPayloadConverter.toPayload('x')]);
    const res = await request(endpoint())
      .post('/decode')
      .set('Authorization', `Bearer ${TOKEN}`)
      .send({ payloads: [json(payload!)] });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'the payloads could not be decoded' });
  });

  test('GIVEN a body over the limit THEN 413', async () => {
    const res = await request(endpoint(1024))
      .post('/decode')
      .set('Authorization', `Bearer ${TOKEN}`)
      .send({ payloads: [{ metadata: {}, data: Buffer.alloc(2048).toString('base64') }] });
    expect(res.status).toBe(413);
  });

  test('GIVEN a GET THEN 405', async () => {
    const res = await request(endpoint()).get('/decode').set('Authorization', `Bearer ${TOKEN}`);
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('POST, OPTIONS');
  });
});

describe('CORS', () => {
  const preflight = (origin: string) =>
    request(endpoint()).options('/decode').set({
      Origin: origin,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'content-type,x-namespace',
    });

  test('GIVEN the configured origin WHEN the preflight comes THEN POST with its headers is allowed, credentials too', async () => {
    const res = await preflight(UI);
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(UI);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(res.headers['access-control-allow-methods']).toContain('POST');
    expect(res.headers['access-control-allow-headers']).toBe('Authorization, Content-Type, X-Namespace');
    expect(res.headers.vary).toBe('Origin');
  });

  test.each(['http://127.0.0.1:8234', 'https://evil.example.com', 'null'])(
    'GIVEN the origin %s WHEN the preflight comes THEN it is refused without CORS headers',
    async (origin) => {
      const res = await preflight(origin);
      expect(res.status).toBe(403);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
    },
  );

  test('GIVEN the configured origin WHEN it posts with the token THEN the answer allows it to read', async () => {
    const res = await request(endpoint())
      .post('/decode')
      .set({ Origin: UI, Authorization: `Bearer ${TOKEN}` })
      .send({ payloads: [encrypted] });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(UI);
  });

  test('GIVEN another origin WHEN it posts with the token THEN it is refused', async () => {
    const res = await request(endpoint())
      .post('/decode')
      .set({ Origin: 'https://evil.example.com', Authorization: `Bearer ${TOKEN}` })
      .send({ payloads: [encrypted] });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'origin not allowed' });
  });
});
