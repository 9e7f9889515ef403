/**
 * The admin API as the integration tests call it: over HTTP with the admin credentials and who
 * asks, and through the built command line (`dist/src/cli/main.js`) with its settings in the
 * environment.
 */
import { spawn } from 'node:child_process';
import { eventually } from './env.js';
import { osbClient, provisionBody, untilSettled, type OsbClient } from './osb.js';
import { installCatalog, startOperator, startProcess, systemSettings, type SystemProcess } from './system.js';

/** The admin credentials the integration tests start their landscapes with. */
export const ADMIN = { username: 'ops', password: 'admin-password-not-secret' };

/** The settings that give a broker the admin credentials {@link ADMIN}. */
export const ADMIN_SETTINGS = {
  INTEROP_ADMIN_USERNAME: ADMIN.username,
  INTEROP_ADMIN_PASSWORD: ADMIN.password,
} as const;

export interface AdminResponse {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** Credentials: the admin's, or others to show they are refused. */
type Auth = { readonly username: string; readonly password: string };

/** Calls the admin API of the broker at `url` as `alice`, with `auth` (the admin's by default) and a JSON body. */
export async function callAdmin(
  url: string,
  method: 'GET' | 'POST',
  path: string,
  options: { readonly auth?: Auth; readonly body?: unknown } = {},
): Promise<AdminResponse> {
  const { username, password } = options.auth ?? ADMIN;
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      Authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
      'X-Requested-By': 'alice',
      ...(options.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
    },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** Runs the built command line against the broker at `url`, with the admin settings in its environment. */
export function runBuiltCli(
  url: string,
  ...args: string[]
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['dist/src/cli/main.js', ...args], {
      env: {
        ...process.env,
        INTEROP_ADMIN_URL: url,
        ...ADMIN_SETTINGS,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** The example PostgreSQL service and plan (examples/postgresql), which the admin tests provision. */
export const POSTGRESQL_SERVICE_ID = '24731fb8-7b84-5f57-914f-c3d55d793dd4';
export const POSTGRESQL_PLAN_ID = '39d7d4c8-6fe2-4c2a-a5ca-b826937d5a88';

/** What {@link adminLandscape} started, once its beforeAll ran. */
export interface AdminLandscape {
  /** The broker and worker as one process, with the admin credentials {@link ADMIN}. */
  readonly system: SystemProcess;
  /** An OSB client of the system. */
  readonly osb: OsbClient;
}

/**
 * Registers an admin test's landscape in the current `describe`: the example operator, the broker
 * and worker as one process with the admin credentials, the example PostgreSQL plan in the
 * catalog, and `instances` provisioned through the OSB API (each must succeed); stopped after.
 */
export function adminLandscape(instances: readonly string[]): AdminLandscape {
  let system: SystemProcess | undefined;
  let osb: OsbClient | undefined;
  let operator: { stop(): Promise<void> } | undefined;
  beforeAll(async () => {
    operator = await startOperator();
    system = await startProcess('all', await systemSettings({ ...ADMIN_SETTINGS }));
    const client = osbClient(system.url);
    osb = client;
    await installCatalog('examples/postgresql');
    await eventually('the plan in the catalog', async () => {
      const res = await client('GET', '/v2/catalog');
      return JSON.stringify(res.body).includes(POSTGRESQL_PLAN_ID) ? true : undefined;
    });
    const operations = await Promise.all(
      instances.map(async (id) => {
        const res = await client(
          'PUT',
          `/v2/service_instances/${id}?accepts_incomplete=true`,
          provisionBody(POSTGRESQL_SERVICE_ID, POSTGRESQL_PLAN_ID, { foo: 'bar' }),
        );
        expect(res.status).toBe(202);
        return String(res.body.operation);
      }),
    );
    for (const [i, id] of instances.entries()) {
      const done = await untilSettled(
        client,
        `/v2/service_instances/${id}/last_operation?operation=${encodeURIComponent(operations[i]!)}`,
      );
      expect(done.body.state).toBe('succeeded');
    }
  });
  afterAll(async () => {
    await system?.stop();
    await operator?.stop();
  });
  return {
    get system() {
      if (!system) throw new Error('the admin landscape is not started (used outside a test?)');
      return system;
    },
    get osb() {
      if (!osb) throw new Error('the admin landscape is not started (used outside a test?)');
      return osb;
    },
  };
}
