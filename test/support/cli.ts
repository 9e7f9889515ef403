/**
 * The built command line (`node dist/src/cli/main.js`) as an operator runs it: a child process with
 * the broker's URL and the admin credentials in its environment.
 */
import { spawn } from 'node:child_process';

export interface CliRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the command line with `args` against the broker at `url`, as `admin`; resolves when it exits. */
export function runCli(
  url: string,
  admin: { readonly username: string; readonly password: string },
  ...args: string[]
): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['dist/src/cli/main.js', ...args], {
      env: {
        ...process.env,
        INTEROP_ADMIN_URL: url,
        INTEROP_ADMIN_USERNAME: admin.username,
        INTEROP_ADMIN_PASSWORD: admin.password,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}
