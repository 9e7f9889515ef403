/**
 * Requests Node's HTTP parser refuses before the app sees them get the OSB error body too, on a
 * real server (src/roots/broker.ts `listen`), written on a raw socket.
 */
import { connect } from 'node:net';
import type { Server } from 'node:http';
import Koa from 'koa';
import { listen, closeServer } from '../../../src/roots/broker.js';

/** Writes `raw` on a new connection and reads everything until the server closes it. */
function exchange(port: number, raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(raw));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
  });
}

const parsed = (response: string) => {
  const [head, body] = response.split('\r\n\r\n') as [string, string];
  return {
    statusLine: head.split('\r\n')[0],
    contentType: /content-type: (.*)/i.exec(head)?.[1],
    body: JSON.parse(body),
  };
};

describe('requests the HTTP parser refuses', () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    const app = new Koa();
    app.use((ctx) => {
      ctx.body = { ok: true };
    });
    server = await listen(app, { host: '127.0.0.1', port: 0, keepAliveMs: 5_000 });
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => closeServer(server));

  test.each([
    [
      'headers over the size limit',
      `GET /v2/catalog HTTP/1.1\r\nHost: x\r\nX-Large: ${'h'.repeat(20_000)}\r\n\r\n`,
      'HTTP/1.1 431 Request Header Fields Too Large',
      {
        error: 'RequestHeaderFieldsTooLarge',
        description: 'The request headers are larger than the broker accepts.',
      },
    ],
    [
      'a header line without a colon',
      'GET /v2/catalog HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n',
      'HTTP/1.1 400 Bad Request',
      { error: 'BadRequest', description: 'The request is not valid HTTP/1.1.' },
    ],
    [
      'a request line that is not HTTP',
      'GARBAGE\r\n\r\n',
      'HTTP/1.1 400 Bad Request',
      { error: 'BadRequest', description: 'The request is not valid HTTP/1.1.' },
    ],
  ])(
    'GIVEN %s THEN the OSB error body, as JSON, and the connection closes',
    async (_, raw, statusLine, body) => {
      const response = parsed(await exchange(port, raw));
      expect(response).toEqual({ statusLine, contentType: 'application/json; charset=utf-8', body });
    },
  );

  test('GIVEN a HEAD request with headers over the limit THEN 431 with the headers alone', async () => {
    const response = await exchange(
      port,
      `HEAD /v2/catalog HTTP/1.1\r\nHost: x\r\nX-Large: ${'h'.repeat(20_000)}\r\n\r\n`,
    );
    expect(response).toMatch(/^HTTP\/1.1 431 Request Header Fields Too Large\r\n/);
    expect(response.endsWith('\r\n\r\n')).toBe(true);
  });

  test('GIVEN bytes after a complete request with Connection: close THEN the request is answered and the connection closes', async () => {
    const response = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n{}');
    expect(response).toMatch(/^HTTP\/1.1 200 OK\r\n/);
    expect(response).toMatch(/\r\n\r\n\{"ok":true\}$/);
  });

  test('GIVEN a valid request on the same server THEN it is served', async () => {
    const response = await exchange(port, 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(response).toMatch(/^HTTP\/1.1 200 OK/);
  });
});
