/**
 * What the master's apiserver served during a benchmark's window, from its own /metrics before and
 * after: requests by verb, resource and answer (of every client: the worker, the broker, the
 * operator, the controller manager), and watch events sent by kind (each write reaches every watch
 * of its kind). It says which calls an operation costs the apiserver and who could spare them.
 */
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

/** Counter values by what they count. */
export type ApiserverCounters = Map<string, number>;

const REQUEST = /^apiserver_request_total\{(.*)\} (\S+)$/;
const WATCH_EVENTS = /^apiserver_watch_events_total\{(.*)\} (\S+)$/;

function labelsOf(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const match of text.matchAll(/(\w+)="([^"]*)"/g)) labels[match[1]!] = match[2]!;
  return labels;
}

/** The apiserver's request and watch event counters, read with the kubeconfig's credentials. */
export async function apiserverCounters(kubeConfig: KubeConfig): Promise<ApiserverCounters> {
  const server = new URL(kubeConfig.getCurrentCluster()!.server);
  const options: https.RequestOptions = {
    host: server.hostname,
    port: server.port,
    path: '/metrics',
    method: 'GET',
  };
  await kubeConfig.applyToHTTPSOptions(options);
  const text = await new Promise<string>((resolve, reject) => {
    const req = https.request(options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
  const counters: ApiserverCounters = new Map();
  const add = (key: string, value: number) => counters.set(key, (counters.get(key) ?? 0) + value);
  for (const line of text.split('\n')) {
    const request = REQUEST.exec(line);
    if (request) {
      const l = labelsOf(request[1]!);
      const what = l.subresource ? `${l.resource}/${l.subresource}` : l.resource;
      add(`${l.verb} ${what} ${l.code}`, Number(request[2]));
      continue;
    }
    const events = WATCH_EVENTS.exec(line);
    if (events) {
      const l = labelsOf(events[1]!);
      add(`watch events ${l.kind ?? l.resource ?? ''}`, Number(events[2]));
    }
  }
  return counters;
}

/** Lines saying, per operation, what the apiserver served between two readings (most first). */
export function describeApiserver(
  before: ApiserverCounters,
  after: ApiserverCounters,
  operations: number,
  per: string,
): string[] {
  const delta = [...after]
    .map(([key, value]) => [key, (value - (before.get(key) ?? 0)) / operations] as const)
    .filter(([, each]) => each >= 0.05)
    .sort((a, b) => b[1] - a[1]);
  const requests = delta.filter(([key]) => !key.startsWith('watch events'));
  const events = delta.filter(([key]) => key.startsWith('watch events'));
  const total = requests.reduce((sum, [, each]) => sum + each, 0);
  const list = (rows: typeof delta, cut: number) =>
    rows.map(([key, each]) => `${key.slice(cut)} ${each.toFixed(2)}`).join(', ');
  return [
    `  apiserver per ${per}: ${total.toFixed(1)} requests (verb, resource, code): ${list(requests, 0)}`,
    `  apiserver per ${per}: watch events sent, by kind: ${list(events, 'watch events '.length)}`,
  ];
}
