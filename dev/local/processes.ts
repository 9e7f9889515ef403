/**
 * Child processes of the local environment: each server runs under tools/run-guarded.sh, so it
 * stops when this process is gone (even after SIGKILL), logs to a file, and its readiness is
 * awaited with a clear error that quotes the log's last lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { repoRoot } from './paths.js';

export interface ManagedProcess {
  readonly name: string;
  readonly logFile: string;
  readonly pid: number | undefined;
  /** Resolves with the exit code once the process has ended. */
  readonly exited: Promise<number | null>;
  /** Stops the process (SIGTERM, then SIGKILL after 5 s). Safe to call twice. */
  stop(): Promise<void>;
  /** SIGKILLs the server (no shutdown of its own, as in a crash) and waits until it is gone. */
  kill(): Promise<void>;
  /** The last lines of its log, for error messages. */
  tail(lines?: number): string;
}

export interface StartOptions {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly logFile: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // The guard script also stops orphans; this makes a normal exit immediate.
  process.on('exit', () => {
    for (const child of running) child.kill('SIGTERM');
  });
}

/**
 * A server started again, `restartDelayMs` after it exits, until it is stopped: as a service
 * manager keeps the node's kubelet running (systemd's `Restart=always`). `pid` is the current
 * process's; `exited` resolves once it is stopped (or killed) and has ended.
 */
export function keptRunning(start: () => ManagedProcess, restartDelayMs = 1000): ManagedProcess {
  let current = start();
  let stopped = false;
  let ended!: (code: number | null) => void;
  const exited = new Promise<number | null>((resolve) => (ended = resolve));
  const watch = (proc: ManagedProcess) =>
    void proc.exited.then(async (code) => {
      if (!stopped) await new Promise((resolve) => setTimeout(resolve, restartDelayMs));
      if (stopped) return ended(code);
      current = start();
      watch(current);
    });
  watch(current);
  const end = (how: (proc: ManagedProcess) => Promise<void>) => async () => {
    stopped = true;
    await how(current);
    ended(await current.exited);
  };
  return {
    name: current.name,
    logFile: current.logFile,
    get pid() {
      return current.pid;
    },
    exited,
    stop: end((proc) => proc.stop()),
    kill: end((proc) => proc.kill()),
    tail: (lines) => current.tail(lines),
  };
}

/** Starts a server process, guarded so that it never outlives this process. */
export function startProcess(options: StartOptions): ManagedProcess {
  installExitHook();
  const log = createWriteStream(options.logFile, { flags: 'a' });
  const guard = path.join(repoRoot(), 'tools', 'run-guarded.sh');
  const child = spawn(guard, [String(process.pid), options.command, ...options.args], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  const exited = new Promise<number | null>((resolve) => {
    child.on('exit', (code) => {
      running.delete(child);
      resolve(code);
    });
    child.on('error', (err) => {
      log.write(`\n[local] failed to start ${options.command}: ${err.message}\n`);
      running.delete(child);
      resolve(-1);
    });
  });
  let stopping: Promise<void> | undefined;
  return {
    name: options.name,
    logFile: options.logFile,
    pid: child.pid,
    exited,
    stop() {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 8000);
        await exited;
        clearTimeout(timer);
        log.end();
      })();
      return stopping;
    },
    kill() {
      stopping ??= (async () => {
        // The server is the guard's child: kill it, and the guard ends with it.
        const children = `/proc/${child.pid}/task/${child.pid}/children`;
        const pids = existsSync(children) ? readFileSync(children, 'utf8').trim().split(/\s+/) : [];
        for (const pid of pids.filter(Boolean)) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // already gone
          }
        }
        if (pids.length === 0) child.kill('SIGKILL');
        await exited;
        log.end();
      })();
      return stopping;
    },
    tail(lines = 20) {
      return tailOf(options.logFile, lines);
    },
  };
}

export function tailOf(file: string, lines = 20): string {
  try {
    const text = readFileSync(file, 'utf8').trimEnd().split('\n');
    return text.slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Whether a server failed to start because a port it was given was taken (its log says so). */
export const isPortClash = (err: unknown): boolean =>
  err instanceof Error && /address already in use/i.test(err.message);

/**
 * Starts a server on ports picked by {@link freePort}, again on new ones when one of them was
 * taken between the pick and the bind (by a server started beside it, or one that chose its own
 * port meanwhile, as the Temporal dev server does for its HTTP API). `start` picks its ports
 * itself and stops what it started when it fails; other failures are thrown at once.
 */
export async function withFreshPorts<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= attempts || !isPortClash(err)) throw err;
    }
  }
}

/**
 * Polls `probe` until it returns true, the process exits, or the time is up; the error names the
 * server, the time and the log's last lines.
 */
export async function waitUntilReady(
  proc: ManagedProcess,
  probe: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void proc.exited.then((code) => {
    exitCode = code;
  });
  while (Date.now() < deadline) {
    if (exitCode !== undefined) {
      throw new Error(
        `${proc.name} exited with code ${exitCode} before it became ready (log: ${proc.logFile}):\n${proc.tail()}`,
      );
    }
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(
    `${proc.name} did not become ready in ${Math.round(timeoutMs / 1000)} s (log: ${proc.logFile}):\n${proc.tail()}`,
  );
}

/** {@link waitUntilReady}, stopping the process when it does not get ready (so that a new start can follow). */
export async function readyOrStopped(
  proc: ManagedProcess,
  probe: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  try {
    await waitUntilReady(proc, probe, timeoutMs);
  } catch (err) {
    await proc.stop();
    throw err;
  }
}
