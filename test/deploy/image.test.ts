/**
 * The image, built from the repository's Dockerfile by tools/build-image.sh (or taken from its
 * cache when nothing changed), run in real containers by tools/smoke-image.sh: uid 1000, the
 * selfcheck of the bundles and WebAssembly renderers, and no development dependency.
 *
 * The first build takes minutes (the bases, npm ci, the renderers' Go build); later ones with no
 * change take seconds. It needs root with buildah, mmdebstrap, podman and runc (the scripts
 * install Debian's packages when they can); without them the test is skipped with a warning, and
 * fails under CI=true.
 *
 * By hand, before it is in a jest project of its own (the unit projects' settings, this folder only;
 * one line):
 *   node --experimental-vm-modules node_modules/jest/bin/jest.js --no-watchman --config '{"testEnvironment":"node","transform":{"^.+\\.ts$":["@swc/jest",{"jsc":{"target":"es2022","parser":{"syntax":"typescript"}},"module":{"type":"es6"}}]},"extensionsToTreatAsEsm":[".ts"],"moduleNameMapper":{"^(\\.{1,2}/.*)\\.js$":"$1"},"testRegex":"test/deploy/.*\\.test\\.ts$"}'
 * or the scripts themselves:
 *   tools/smoke-image.sh "$(tools/build-image.sh --tag interoperator:dev | tail -1)"
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { buildTestImage, IMAGE_BUILD_MS, imageTools } from '../support/image.js';
import { testWithTool } from '../support/tools.js';

testWithTool(imageTools())(
  'the image builds from the Dockerfile and passes its smoke run in a container',
  () => {
    // With the docker archive, as test/deploy/chart.test.ts builds it: one build for both.
    const build = buildTestImage();
    expect({ status: build.status, stderr: build.status === 0 ? '' : build.stderr }).toEqual({
      status: 0,
      stderr: '',
    });
    const { archive } = build;
    expect(archive).toMatch(/\/images\/interoperator-test-[0-9a-f]{16}\.oci\.tar$/);
    expect(existsSync(archive)).toBe(true);
    expect(existsSync(build.dockerArchive)).toBe(true);
    expect(build.stderr).toMatch(/archive \(compressed layers\): \d+ MB/);

    const smoke = spawnSync('bash', ['tools/smoke-image.sh', archive], {
      encoding: 'utf8',
      timeout: 10 * 60_000,
    });
    expect({ status: smoke.status, stderr: smoke.status === 0 ? '' : smoke.stderr }).toEqual({
      status: 0,
      stderr: '',
    });
    expect(smoke.stdout.split('\n').filter((line) => line.startsWith('ok: '))).toEqual([
      'ok: runs as uid 1000 (image user 1000:1000)',
      expect.stringMatching(/^ok: workflow bundle compiles: \/app\/dist\/bundles\/workflows\.js$/),
      expect.stringMatching(/^ok: workflow bundle compiles: \/app\/dist\/bundles\/workflows-traced\.js$/),
      'ok: gotemplate renders (WebAssembly)',
      'ok: helm renders (WebAssembly)',
      expect.stringMatching(/^ok: node_modules holds no development dependency/),
    ]);

    // A second run with nothing changed builds nothing: the same archive, at once.
    const again = buildTestImage(5 * 60_000);
    expect([again.status, again.archive]).toEqual([0, archive]);
    expect(again.stderr).toMatch(/up to date: interoperator:test/);
  },
  IMAGE_BUILD_MS + 20 * 60_000,
);
