/**
 * The floor of the read benchmarks: a bare node:http server in its own process answering a
 * last_operation body from memory. Read with the same client and the same concurrency as the
 * broker, it shows what this machine's HTTP and scheduling cost alone, in the same run.
 *
 *   node dist/bench/floor-server.js   (prints its port on stdout)
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const body = JSON.stringify({ state: 'succeeded', description: 'The instance is provisioned' });
const server = http.createServer((_req, res) => {
  res.writeHead(200, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
});
server.keepAliveTimeout = 95_000;
server.listen(0, '127.0.0.1', () => console.log((server.address() as AddressInfo).port));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
