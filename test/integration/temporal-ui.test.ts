/**
 * Operations in the Temporal Web UI, on the real servers: the broker serves its codec endpoint on
 * the port the run's Temporal dev server points its Web UI at (test/integration/global-setup.mjs).
 * A provision's history, encrypted in Temporal, is decoded by the codec endpoint with the token and
 * refused without it; by the Temporal CLI's `--codec-endpoint`; and in a real browser, headless
 * Chromium opens the UI, finds the provision by `OsbInstanceId`, and shows its decoded input and
 * its memo's state. The browser's screenshot is kept in test-artifacts/.
 *
 * Chromium comes from the system (tools/ensure-chromium.sh installs it): without one the browser
 * test is skipped with a message, except under CI=true, where it fails.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import puppeteer, { type Browser } from 'puppeteer-core';
import { ensureBinaries } from '../../dev/local/binaries.js';
import proto from '@temporalio/proto';
import { applyObject } from '../../src/kube/objects.js';
import { instanceWorkflowId } from '../../src/resources/names.js';
import type { SFPlan } from '../../src/resources/types.js';
import { clusters, environment, eventually, temporalClient } from '../support/env.js';
import { osbClient, provisionBody, untilSettled } from '../support/osb.js';
import {
  installCatalog,
  startOperator,
  startProcess,
  systemSettings,
  type SystemProcess,
} from '../support/system.js';

const SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
const PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';
/** The same plan with a provision template that fails, quoting a parameter. */
const FAILING_PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a89';
const ARTIFACTS = path.join(process.cwd(), 'test-artifacts');
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((f) =>
  existsSync(f),
);
const run = promisify(execFile);

// What the functions run in the page use (the tests compile without the DOM's types).
declare const document: { body: { innerText: string } };
declare const location: { pathname: string };

const { temporal } = environment();
/** The production Temporal server (INTEROP_TEMPORAL=server) has no Web UI: this file is skipped on it. */
const withoutUi = temporal.kind === 'server';
if (withoutUi)
  console.warn(
    'the production Temporal server (INTEROP_TEMPORAL=server) has no Web UI: the Web UI and codec endpoint tests are skipped',
  );
const withUi = withoutUi ? describe.skip : describe;
const codec = temporal.uiCodec ?? (withoutUi ? { port: 0, token: '' } : undefined);
if (!codec) throw new Error('the run has no Temporal Web UI with a codec endpoint (global-setup starts one)');
const codecUrl = `http://127.0.0.1:${codec.port}`;

/** A payload as JSON (proto3: bytes in base64), as the UI and the CLI send it. */
interface JsonPayload {
  metadata: Record<string, string>;
  data: string;
}
const toJson = (p: {
  metadata?: Record<string, Uint8Array> | null;
  data?: Uint8Array | null;
}): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

let system: SystemProcess;
let operator: { stop(): Promise<void> };
const instanceId = randomUUID();
const workflowId = instanceWorkflowId(instanceId);
/** A parameter value only this provision's input holds. */
const marker = `ui-${randomUUID()}`;

beforeAll(async () => {
  if (withoutUi) return;
  operator = await startOperator();
  system = await startProcess(
    'all',
    await systemSettings({
      INTEROP_CODEC_PORT: String(codec.port),
      INTEROP_CODEC_TOKEN: codec.token,
      INTEROP_CODEC_ORIGINS: temporal.uiUrl!,
    }),
  );
  const installed = await installCatalog('examples/postgresql');
  const example = installed.find((o) => o.kind === 'SFPlan' && (o as SFPlan).spec.id === PLAN_ID) as SFPlan;
  await applyObject(clusters()[0]!, {
    apiVersion: example.apiVersion,
    kind: example.kind,
    metadata: { name: FAILING_PLAN_ID, namespace: example.metadata.namespace },
    spec: {
      ...example.spec,
      id: FAILING_PLAN_ID,
      name: `${example.spec.name}-failing`,
      templates: example.spec.templates.map((t) =>
        t.action === 'provision'
          ? { ...t, content: '{{ fail (printf "cannot provision foo=%s" .instance.spec.parameters.foo) }}' }
          : t,
      ),
    },
  });
  const osb = osbClient(system.url);
  const path = `/v2/service_instances/${instanceId}`;
  const accepted = await osb(
    'PUT',
    `${path}?accepts_incomplete=true`,
    provisionBody(SERVICE_ID, PLAN_ID, { foo: marker }),
  );
  expect(accepted.status).toBe(202);
  const done = await untilSettled(
    osb,
    `${path}/last_operation?operation=${encodeURIComponent(String(accepted.body.operation))}`,
  );
  expect(done.body.state).toBe('succeeded');
});

