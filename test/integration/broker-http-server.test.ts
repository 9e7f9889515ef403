/**
 * The broker's HTTP server: idle client connections stay open as long as configured, so a load
 * balancer that keeps its idle connections shorter never reuses one the broker is closing.
 *
 * Real sockets and Node's own keep-alive timers, which fake timers cannot drive: so this runs with
 * the integration tests, not the unit tests.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { closeServer, listen } from '../../src/roots/broker.js';
import { PASSWORD, USERNAME, basic, testApi } from '../unit/api/support.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A client connection kept open between requests, as a load balancer's is. */
async function connect(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = '';
  let closedByServer = false;
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
  socket.on('end', () => (closedByServer = true));
  return {
    /** Sends one GET /healthz and returns the response's head once its body has arrived. */
    async get(): Promise<string> {
      received = '';
      socket.write('GET /healthz HTTP/1.1\r\nHost: broker\r\n\r\n');
      for (let waited = 0; !/\{"status":"\w+"\}$/.test(received); waited += 10) {
        if (waited > 2000 || closedByServer) throw new Error(`no answer; got "${received}"`);
        await sleep(10);
      }
      if (!received.endsWith('{"status":"ok"}')) throw new Error(`not healthy: ${received}`);
      return received.split('\r\n\r\n')[0]!;
    },
    closedByServer: () => closedByServer,
    destroy: () => socket.destroy(),
  };
}

describe('the broker server keeps idle connections open for the configured time', () => {
  test('GIVEN keep-alive 3 s WHEN a client is idle 1 s THEN its next request is served on the same connection; idle 4 s THEN the broker has closed it', async () => {
    const server = await listen(testApi().app, { host: '127.0.0.1', port: 0, keepAliveMs: 3000 });
    const client = await connect((server.address() as AddressInfo).port);
    try {
      expect(server.headersTimeout).toBeGreaterThan(3000);
      expect(server.requestTimeout).toBeGreaterThanOrEqual(server.headersTimeout);
      const head = await client.get();
      expect(head).toMatch(/^HTTP\/1\.1 200/);
      expect(head).toMatch(/\r\nKeep-Alive: timeout=3(\r\n|$)/i);
      await sleep(1000);
      expect(client.closedByServer()).toBe(false);
      expect(await client.get()).toMatch(/^HTTP\/1\.1 200/);
      await sleep(4000);
      expect(client.closedByServer()).toBe(true);
    } finally {
      client.destroy();
      await new Promise((r) => server.close(r));
    }
  });

  test('GIVEN a port already taken WHEN the broker listens THEN it fails with the error rather than hanging', async () => {
    const first = await listen(testApi().app, { host: '127.0.0.1', port: 0, keepAliveMs: 1000 });
    try {
      const { port } = first.address() as AddressInfo;
      await expect(listen(testApi().app, { host: '127.0.0.1', port, keepAliveMs: 1000 })).rejects.toThrow(
        /EADDRINUSE/,
      );
    } finally {
      await new Promise((r) => first.close(r));
    }
  });
});

describe('the broker server stops without waiting for kept-alive connections', () => {
  test('GIVEN an idle connection and a request in flight WHEN the server stops THEN the request is answered and the server is closed at once, not after the keep-alive time', async () => {
    const app = new Koa();
    app.use(async (ctx) => {
      await sleep(300);
      ctx.body = { status: 'ok' };
    });
    const server = await listen(app, { host: '127.0.0.1', port: 0, keepAliveMs: 60_000 });
    const port = (server.address() as AddressInfo).port;
    const idle = await connect(port);
    const busy = await connect(port);
    try {
      await idle.get();
      const answer = busy.get();
      await sleep(50);
      const started = Date.now();
      await closeServer(server);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(await answer).toMatch(/^HTTP\/1\.1 200/);
      await sleep(50);
      expect(idle.closedByServer()).toBe(true);
      expect(busy.closedByServer()).toBe(true);
    } finally {
      idle.destroy();
      busy.destroy();
    }
  });
});

describe('a stopping broker drains', () => {
  test('GIVEN the broker is stopping WHEN /healthz is asked THEN 503, so the load balancer takes it out of rotation', async () => {
    let stopping = false;
    const { app } = testApi({ stopping: () => stopping });
    const server = await listen(app, { host: '127.0.0.1', port: 0, keepAliveMs: 60_000 });
    const client = await connect((server.address() as AddressInfo).port);
    try {
      expect(await client.get()).toMatch(/^HTTP\/1\.1 200/);
      stopping = true;
      await expect(client.get()).rejects.toThrow(/HTTP\/1\.1 503[\s\S]*"status":"stopping"/);
    } finally {
      client.destroy();
      await closeServer(server);
    }
  });

  test('GIVEN the broker is stopping WHEN an OSB request comes THEN it is answered and its connection closed, so the client reconnects elsewhere', async () => {
    const { app } = testApi({ stopping: () => true });
    const server = await listen(app, { host: '127.0.0.1', port: 0, keepAliveMs: 60_000 });
    const port = (server.address() as AddressInfo).port;
    const socket = net.connect(port, '127.0.0.1');
    try {
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
      const ended = new Promise((r) => socket.once('end', r));
      socket.write(
        `GET /v2/catalog HTTP/1.1\r\nHost: broker\r\nAuthorization: ${basic(USERNAME, PASSWORD)}\r\nX-Broker-API-Version: 2.17\r\n\r\n`,
      );
      await ended;
      expect(received).toMatch(/^HTTP\/1\.1 200/);
      expect(received).toMatch(/\r\nConnection: close\r\n/i);
      expect(received).toContain('"services"');
    } finally {
      socket.destroy();
      await closeServer(server);
    }
  });
});
