/**
 * The inter-operator's image as the deploy suite builds it: tools/build-image.sh (or its cache when
 * nothing changed), with the docker archive beside the OCI one, which `ctr images import` names as
 * the tag says (the kubelet then finds `interoperator:test` as the chart's values name it).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Tool } from './tools.js';

/** The tag the deploy suite builds: one build serves every file of the stage. */
export const TEST_IMAGE = { repository: 'interoperator', tag: 'test' } as const;

/** How long a first build may take (the bases, npm ci, the renderers' Go build). */
export const IMAGE_BUILD_MS = 60 * 60_000;

/** The build's tools: at hand, or installable by the scripts (root with apt-get). */
export function imageTools(): Tool {
  const has = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
  const missing = ['buildah', 'mmdebstrap', 'podman', 'runc'].filter((c) => !has(c));
  const installable = process.getuid?.() === 0 && has('apt-get');
  return {
    found: missing.length === 0 || installable ? 'tools/build-image.sh' : undefined,
    name: `${missing.join(', ')} (root, or Debian's packages of those names)`,
    install: `install Debian's ${missing.join(' ')} packages, or run as root where apt-get can`,
  };
}

/** What one run of tools/build-image.sh gave. */
export interface ImageBuild {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The OCI archive (the script's last line). */
  readonly archive: string;
  /** The docker archive beside it, for `ctr images import`. */
  readonly dockerArchive: string;
}

/** Runs tools/build-image.sh for {@link TEST_IMAGE}, with the docker archive. */
export function buildTestImage(timeoutMs = IMAGE_BUILD_MS): ImageBuild {
  const build = spawnSync(
    'bash',
    ['tools/build-image.sh', '--tag', `${TEST_IMAGE.repository}:${TEST_IMAGE.tag}`, '--docker-archive'],
    { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
  );
  const archive = build.stdout.trim().split('\n').pop() ?? '';
  return {
    status: build.status,
    stdout: build.stdout,
    stderr: build.stderr,
    archive,
    dockerArchive: archive.replace(/\.oci\.tar$/, '.docker.tar'),
  };
}

/** buildah on the build script's own image storage (tools/build-image.sh), where the layers are already. */
function buildah(...args: string[]): string {
  const cache = process.env.INTEROP_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'interoperator');
  const result = spawnSync(
    'buildah',
    [
      '--root',
      path.join(cache, 'images', 'storage'),
      '--runroot',
      `/tmp/interoperator-images-run-${process.getuid?.() ?? 0}`,
      '--storage-driver',
      'overlay',
      ...args,
    ],
    { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
  );
  if (result.status !== 0) throw new Error(`buildah ${args[0]} failed: ${result.stderr || result.error}`);
  return result.stdout.trim();
}

/**
 * A second build of the image, as the next release of the same Dockerfile: `base` with its
 * prebuilt workflow bundle changed by `change` (one layer more), tagged `tag`, written as a docker
 * archive into `dir`; resolves with the archive's path.
 */
export function buildChangedImage(
  base: ImageBuild,
  tag: string,
  change: (bundle: string) => string,
  dir: string,
): string {
  const container = buildah('from', '--pull-never', '--quiet', `oci-archive:${base.archive}`);
  try {
    const root = buildah('mount', container);
    const bundle = path.join(root, 'app', 'dist', 'bundles', 'workflows.js');
    writeFileSync(bundle, change(readFileSync(bundle, 'utf8')));
    buildah('umount', container);
    buildah('commit', '--quiet', container, `localhost/${tag}`);
    const archive = path.join(dir, `${tag.replace(/[:/]/g, '-')}.docker.tar`);
    rmSync(archive, { force: true });
    buildah('push', '--quiet', `localhost/${tag}`, `docker-archive:${archive}:${tag}`);
    return archive;
  } finally {
    buildah('rm', container);
    try {
      buildah('rmi', `localhost/${tag}`);
    } catch {
      // not committed
    }
  }
}