afterAll(async () => {
  await system?.stop();
  await operator?.stop();
});

/** The provision's input and memo as history holds them: encrypted. */
async function storedPayloads(): Promise<{ input: JsonPayload[]; memo: JsonPayload }> {
  const raw = await temporalClient();
  try {
    const history = await raw.client.workflow.getHandle(workflowId).fetchHistory();
    const started = history.events![0]!.workflowExecutionStartedEventAttributes!;
    return {
      input: started.input!.payloads!.map(toJson),
      memo: toJson(started.memo!.fields!.osb!),
    };
  } finally {
    await raw.close();
  }
}

const decodeRequest = (payloads: JsonPayload[], headers: Record<string, string>) =>
  fetch(`${codecUrl}/decode`, {
    method: 'POST',
    // What the UI sends (its data-encoder service), plus the credentials.
    headers: { 'Content-Type': 'application/json', 'X-Namespace': temporal.namespace, ...headers },
    body: JSON.stringify({ payloads }),
  });

const text = (p: JsonPayload) => Buffer.from(p.data, 'base64').toString('utf8');

withUi('the codec endpoint over a real history', () => {
  test('GIVEN the token WHEN the provision`s stored input and memo are posted THEN they come back decoded', async () => {
    const { input, memo } = await storedPayloads();
    // The history holds them encrypted.
    expect(text(input[0]!)).not.toContain(marker);
    const res = await decodeRequest([...input, memo], { Authorization: `Bearer ${codec.token}` });
    expect(res.status).toBe(200);
    const decoded = ((await res.json()) as { payloads: JsonPayload[] }).payloads.map(
      (p) => JSON.parse(text(p)) as Record<string, unknown>,
    );
    expect(decoded[0]).toMatchObject({ instanceId, planId: PLAN_ID, parameters: { foo: marker } });
    expect(decoded[1]).toMatchObject({ operation: 'provision', state: 'in progress' });
  });

  test('GIVEN the provision WHEN listed by the filters of docs/operations.md THEN it is found succeeded on its cluster', async () => {
    const raw = await temporalClient();
    try {
      const ids = await eventually('the provision listed as succeeded', async () => {
        const { executions } = await raw.client.workflowService.listWorkflowExecutions({
          namespace: temporal.namespace,
          query: `OsbInstanceId = "${instanceId}" AND OsbClusterId = "1" AND OsbState = "succeeded" AND OsbOperation = "provision"`,
        });
        return executions.length > 0 ? executions.map((e) => e.execution?.workflowId) : undefined;
      });
      expect(ids).toEqual([workflowId]);
    } finally {
      await raw.close();
    }
  });

  test.each([
    ['no token', {}],
    ['a wrong token', { Authorization: `Bearer ${codec.token}x` }],
  ])('GIVEN %s WHEN the same payloads are posted THEN 401 and nothing decoded', async (_, headers) => {
    const { input } = await storedPayloads();
    const res = await decodeRequest(input, headers);
    expect(res.status).toBe(401);
    expect(await res.text()).not.toContain(marker);
  });

  test('GIVEN the UI`s origin WHEN the browser preflights THEN it is allowed; another origin is not', async () => {
    const preflight = (origin: string) =>
      fetch(`${codecUrl}/decode`, {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'content-type,x-namespace',
        },
      });
    const allowed = await preflight(temporal.uiUrl!);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(temporal.uiUrl);
    const other = await preflight('http://127.0.0.1:1');
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });
});

/**
 * Every payload field of a history as the Temporal CLI's `--codec-endpoint` posts it, one body a
 * field: the Go SDK writes `Payloads` with Go's encoding/json, whose `omitempty` leaves out an
 * empty list, empty metadata and empty data. A list is posted whole, a map's payloads one by one;
 * search attributes are not posted.
 */
