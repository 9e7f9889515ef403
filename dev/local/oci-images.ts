/**
 * Tiny container images the harness makes itself, for the node of the deploy suite
 * (dev/local/kube-node.ts): Debian's static busybox and a few files, assembled with umoci and
 * written as a docker archive with skopeo, which `ctr images import` reads. No registry is involved.
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
  const safeName = spec.ref.replace(/[^a-zA-Z0-9.-]+/g, '_');
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
    mkdirSync(path.join(rootfs, 'bin'), { recursive: true });
    mkdirSync(path.join(rootfs, 'tmp'), { recursive: true });
    copyFileSync(STATIC_BUSYBOX, path.join(rootfs, 'bin', 'busybox'));
    chmodSync(path.join(rootfs, 'bin', 'busybox'), 0o755);
    for (const applet of new Set(spec.applets ?? ['sh']))
      symlinkSync('busybox', path.join(rootfs, 'bin', applet));
    for (const [file, text] of Object.entries(spec.files ?? {})) {
      const target = path.join(rootfs, file);
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, text);
    }
    await tool('umoci', ['repack', '--image', image, bundle]);
    await tool('umoci', [
      'config',
      '--image',
      image,
      '--config.env',
      'PATH=/bin',
      ...spec.entrypoint.flatMap((arg) => ['--config.entrypoint', arg]),
    ]);
    const partial = path.join(work, 'image.tar');
    await tool('skopeo', [
      '--insecure-policy',
      'copy',
      '--quiet',
      `oci:${image}`,
      `docker-archive:${partial}:${spec.ref}`,
    ]);
    renameSync(partial, archive);
    return archive;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
