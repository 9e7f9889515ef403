/**
 * The example operator's pure parts, and its reflector against a scripted fake apiserver on the
 * loopback interface: watch expiry (410), apiserver errors and clean watch ends.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';
import {
  backupConfigMapName,
  credentialsSecretName,
  dataConfigMapName,
  plainReason,
  roleName,
  storedBackupName,
} from '../../../examples/operator/operator.js';
import { Reflector, type Reflectable } from '../../../examples/operator/reflector.js';

describe('names', () => {
  test.each([
    ['main', 'acid-db', 'main.acid-db.credentials.postgresql.acid.zalan.do', 'main'],
    ['app_user', 'acid-db', 'app-user.acid-db.credentials.postgresql.acid.zalan.do', 'app_user'],
    [
      '1d3c-77aa',
      'sapcp-42',
      '1d3c-77aa.sapcp-42.credentials.postgresql.acid.zalan.do',
      '1d3c_77aa', // a binding id becomes a role name without dashes
    ],
  ])('user %s of %s: Secret %s, role %s', (user, cluster, secret, role) => {
    expect(credentialsSecretName(user, cluster)).toBe(secret);
    expect(roleName(user)).toBe(role);
  });
});

describe('backupConfigMapName', () => {
  test.each([
    [
      'sapcp-abc',
      '3f1c2a9e-4d3b-4a51-9a8e-0c2b7d4e5f60',
      'sapcp-abc-backup-3f1c2a9e-4d3b-4a51-9a8e-0c2b7d4e5f60',
    ],
    ['sapcp-abc', 'Run_1', 'sapcp-abc-backup-run-1'],
    ['sapcp-abc', `${'a'.repeat(300)}`, `sapcp-abc-backup-${'a'.repeat(236)}`],
  ])('of %s for request %s is %s', (cluster, id, name) => {
    expect(backupConfigMapName(cluster, id)).toBe(name);
    expect(name.length).toBeLessThanOrEqual(253);
  });
});

describe('dataConfigMapName', () => {
  test('of sapcp-abc is sapcp-abc-data', () => {
    expect(dataConfigMapName('sapcp-abc')).toBe('sapcp-abc-data');
  });
});

describe('storedBackupName', () => {
  // The suffix is the first 10 hex digits of the SHA-256 of namespace/cluster/id (sha256sum agrees).
  const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  test.each([
    [
      'sf-1d3c',
      'sapcp-1d3c',
      '3f1c2a9e-4d3b-4a51-9a8e-0c2b7d4e5f60',
      'sf-1d3c.sapcp-1d3c.3f1c2a9e-4d3b-4a51-9a8e-0c2b7d4e5f60-b981b89ef3',
    ],
    ['ns', 'pg', 'Run_1', 'ns.pg.run-1-e4c6983cd1'],
    ['ns', 'pg', '_', 'ns.pg-e395ef9d14'],
  ])('of %s/%s, backup %s, is %s', (namespace, cluster, id, name) => {
    expect(storedBackupName(namespace, cluster, id)).toBe(name);
  });

  test('stays a DNS subdomain of at most 253 characters, however long the parts', () => {
    const name = storedBackupName('n'.repeat(63), 'c'.repeat(253), 'I'.repeat(300));
    expect(name.length).toBeLessThanOrEqual(253);
    expect(name).toMatch(DNS_SUBDOMAIN);
  });

  test('keeps apart what reads alike', () => {
    const names = [
      storedBackupName('ns', 'pg', 'Run_1'),
      storedBackupName('ns', 'pg', 'run-1'),
      storedBackupName('ns', 'pg.run', '1'),
      storedBackupName('ns.pg', 'run', '1'),
      storedBackupName('ns', 'pg', `${'a'.repeat(300)}1`),
      storedBackupName('ns', 'pg', `${'a'.repeat(300)}2`),
    ];
    expect(new Set(names).size).toBe(names.length);
    for (const name of names) expect(name).toMatch(DNS_SUBDOMAIN);
  });
});

describe('plainReason', () => {
  test.each([
    ['plain text', 'plain text'],
    ['a "quoted" word', 'a quoted word'],
    [
      'Service "x" is invalid: spec.type: Unsupported value: "NotAType"',
      'Service x is invalid - spec.type - Unsupported value - NotAType',
    ],
    ['- starts like a list # with a comment', 'starts like a list with a comment'],
    ['two\nlines', 'two lines'],
  ])('%j becomes %j, one plain YAML scalar', (input, expected) => {
    const reason = plainReason(input);
    expect(reason).toBe(expected);
    // As the design document's status template writes it: unquoted.
    expect(parse(`description: ${reason}\n`)).toEqual({ description: expected });
  });
});

interface Item extends Reflectable {
  metadata: { name: string; namespace: string; resourceVersion: string };
}
const item = (name: string, resourceVersion: string): Item => ({
  metadata: { name, namespace: 'ns', resourceVersion },
});

type Step = (res: ServerResponse) => void;
const json =
  (status: number, body: unknown): Step =>
  (res) => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };
/** A watch response: events, then either the end of the stream or an open stream. */
const events =
  (list: { type: string; object: unknown }[], end: boolean): Step =>
  (res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    for (const e of list) res.write(`${JSON.stringify(e)}\n`);
    if (end) res.end();
  };