function cliBodies(
  history: proto.temporal.api.history.v1.IHistory,
): { where: string; body: string; count: number }[] {
  // The messages' classes: at run time the proto package's types are reflected, each holding its
  // class in `ctor`.
  const classOf = (type: unknown) => ((type as { ctor?: unknown }).ctor ?? type) as abstract new () => object;
  const Payload = classOf(proto.temporal.api.common.v1.Payload);
  const Payloads = classOf(proto.temporal.api.common.v1.Payloads);
  const goPayload = (p: proto.temporal.api.common.v1.IPayload) => {
    const metadata = Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]);
    return {
      ...(metadata.length > 0 ? { metadata: Object.fromEntries(metadata) } : {}),
      ...(p.data && p.data.length > 0 ? { data: Buffer.from(p.data).toString('base64') } : {}),
    };
  };
  const bodies: { where: string; body: string; count: number }[] = [];
  const walk = (value: unknown, where: string): void => {
    if (typeof value !== 'object' || value === null || value instanceof Uint8Array) return;
    if (value instanceof Payloads) {
      const list = (value as proto.temporal.api.common.v1.IPayloads).payloads ?? [];
      const body = list.length > 0 ? { payloads: list.map(goPayload) } : {};
      bodies.push({ where, body: JSON.stringify(body), count: list.length });
      return;
    }
    if (value instanceof Payload) {
      const payload = value as proto.temporal.api.common.v1.IPayload;
      bodies.push({ where, body: JSON.stringify({ payloads: [goPayload(payload)] }), count: 1 });
      return;
    }
    for (const [key, child] of Object.entries(value))
      if (key !== 'searchAttributes') walk(child, `${where}.${key}`);
  };
  walk(history, 'history');
  return bodies;
}

withUi('the codec endpoint over the requests of the Temporal CLI', () => {
  test('GIVEN the provision`s history WHEN each payload field is posted as the CLI posts it THEN each is decoded, empty ones too', async () => {
    const raw = await temporalClient();
    let bodies: ReturnType<typeof cliBodies>;
    try {
      bodies = cliBodies(await raw.client.workflow.getHandle(workflowId).fetchHistory());
    } finally {
      await raw.close();
    }
    // Besides the input, results and memo: the operator-changed signal's empty input, posted as
    // `{}`, when the status check was woken by the operator's change (the usual run).
    expect(bodies.length).toBeGreaterThan(3);
    const answers = await Promise.all(
      bodies.map(async ({ where, body, count }) => {
        const res = await fetch(`${codecUrl}/decode`, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            'X-Namespace': temporal.namespace,
            Authorization: `Bearer ${codec.token}`,
          },
          body,
        });
        const answer = (await res.json()) as { payloads?: unknown[] };
        return { where, status: res.status, count: answer.payloads?.length, expected: count };
      }),
    );
    expect(answers.filter((a) => a.status !== 200 || a.count !== a.expected)).toEqual([]);
  });
});

withUi('failures', () => {
  test('GIVEN a template error that quotes a parameter WHEN the provision fails THEN last_operation says so and history holds it encrypted only', async () => {
    const osb = osbClient(system.url);
    const id = randomUUID();
    const secret = `secret-${randomUUID()}`;
    const path = `/v2/service_instances/${id}`;
    await eventually('the failing plan in the catalog', async () => {
      const services = (await osb('GET', '/v2/catalog')).body.services as { plans: { id: string }[] }[];
      return services.some((s) => s.plans.some((p) => p.id === FAILING_PLAN_ID)) ? true : undefined;
    });
    const accepted = await osb(
      'PUT',
      `${path}?accepts_incomplete=true`,
      provisionBody(SERVICE_ID, FAILING_PLAN_ID, { foo: secret }),
    );
    expect(accepted.status).toBe(202);
    const done = await untilSettled(osb, `${path}/last_operation`);
    // The broker holds the key: the description reads as the template said it.
    expect(done.body).toMatchObject({
      state: 'failed',
      description: expect.stringContaining(`cannot provision foo=${secret}`),
    });

    const raw = await temporalClient();
    try {
      const history = await raw.client.workflow.getHandle(instanceWorkflowId(id)).fetchHistory();
      const bytes = Buffer.from(proto.temporal.api.history.v1.History.encode(history).finish());
      expect(bytes.includes(secret)).toBe(false);
      const failures = (history.events ?? []).flatMap((e) => {
        const failure = e.markerRecordedEventAttributes?.failure;
        return failure ? [failure] : [];
      });
      expect(failures.length).toBeGreaterThan(0);
      expect(failures.map((f) => f.message)).toEqual(failures.map(() => 'Encoded failure'));

      // The list filters of docs/operations.md find it: failed provisions of the plan today.
      const today = `${new Date().toISOString().slice(0, 10)}T00:00:00Z`;
      const found = (query: string) =>
        eventually(`workflows matching ${query}`, async () => {
          const { executions } = await raw.client.workflowService.listWorkflowExecutions({
            namespace: temporal.namespace,
            query,
          });
          const ids = executions.map((e) => e.execution?.workflowId);
          return ids.includes(instanceWorkflowId(id)) ? ids : undefined;
        });
      const failed = await found(
        `OsbOperation = "provision" AND OsbPlanId = "${FAILING_PLAN_ID}" AND OsbState = "failed" AND StartTime >= "${today}"`,
      );
      expect(failed).not.toContain(workflowId);
      const { executions } = await raw.client.workflowService.listWorkflowExecutions({
        namespace: temporal.namespace,
        query: `OsbInstanceId = "${id}" AND OsbState = "succeeded"`,
      });
      expect(executions).toEqual([]);
    } finally {
      await raw.close();
    }
  });
});

