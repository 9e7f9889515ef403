/**
 * The benchmarks' OSB client: node:http, kept alive, lighter than fetch (the client shares the
 * cores with the broker it measures). A request on a kept-alive connection the server closed just
 * as it went out is sent again on a new one, as HTTP clients do (every OSB request here may be
 * repeated).
 */
import http from 'node:http';

export interface OsbHttp {
  request(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }>;
  close(): void;
}

export function osbHttp(port: number, credentials: string, maxSockets: number): OsbHttp {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  const auth = `Basic ${Buffer.from(credentials).toString('base64')}`;
  const request = (
    method: string,
    path: string,
    body?: unknown,
    retried = false,
  ): Promise<{ status: number; text: string }> =>
    new Promise((resolve, reject) => {
      const payload = body ? JSON.stringify(body) : undefined;
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          path,
          method,
          agent,
          headers: {
            Authorization: auth,
            'X-Broker-API-Version': '2.17',
            ...(payload
              ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) }
              : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (req.reusedSocket && err.code === 'ECONNRESET' && !retried)
          resolve(request(method, path, body, true));
        else reject(err);
      });
      req.end(payload);
    });
  return { request, close: () => agent.destroy() };
}
