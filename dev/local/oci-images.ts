/**
 * Tiny container images the harness makes itself, for the node of the deploy suite
 * (dev/local/kube-node.ts): Debian's static busybox and a few files; and images of the cached
 * static server binaries for docker-compose.yml (test/deploy/compose.test.ts). Assembled with umoci
 * and written as docker archives with skopeo, which `ctr images import` and `docker load` read. No
 * registry is involved.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Debian's busybox-static (tools/ensure-node-packages.sh installs it). */
export const STATIC_BUSYBOX = '/bin/busybox';

/** What goes into a busybox image. */
export interface BusyboxImageSpec {
  /** The image's reference, e.g. `localhost/interop/pause:1` (a `localhost/` name is never pulled). */
  readonly ref: string;
  /** The busybox applets linked into /bin. @default ['sh'] */
  readonly applets?: readonly string[];
  /** Files of the image by absolute path, with their text. @default {} */
  readonly files?: Readonly<Record<string, string>>;
  /** The command the image runs. */
  readonly entrypoint: readonly string[];
}

/** Why an image could not be made: the tool that failed and what it said. */
export class ImageBuildError extends Error {
  override readonly name = 'ImageBuildError';
}

async function tool(command: string, args: readonly string[]): Promise<void> {
  try {
    await run(command, args, { maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const { stderr, message } = err as { stderr?: string; message: string };
    throw new ImageBuildError(`${command} ${args.join(' ')} failed: ${(stderr ?? '').trim() || message}`);
  }
}

/**
 * Makes the image as a docker archive under `dir` and returns its path. The archive is named by a
 * hash of the spec and of the busybox binary, so an existing one is reused as it is.
 */
export async function makeBusyboxImage(spec: BusyboxImageSpec, dir: string): Promise<string> {
  if (!existsSync(STATIC_BUSYBOX))
    throw new ImageBuildError(
      `${STATIC_BUSYBOX} is missing: install Debian's busybox-static (tools/ensure-node-packages.sh)`,
    );
  const key = createHash('sha256')
    .update(JSON.stringify(spec))
    .update(readFileSync(STATIC_BUSYBOX))
    .digest('hex')
    .slice(0, 16);
  return assemble(spec.ref, key, dir, ['PATH=/bin'], spec.entrypoint, (rootfs) => {
    mkdirSync(path.join(rootfs, 'bin'), { recursive: true });
    copyFileSync(STATIC_BUSYBOX, path.join(rootfs, 'bin', 'busybox'));
    chmodSync(path.join(rootfs, 'bin', 'busybox'), 0o755);
    for (const applet of new Set(spec.applets ?? ['sh']))
      symlinkSync('busybox', path.join(rootfs, 'bin', applet));
    for (const [file, text] of Object.entries(spec.files ?? {})) {
      const target = path.join(rootfs, file);
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, text);
    }
  });
}

/** An image of static programs and nothing else, as the server images of docker-compose.yml. */
export interface BinaryImageSpec {
  /** The image's reference, e.g. `localhost/interop/etcd:v3.5.21`. */
  readonly ref: string;
  /** Static executables of this machine, copied into /usr/local/bin (on the image's PATH). */
  readonly binaries: readonly string[];
  /**
   * The command the image runs, to which a container's command is appended; none when the
   * container's command names the program itself. @default []
   */
  readonly entrypoint?: readonly string[];
}

/** The image's PATH: the public server images find their programs there. */
const BINARY_IMAGE_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

const PASSWD =
  'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n';
const GROUP = 'root:x:0:\nnogroup:x:65534:\n';

/**
 * Makes an image of static binaries (with an empty /tmp, and root and nobody in /etc/passwd) as a docker archive under `dir`, and returns
 * its path. The archive is named by a hash of the spec and of each binary's size and modification
 * time, so an existing one is reused until a binary is rebuilt.
 */
export async function makeBinaryImage(spec: BinaryImageSpec, dir: string): Promise<string> {
  const hash = createHash('sha256').update(JSON.stringify(spec)).update(PASSWD).update(GROUP);
  for (const binary of spec.binaries) {
    if (!existsSync(binary))
      throw new ImageBuildError(`${binary} is missing (tools/build-binaries.sh builds it)`);
    const { size, mtimeMs } = statSync(binary);
    hash.update(`${binary} ${size} ${mtimeMs}\n`);
  }
  const key = hash.digest('hex').slice(0, 16);
  return assemble(spec.ref, key, dir, [BINARY_IMAGE_PATH], spec.entrypoint ?? [], (rootfs) => {
    const bin = path.join(rootfs, 'usr', 'local', 'bin');
    mkdirSync(bin, { recursive: true });
    for (const binary of spec.binaries) {
      const target = path.join(bin, path.basename(binary));
      copyFileSync(binary, target);
      chmodSync(target, 0o755);
    }
    chmodSync(path.join(rootfs, 'tmp'), 0o1777);
    // Go programs built without cgo find their user in /etc/passwd (the Temporal server asks).
    mkdirSync(path.join(rootfs, 'etc'), { recursive: true });
    mkdirSync(path.join(rootfs, 'root'), { recursive: true, mode: 0o700 });
    writeFileSync(path.join(rootfs, 'etc', 'passwd'), PASSWD);
    writeFileSync(path.join(rootfs, 'etc', 'group'), GROUP);
  });
}

/**
 * Makes an image of an empty root file system (with /tmp) filled by `fill`, with `env` and
 * `entrypoint`, as the docker archive `<ref>-<key>.tar` under `dir`, unless that archive is there.
 */
async function assemble(
  ref: string,
  key: string,
  dir: string,
  env: readonly string[],
  entrypoint: readonly string[],
  fill: (rootfs: string) => void,
): Promise<string> {
  const safeName = ref.replace(/[^a-zA-Z0-9.-]+/g, '_');
  const archive = path.join(dir, `${safeName}-${key}.tar`);
  if (existsSync(archive)) return archive;

  const work = path.join(dir, `${safeName}-${key}.${process.pid}.tmp`);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const layout = path.join(work, 'layout');
    const bundle = path.join(work, 'bundle');
    const image = `${layout}:latest`;
    await tool('umoci', ['init', '--layout', layout]);
    await tool('umoci', ['new', '--image', image]);
    await tool('umoci', ['unpack', '--rootless', '--image', image, bundle]);
    const rootfs = path.join(bundle, 'rootfs');
    mkdirSync(path.join(rootfs, 'tmp'), { recursive: true });
    fill(rootfs);
    await tool('umoci', ['repack', '--image', image, bundle]);
    await tool('umoci', [
      'config',
      '--image',
      image,
      ...env.flatMap((variable) => ['--config.env', variable]),
      ...entrypoint.flatMap((arg) => ['--config.entrypoint', arg]),
    ]);
    const partial = path.join(work, 'image.tar');
    await tool('skopeo', [
      '--insecure-policy',
      'copy',
      '--quiet',
      `oci:${image}`,
      `docker-archive:${partial}:${ref}`,
    ]);
    renameSync(partial, archive);
    return archive;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