withUi('the Temporal CLI with --codec-endpoint', () => {
  const show = (...extra: string[]) =>
    run(
      ensureBinaries(['temporal']).temporal,
      [
        'workflow',
        'show',
        '--address',
        temporal.address,
        '--namespace',
        temporal.namespace,
        '--workflow-id',
        workflowId,
        '--output',
        'json',
        '--codec-endpoint',
        codecUrl,
        ...extra,
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    ).then(
      ({ stdout }) => stdout,
      (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}`,
    );

  /** What the CLI printed, with every payload's data (base64 in its JSON) decoded to text. */
  const readable = (output: string) =>
    output +
    [...output.matchAll(/"data":\s*"([A-Za-z0-9+/=]*)"/g)]
      .map((m) => Buffer.from(m[1]!, 'base64').toString('utf8'))
      .join('\n');

  test('GIVEN the token WHEN the provision is shown THEN its input is decoded', async () => {
    const output = await show('--codec-auth', `Bearer ${codec.token}`);
    expect(output).not.toContain('binary/encrypted');
    expect(readable(output)).toContain(marker);
  });

  test('GIVEN no token WHEN the provision is shown THEN its input stays encrypted', async () => {
    expect(readable(await show())).not.toContain(marker);
  });
});

const browserTest = (CHROMIUM || process.env.CI === 'true') && !withoutUi ? describe : describe.skip;
if (!CHROMIUM && process.env.CI !== 'true')
  console.warn(
    'no Chromium found: the Temporal Web UI browser test is skipped (tools/ensure-chromium.sh installs it)',
  );

browserTest('the Temporal Web UI in headless Chromium', () => {
  let browser: Browser | undefined;
  afterAll(async () => {
    await browser?.close();
  });

  test('GIVEN the provision WHEN an operator finds it by OsbInstanceId and opens it THEN its input is decoded and its memo says succeeded', async () => {
    if (!CHROMIUM) throw new Error('no Chromium under CI: tools/ensure-chromium.sh installs it');
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      // As root (containers, CI) Chromium's sandbox cannot start.
      args: ['--no-sandbox', '--disable-dev-shm-usage'],
    });
    const page = await browser.newPage();
    await page.setViewport({ width: 1440, height: 2200 });
    const query = `OsbInstanceId="${instanceId}"`;
    await page.goto(
      `${temporal.uiUrl}/namespaces/${temporal.namespace}/workflows?query=${encodeURIComponent(query)}`,
      { waitUntil: 'networkidle2' },
    );
    const link = await page.waitForSelector(`a[href*="${encodeURIComponent(workflowId)}"]`, {
      timeout: 30_000,
    });
    await link!.click();
    await page.waitForFunction(
      (value: string) => document.body.innerText.includes(value),
      { timeout: 30_000 },
      marker,
    );
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-provision.png'), fullPage: true });
    const history = await page.evaluate(() => document.body.innerText);
    expect(history).toContain(marker);
    expect(history).toContain(`"instanceId": "${instanceId}"`);
    // The memo tab: the operation's state as last_operation reads it.
    await page.locator('a::-p-text(Memo)').click();
    await page.waitForFunction(
      () => /"state":\s*"succeeded"/.test(document.body.innerText) && location.pathname.endsWith('/memo'),
      { timeout: 30_000 },
    );
    await page.screenshot({ path: path.join(ARTIFACTS, 'temporal-ui-provision-memo.png'), fullPage: true });
    const memo = await page.evaluate(() => document.body.innerText);
    expect(memo).toMatch(/"operation":\s*"provision"/);
    expect(memo).toMatch(/"description":\s*"The instance is provisioned"/);
  });
});
