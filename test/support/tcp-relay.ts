/**
 * A TCP relay between a client and a server that can hold what the client sends: bytes sent
 * while it holds wait in the relay, in order, until it lets them through, as a network (or a
 * client's retries through a server's restart) can hold a request on its way. What the server
 * sends passes at once.
 */
import net from 'node:net';

export interface TcpRelay {
  /** host:port the client connects to. */
  readonly address: string;
  /** Holds what clients send from now on. */
  hold(): void;
  /** Lets everything held through, in order, and holds nothing more. */
  release(): void;
  /** How many bytes wait in the relay. */
  held(): number;
  close(): Promise<void>;
}

/** A relay to `target` (host:port) on a free port of 127.0.0.1. */
export async function tcpRelay(target: string): Promise<TcpRelay> {
  const separator = target.lastIndexOf(':');
  const host = target.slice(0, separator);
  const port = Number(target.slice(separator + 1));
  let holding = false;
  const waiting: { readonly upstream: net.Socket; readonly chunk: Buffer }[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host, port });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk: Buffer) => {
      if (holding) waiting.push({ upstream, chunk });
      else upstream.write(chunk);
    });
    client.on('end', () => upstream.end());
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    upstream.on('end', () => client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: relayPort } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${relayPort}`,
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const { upstream, chunk } of waiting.splice(0)) if (!upstream.destroyed) upstream.write(chunk);
    },
    held: () => waiting.reduce((bytes, { chunk }) => bytes + chunk.length, 0),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
