/**
 * Starting servers on picked ports: a port taken between the pick and the bind makes the start
 * happen again on new ports, with real processes (node servers) and a real taken port.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  freePort,
  isPortClash,
  readyOrStopped,
  startProcess,
  withFreshPorts,
  type ManagedProcess,
} from '../../../../dev/local/processes.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'interop-processes-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A node HTTP server on `port` that answers `token`, as a managed process. */
function tokenServer(port: number, token: string): ManagedProcess {
  const script = `require('http').createServer((q, s) => s.end(${JSON.stringify(token)})).listen(${port}, '127.0.0.1')`;
  return startProcess({
    name: `token server on ${port}`,
    command: process.execPath,
    args: ['-e', script],
    logFile: path.join(dir, `server-${port}.log`),
  });
}

/** Whether the server on `port` answers `token` (a port held by someone else does not). */
const answers = (port: number, token: string) =>
  new Promise<boolean>((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', timeout: 500 }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve(body === token));
    });
    req.on('timeout', () => req.destroy(new Error('no answer')));
    req.on('error', () => resolve(false));
    req.on('close', () => resolve(false));
  });

async function holdPort(): Promise<{ port: number; release(): Promise<void> }> {
  const connections = new Set<net.Socket>();
  const holder = net.createServer((socket) => connections.add(socket));
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  const { port } = holder.address() as net.AddressInfo;
  return {
    port,
    release: () =>
      new Promise((r) => {
        for (const socket of connections) socket.destroy();
        holder.close(() => r());
      }),
  };
}

describe('withFreshPorts', () => {
  test('GIVEN the port picked first is taken WHEN the server starts THEN it starts again on a new port and runs there', async () => {
    const taken = await holdPort();
    const token = randomUUID();
    const tried: number[] = [];
    try {
      const { proc, port } = await withFreshPorts(async () => {
        const port = tried.length === 0 ? taken.port : await freePort();
        tried.push(port);
        const proc = tokenServer(port, token);
        await readyOrStopped(proc, () => answers(port, token), 10_000);
        return { proc, port };
      });
      try {
        expect(tried).toHaveLength(2);
        expect(port).not.toBe(taken.port);
        expect(await answers(port, token)).toBe(true);
      } finally {
        await proc.stop();
      }
    } finally {
      await taken.release();
    }
  });

  test('GIVEN a start that fails for another reason WHEN started THEN the failure is thrown at once, not retried', async () => {
    let attempts = 0;
    await expect(
      withFreshPorts(async () => {
        attempts += 1;
        const proc = startProcess({
          name: 'failing server',
          command: process.execPath,
          args: ['-e', 'console.error("no such configuration"); process.exit(3)'],
          logFile: path.join(dir, 'failing.log'),
        });
        await readyOrStopped(proc, async () => false, 10_000);
      }),
    ).rejects.toThrow(/failing server exited with code 3[\s\S]*no such configuration/);
    expect(attempts).toBe(1);
  });

  test('GIVEN every port tried is taken WHEN started THEN it gives up after the attempts with the clash in the error', async () => {
    const taken = await holdPort();
    let attempts = 0;
    try {
      const failure = withFreshPorts(async () => {
        attempts += 1;
        const proc = tokenServer(taken.port, 'x');
        await readyOrStopped(proc, () => answers(taken.port, 'x'), 10_000);
      }, 2);
      await expect(failure).rejects.toThrow(/address already in use/);
      expect(attempts).toBe(2);
    } finally {
      await taken.release();
    }
  });

  test('isPortClash reads the clash from the error text only', () => {
    expect(isPortClash(new Error('listen tcp 127.0.0.1:4: bind: address already in use'))).toBe(true);
    expect(isPortClash(new Error('EADDRINUSE: Address already in use 127.0.0.1:4'))).toBe(true);
    expect(isPortClash(new Error('connection refused'))).toBe(false);
    expect(isPortClash('address already in use')).toBe(false);
  });
});
