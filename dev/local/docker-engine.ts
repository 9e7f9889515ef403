/**
 * A Docker engine of the harness's own (Debian's docker.io: dockerd, with the containerd it starts
 * and manages itself), for running docker-compose.yml (test/deploy/compose.test.ts). Everything it
 * keeps is its own: the image store under the cache (so that loaded images survive the run), and
 * its exec root, pid file, socket and managed containerd under `runDir`. It leaves the machine's
 * networking alone, so that the deploy suite's node beside it keeps working: no iptables rules or
 * chains (published ports go through docker-proxy, its userland proxy, on the loopback address),
 * no change of IP forwarding, no default bridge; a compose project's network is a bridge of its
 * own, from an address pool of its own, removed with the project or, at the latest, on
 * {@link DockerEngine.stop}.
 */
import { execFile } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheDir } from '../settings.js';
import { startProcess, waitUntilReady, type ManagedProcess } from './processes.js';

const run = promisify(execFile);

/** Debian's engine (the docker.io package; tools/ensure-compose.sh installs it). */
export const DOCKERD = '/usr/sbin/dockerd';

/**
 * The address pool of the engine's networks: apart from the node's pod and Service ranges and the
 * engine's own default pools.
 */
export const DOCKER_ADDRESS_POOL = '172.29.0.0/16';

/** Why the engine could not start or do what it was asked. */
export class DockerEngineError extends Error {
  override readonly name = 'DockerEngineError';
}

export interface DockerEngineOptions {
  /** The folder of its exec root, pid file, socket and log (short: containerd's sockets live there). */
  readonly runDir: string;
  /** Its image and volume store. @default <cache>/docker */
  readonly dataRoot?: string;
  /** How long it may take to answer. @default 60 s */
  readonly startTimeoutMs?: number;
}

export interface DockerEngine {
  /** DOCKER_HOST for its clients: `unix://<runDir>/docker.sock`. */
  readonly host: string;
  readonly logFile: string;
  /** Runs the docker client against this engine; resolves with its output, or throws with its stderr. */
  docker(args: readonly string[], timeoutMs?: number): Promise<string>;
  /**
   * Loads a docker archive unless the engine already holds its image (the same image id under the
   * same reference), removes the images left without a name, and returns the reference.
   */
  load(archive: string, ref: string): Promise<string>;
  /** Removes the networks no container uses, stops the engine and removes bridges it left. */
  stop(): Promise<void>;
}

/** The docker client: Debian's, beside its engine. */
const DOCKER = '/usr/bin/docker';

/** Starts the engine and resolves once it answers. Needs root. */
export async function startDockerEngine(options: DockerEngineOptions): Promise<DockerEngine> {
  if (process.getuid?.() !== 0) throw new DockerEngineError('the Docker engine needs root');
  for (const program of [DOCKERD, DOCKER])
    if (!existsSync(program))
      throw new DockerEngineError(
        `${program} is missing: install Debian's docker.io (tools/ensure-compose.sh)`,
      );
  const runDir = path.resolve(options.runDir);
  const dataRoot = options.dataRoot ?? path.join(cacheDir(), 'docker');
  mkdirSync(runDir, { recursive: true });
  mkdirSync(dataRoot, { recursive: true });
  const socket = path.join(runDir, 'docker.sock');
  const host = `unix://${socket}`;
  const logFile = path.join(runDir, 'dockerd.log');
  const proc: ManagedProcess = startProcess({
    name: 'dockerd',
    command: DOCKERD,
    args: [
      `--data-root=${dataRoot}`,
      `--exec-root=${path.join(runDir, 'exec')}`,
      `--pidfile=${path.join(runDir, 'dockerd.pid')}`,
      `--host=${host}`,
      '--iptables=false',
      '--ip6tables=false',
      '--ip-forward=false',
      '--ip-masq=false',
      '--bridge=none',
      '--userland-proxy=true',
      `--default-address-pool=base=${DOCKER_ADDRESS_POOL},size=24`,
      '--shutdown-timeout=5',
      '--log-level=warn',
    ],
    logFile,
  });

  const docker = async (args: readonly string[], timeoutMs = 120_000): Promise<string> => {
    try {
      const { stdout } = await run(DOCKER, args, {
        env: { ...process.env, DOCKER_HOST: host },
        timeout: timeoutMs,
        maxBuffer: 64 * 1024 * 1024,
      });
      return stdout;
    } catch (err) {
      const { stderr, message } = err as { stderr?: string; message: string };
      throw new DockerEngineError(`docker ${args.join(' ')} failed: ${(stderr ?? '').trim() || message}`);
    }
  };

  try {
    await waitUntilReady(
      proc,
      async () =>
        existsSync(socket) && (await docker(['version', '--format', '{{.Server.Version}}'], 5000)) !== '',
      options.startTimeoutMs ?? 60_000,
    );
  } catch (err) {
    await proc.stop();
    throw err;
  }

  const bridgesOf = async (): Promise<string[]> =>
    (await docker(['network', 'ls', '--quiet', '--filter', 'driver=bridge']).catch(() => ''))
      .split('\n')
      .filter(Boolean)
      .map((id) => `br-${id.slice(0, 12)}`);

  return {
    host,
    logFile,
    docker,
    async load(archive, ref) {
      const id = archiveImageId(archive);
      const held = await docker(['image', 'inspect', '--format', '{{.Id}}', ref]).catch(() => '');
      if (id && held.trim() === id) return ref;
      await docker(['load', '--quiet', '--input', archive], 10 * 60_000);
      // The image the reference named before, now without a name, would stay in the store for ever.
      await docker(['image', 'prune', '--force']);
      return ref;
    },
    async stop() {
      const bridges = await bridgesOf();
      await docker(['network', 'prune', '--force']).catch(() => '');
      await proc.stop();
      for (const bridge of bridges)
        if (existsSync(`/sys/class/net/${bridge}`))
          await run('ip', ['link', 'del', bridge]).catch(() => undefined);
    },
  };
}

/**
 * The image id of a docker archive with one image (`sha256:` and the digest of its config, which is
 * what `docker load` makes its id), or undefined when the archive does not say.
 */
function archiveImageId(archive: string): string | undefined {
  // A docker archive is a tar whose manifest.json names the config `<digest>.json`; reading the
  // listing is enough, without unpacking the layers.
  const listing = readTarNames(archive);
  const config = listing.find((name) => /^[0-9a-f]{64}\.json$/.test(name));
  return config ? `sha256:${config.slice(0, 64)}` : undefined;
}

/** The names of the entries of an uncompressed tar, read from their 512-byte headers only. */
function readTarNames(file: string): string[] {
  const fd = openSync(file, 'r');
  try {
    const names: string[] = [];
    const header = Buffer.alloc(512);
    const field = (from: number, to: number) =>
      header.subarray(from, to).toString('utf8').replace(/\0.*$/s, '');
    for (let offset = 0; readSync(fd, header, 0, 512, offset) === 512;) {
      if (header.every((byte) => byte === 0)) break;
      names.push(field(0, 100));
      offset += 512 + Math.ceil(parseInt(field(124, 136).trim() || '0', 8) / 512) * 512;
    }
    return names;
  } finally {
    closeSync(fd);
  }
}
