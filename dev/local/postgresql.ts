/**
 * A throwaway PostgreSQL cluster from Debian's packages, for the production Temporal server: made
 * with initdb in the run's work dir, listening on a free port of 127.0.0.1 and on a unix socket in
 * that dir, stopped with the run. Nobody but this machine reaches it, so it trusts local logins.
 *
 * PostgreSQL refuses to run as root; as root, the cluster runs as the `postgres` user that
 * Debian's package creates, and the work dir is opened for it to reach its data.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { postgresBinDir } from '../settings.js';
import { freePort, readyOrStopped, startProcess, withFreshPorts } from './processes.js';

export interface PostgresCluster {
  readonly host: string;
  readonly port: number;
  /** The superuser, who logs in without a password from this machine. */
  readonly user: string;
  /** The folder of its unix socket. */
  readonly socketDir: string;
  readonly logFile: string;
  stop(): Promise<void>;
}

export interface PostgresOptions {
  /** Where the cluster's data, socket and log go. */
  readonly workDir: string;
  /** @default 'temporal' */
  readonly user?: string;
  /** @default 60000 */
  readonly startTimeoutMs?: number;
}

/** The PostgreSQL server programs: INTEROP_POSTGRES_BIN_DIR, else the newest /usr/lib/postgresql/<n>/bin. */
export function findPostgresBinDir(): string {
  const given = postgresBinDir();
  if (given) return given;
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base)
    ? readdirSync(base)
        .filter((v) => existsSync(path.join(base, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0)
    throw new Error(
      "no PostgreSQL server found in /usr/lib/postgresql: install Debian's postgresql package (tools/ensure-postgresql.sh does) or set INTEROP_POSTGRES_BIN_DIR",
    );
  return path.join(base, versions[0]!, 'bin');
}

/** The user the server runs as: `postgres` when this process is root (PostgreSQL refuses root). */
function serverAccount(): { uid: number; gid: number; name: string } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid, name: 'postgres' };
  } catch {
    throw new Error(
      "PostgreSQL cannot run as root and there is no postgres user: install Debian's postgresql package",
    );
  }
}

/** Whether every folder from `dir` up lets other users pass through it. */
function passableByOthers(dir: string): boolean {
  for (let d = dir; ; d = path.dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) return false;
    if (path.dirname(d) === d) return true;
  }
}

export async function startPostgres(options: PostgresOptions): Promise<PostgresCluster> {
  const bin = findPostgresBinDir();
  const user = options.user ?? 'temporal';
  const account = serverAccount();
  const runDir = path.resolve(options.workDir);
  // The log stays in the run's folder, which this process writes, wherever the data goes.
  mkdirSync(runDir, { recursive: true });
  const logFile = path.join(runDir, 'postgresql.log');
  let workDir = runDir;
  const elsewhere = account !== undefined && !passableByOthers(path.dirname(path.dirname(workDir)));
  if (elsewhere) {
    // A folder above the run's (root's home) is closed to the postgres user: the cluster goes
    // to a folder of its own in the temporary directory instead, removed when it stops.
    workDir = mkdtempSync(path.join(os.tmpdir(), 'interop-postgresql-'));
  }
  const dataDir = path.join(workDir, 'data');
  mkdirSync(workDir, { recursive: true });
  if (account) {
    // The postgres user must pass through the run's folder (not list it) to reach its own.
    chmodSync(path.dirname(workDir), statSync(path.dirname(workDir)).mode | 0o001);
    chownSync(workDir, account.uid, account.gid);
  }
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    try {
      execFileSync(
        path.join(bin, 'initdb'),
        ['-D', dataDir, '-U', user, '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'],
        {
          cwd: workDir,
          stdio: ['ignore', 'pipe', 'pipe'],
          ...(account ? { uid: account.uid, gid: account.gid } : {}),
        },
      );
    } catch (err) {
      const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
      throw new Error(
        `initdb failed in ${dataDir}${account ? ` (as ${account.name})` : ''}: ${stderr ?? String(err)}`,
      );
    }
  }
  const { proc, port } = await withFreshPorts(async () => {
    const port = await freePort();
    const server = [
      path.join(bin, 'postgres'),
      '-D',
      dataDir,
      '-p',
      String(port),
      '-h',
      '127.0.0.1',
      '-k',
      workDir,
      // The Temporal server opens a pool per service and store.
      '-c',
      'max_connections=300',
    ];
    const proc = startProcess({
      name: 'postgresql',
      command: account ? 'setpriv' : server[0]!,
      args: account
        ? ['--reuid', String(account.uid), '--regid', String(account.gid), '--clear-groups', ...server]
        : server.slice(1),
      logFile,
      cwd: workDir,
    });
    await readyOrStopped(
      proc,
      async () => {
        execFileSync(path.join(bin, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(port), '-U', user]);
        return true;
      },
      options.startTimeoutMs ?? 60_000,
    );
    return { proc, port };
  });
  return {
    host: '127.0.0.1',
    port,
    user,
    socketDir: workDir,
    logFile,
    stop: async () => {
      await proc.stop();
      if (elsewhere) rmSync(workDir, { recursive: true, force: true });
    },
  };
}