describe('Reflector', () => {
  test('GIVEN watch expiry, apiserver errors and clean watch ends THEN the store follows the server', async () => {
    // GIVEN a fake apiserver that plays these answers in order
    const lists: Step[] = [
      json(200, { items: [item('a', '1'), item('b', '2')], metadata: { resourceVersion: '10' } }),
      json(200, { items: [item('a', '11'), item('c', '12')], metadata: { resourceVersion: '12' } }),
      json(503, { kind: 'Status', code: 503, message: 'etcd is restarting' }),
      json(200, { items: [item('a', '11'), item('c', '12')], metadata: { resourceVersion: '12' } }),
    ];
    const watches: Step[] = [
      events(
        [
          { type: 'MODIFIED', object: item('a', '11') },
          { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } },
        ],
        true,
      ),
      json(500, { kind: 'Status', code: 500 }),
      events([{ type: 'ADDED', object: item('d', '13') }], true),
      events([{ type: 'DELETED', object: item('a', '14') }], false),
    ];
    const watchParams: { resourceVersion: string | null; labelSelector: string | null }[] = [];
    // Settles once the run has opened the last watch and that watch has delivered its event.
    let reachedLastWatch!: () => void;
    const lastWatchDelivered = new Promise<void>((resolve) => (reachedLastWatch = resolve));
    const open: ServerResponse[] = [];
    let listCalls = 0;
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.searchParams.get('watch') === 'true') {
        watchParams.push({
          resourceVersion: url.searchParams.get('resourceVersion'),
          labelSelector: url.searchParams.get('labelSelector'),
        });
        open.push(res);
        const step = watches.shift();
        if (step) step(res);
        else res.writeHead(200).flushHeaders();
      } else {
        listCalls += 1;
        (lists.shift() ?? json(500, {}))(res);
      }
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'fake', server: url, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'c', cluster: 'fake', user: 'u' }],
      currentContext: 'c',
    });

    const changes: string[] = [];
    const abort = new AbortController();
    const reflector = new Reflector<Item>({
      name: 'items',
      kubeConfig,
      path: '/apis/example.io/v1/items',
      labelSelector: 'app=x',
      signal: abort.signal,
      minBackoffMs: 10,
      list: async () => {
        const response = await fetch(`${url}/apis/example.io/v1/items?labelSelector=app%3Dx`);
        const body = (await response.json()) as { items: Item[]; metadata: { resourceVersion: string } };
        if (!response.ok) throw Object.assign(new Error('list failed'), { code: response.status });
        return body;
      },
      onChange: (key, current, previous) => {
        changes.push(
          `${key} ${previous?.metadata.resourceVersion ?? '-'} -> ${current?.metadata.resourceVersion ?? '-'}`,
        );
        if (watchParams.length >= 4 && !reflector.store.has('ns/a')) reachedLastWatch();
      },
    });

    // WHEN it runs until the last watch is open and has delivered its event
    const run = reflector.run();
    await reflector.hasSynced();
    let limit: NodeJS.Timeout | undefined;
    await Promise.race([
      lastWatchDelivered,
      new Promise((_, reject) => {
        limit = setTimeout(
          () => reject(new Error(`stuck: ${JSON.stringify({ watchParams, changes })}`)),
          10_000,
        );
      }),
    ]).finally(() => clearTimeout(limit));

    // THEN it relisted after 410 and after failures, and re-watched from the last version after a clean end
    expect(listCalls).toBe(4);
    expect(watchParams).toEqual([
      { resourceVersion: '10', labelSelector: 'app=x' },
      { resourceVersion: '12', labelSelector: 'app=x' },
      { resourceVersion: '12', labelSelector: 'app=x' },
      { resourceVersion: '13', labelSelector: 'app=x' },
    ]);
    expect([...reflector.store.keys()].sort()).toEqual(['ns/c', 'ns/d']);
    expect(changes).toEqual([
      'ns/a - -> 1',
      'ns/b - -> 2',
      'ns/a 1 -> 11',
      'ns/c - -> 12', // the relist after 410: c appeared,
      'ns/b 2 -> -', // b went while nobody watched
      'ns/d - -> 13',
      'ns/a 11 -> -',
    ]);

    // AND stopping ends the open watch and the run
    abort.abort();
    await run;
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });
});
