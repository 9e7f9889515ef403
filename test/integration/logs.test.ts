/**
 * The logs of a full run, end to end: the broker and the worker as separate processes at the
 * debug level, a platform provisioning, binding, unbinding and deprovisioning, and a scanner
 * trying methods and routes the broker does not have. Every line either process writes is one
 * JSON object with its level and time; none holds a credential made or used during the run; a
 * client's mistakes are no errors.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { eventually, environment } from '../support/env.js';
import { osbClient, provisionBody, untilSettled } from '../support/osb.js';
import {
  CREDENTIALS,
  installCatalog,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
  type SystemSettings,
} from '../support/system.js';

const SERVICE_ID = '7c1a5a2e-6a4b-4c55-9a7e-2d6f5f0f1a01';
const PLAN_ID = '2f3c9a8e-0d7b-4a8e-b7a6-5a1c0e9d4b02';

/** The secrets of the run's kubeconfigs: tokens, client keys, passwords. */
function kubeconfigSecrets(): string[] {
  return environment().clusters.flatMap((c) => {
    const config = parse(readFileSync(c.kubeconfigPath, 'utf8')) as {
      users?: { user?: Record<string, unknown> }[];
    };
    return (config.users ?? []).flatMap((u) =>
      ['token', 'client-key-data', 'password']
        .map((k) => u.user?.[k])
        .filter((v): v is string => typeof v === 'string' && v.length > 0),
    );
  });
}

/** The lines of a log file once the process has written all of them (the last ends its line). */
function linesOf(file: string): Promise<string[]> {
  return eventually(`the whole of ${file}`, async () => {
    const text = readFileSync(file, 'utf8');
    return text.endsWith('\n') ? text.split('\n').slice(0, -1) : undefined;
  });
}

describe('the logs of a full run', () => {
  let operator: { stop(): Promise<void> };
  let settings: SystemSettings;
  let worker: SystemProcess;
  let broker: SystemProcess;

  beforeAll(async () => {
    operator = await startOperator();
    await installCatalog('examples/mustache');
    settings = await systemSettings({ INTEROP_LOG_LEVEL: 'debug' });
    worker = await startProcess('worker', settings);
    broker = await startProcess('broker', settings);
  });
  afterAll(async () => {
    await broker?.stop();
    await worker?.stop();
    await operator?.stop();
  });

  test('GIVEN provision, bind, unbind, deprovision and a scanner WHEN the processes have stopped THEN every line is JSON with level and time, none holds a credential, and none is an error', async () => {
    const osb = osbClient(broker.url);
    const instanceId = randomUUID();
    const bindingId = randomUUID();
    const instancePath = `/v2/service_instances/${instanceId}`;
    const bindingPath = `${instancePath}/service_bindings/${bindingId}`;
    const ids = `service_id=${SERVICE_ID}&plan_id=${PLAN_ID}`;

    const accepted = await osb(
      'PUT',
      `${instancePath}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, PLAN_ID),
    );
    expect(accepted.status).toBe(202);
    const provisioned = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
    );
    expect(provisioned.body.state).toBe('succeeded');

    const bound = await osb('PUT', bindingPath, { service_id: SERVICE_ID, plan_id: PLAN_ID });
    expect(bound.status).toBe(201);
    const credentials = bound.body.credentials as Record<string, string>;
    expect(credentials.password).toMatch(/.{16,}/);
    expect((await osb('GET', bindingPath)).body.credentials).toEqual(credentials);
    expect((await osb('DELETE', `${bindingPath}?${ids}`)).status).toBe(200);

    const deprovision = await osb('DELETE', `${instancePath}?accepts_incomplete=true&${ids}`);
    expect(deprovision.status).toBe(202);
    const deprovisioned = await untilSettled(
      osb,
      `${instancePath}/last_operation?operation=${encodeURIComponent(String(deprovision.body.operation))}`,
    );
    expect(deprovisioned.body.state).toBe('succeeded');

    // a scanner: a method no route has, a route that does not exist, a wrong password
    const wrongPassword = `wrong-${randomUUID()}`;
    const scans = [
      await osb('PROPFIND', '/v2/catalog'),
      await osb('GET', '/v2/../../etc/passwd'),
      await osb('POST', '/v2/catalog', {}),
      await fetch(`${broker.url}/v2/catalog`, {
        headers: {
          Authorization: `Basic ${Buffer.from(`${CREDENTIALS.username}:${wrongPassword}`).toString('base64')}`,
          'X-Broker-API-Version': '2.17',
        },
      }),
    ];
    expect(scans.map((r) => r.status)).toEqual([501, 404, 405, 401]);

    await broker.stop();
    await worker.stop();
    const lines = [...(await linesOf(broker.logFile)), ...(await linesOf(worker.logFile))];

    // THEN every line is one JSON object with a level and an ISO time
    const parsed = lines.map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`a log line is not JSON: ${line}`);
      }
    });
    expect(parsed.length).toBeGreaterThan(20);
    for (const entry of parsed) {
      expect([entry.level, typeof entry.time, typeof entry.message]).toEqual([
        expect.stringMatching(/^(debug|info|warn|error)$/),
        'string',
        'string',
      ]);
      expect(Number.isNaN(Date.parse(String(entry.time)))).toBe(false);
    }
    // the SDK's lines are in it, and the access log names the ids of what it served
    expect(parsed.some((e) => e.component === 'temporal')).toBe(true);
    expect(
      parsed.some(
        (e) => e.message === 'osb request' && e.instanceId === instanceId && e.bindingId === bindingId,
      ),
    ).toBe(true);

    // AND no line holds a credential made or used during the run
    const secrets: [string, string][] = [
      ['the broker password', CREDENTIALS.password],
      ['the wrong password the scanner sent', wrongPassword],
      ['the payload key', settings.payloadKeys.split(':')[1]!],
      ["the binding's password", credentials.password!],
      ["the binding's username", credentials.username!],
      ...kubeconfigSecrets().map((s): [string, string] => ['a kubeconfig secret', s]),
    ];
    expect(secrets.length).toBeGreaterThan(5);
    const text = lines.join('\n');
    for (const [what, secret] of secrets) {
      expect(secret.length).toBeGreaterThan(8);
      if (text.includes(secret)) throw new Error(`${what} is in the logs`);
    }
    expect(text).not.toMatch(/BEGIN [A-Z ]*PRIVATE KEY|apiVersion: v1|client-key-data/);

    // AND a client's mistakes are no errors: nothing in the run was the broker's failure
    expect(parsed.filter((e) => e.level === 'error')).toEqual([]);
  });
});
