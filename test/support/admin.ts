/**
 * The admin API as the integration tests call it: over HTTP with the admin credentials and who
 * asks, and through the built command line (`dist/src/cli/main.js`) with its settings in the
 * environment.
 */
import { spawn } from 'node:child_process';

/** The admin credentials the integration tests start their landscapes with. */
export const ADMIN = { username: 'ops', password: 'admin-password-not-secret' };

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
        INTEROP_ADMIN_USERNAME: ADMIN.username,
        INTEROP_ADMIN_PASSWORD: ADMIN.password,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}
