/**
 * An HTTP server on the loopback interface that serves plan templates to the tests of templates
 * fetched from a `url`, and counts how often each path was asked for.
 *
 *   /ok.tpl, /ttl.tpl   a gotemplate, at once
 *   /together.tpl       the same template, held until {@link TemplateServer.release} (then at once)
 *   /moved.tpl          a redirect to /ok.tpl
 *   /huge.tpl           2 MiB, with a content-length; /chunked-huge.tpl the same streamed without one
 *   /slow.tpl           never answers
 *   anything else       404
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What every template path but the error cases serves. */
export const SERVED_TEMPLATE = 'name: {{ .instance.name }}';

export interface TemplateServer {
  /** http://127.0.0.1:PORT */
  readonly base: string;
  /** Requests per path. */
  readonly hits: Map<string, number>;
  /** Resolves once `path` has been asked for. */
  requested(path: string): Promise<void>;
  /** Answers the held /together.tpl requests, and later ones at once. */
  release(): void;
  close(): Promise<void>;
}

export async function startTemplateServer(): Promise<TemplateServer> {
  const hits = new Map<string, number>();
  const waiting = new Map<string, (() => void)[]>();
  const held: http.ServerResponse[] = [];
  let released = false;
  const server = http.createServer((req, res) => {
    const url = req.url!;
    hits.set(url, (hits.get(url) ?? 0) + 1);
    for (const resolve of waiting.get(url)?.splice(0) ?? []) resolve();
    if (url === '/ok.tpl' || url === '/ttl.tpl') res.end(SERVED_TEMPLATE);
    else if (url === '/together.tpl') {
      if (released) res.end(SERVED_TEMPLATE);
      else held.push(res);
    } else if (url === '/huge.tpl') res.end('x'.repeat(2 * 1024 * 1024));
    else if (url === '/chunked-huge.tpl') {
      // No content-length: the limit must hold while the body streams in.
      res.write('x'.repeat(700 * 1024));
      res.end('x'.repeat(700 * 1024));
    } else if (url === '/slow.tpl') {
      // Never answers within the test's time limit.
    } else if (url === '/moved.tpl') {
      res.writeHead(302, { location: '/ok.tpl' }).end();
    } else res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    requested: (path) =>
      hits.has(path)
        ? Promise.resolve()
        : new Promise((resolve) => waiting.set(path, [...(waiting.get(path) ?? []), resolve])),
    release: () => {
      released = true;
      for (const res of held.splice(0)) res.end(SERVED_TEMPLATE);
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
