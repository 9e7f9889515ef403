/**
 * `main.js selfcheck`, run as built (dist/src/main.js): the check an image's smoke run makes
 * (tools/smoke-image.sh), without configuration or servers.
 */
import { spawnSync } from 'node:child_process';
import { gunzipSync } from 'node:zlib';
import { tarGz } from '../../src/roots/selfcheck.js';

describe('main.js selfcheck', () => {
  test('compiles both workflow bundles, renders with both WebAssembly renderers and exits 0', () => {
    const res = spawnSync(process.execPath, ['--no-memory-reducer', 'dist/src/main.js', 'selfcheck'], {
      encoding: 'utf8',
      timeout: 110_000,
      env: { PATH: process.env.PATH ?? '' },
    });
    expect({ status: res.status, signal: res.signal, stderr: res.stderr }).toEqual({
      status: 0,
      signal: null,
      stderr: '',
    });
    expect(res.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^ok: workflow bundle compiles: .*dist\/bundles\/workflows\.js$/),
      expect.stringMatching(/^ok: workflow bundle compiles: .*dist\/bundles\/workflows-traced\.js$/),
      'ok: gotemplate renders (WebAssembly)',
      'ok: helm renders (WebAssembly)',
    ]);
  });

  test("writes its chart as a tar that tar reads: names, sizes and the header's checksum", () => {
    const tar = gunzipSync(tarGz({ 'c/Chart.yaml': 'name: c\n', 'c/t/x.yaml': 'x'.repeat(513) }));
    expect(tar.length).toBe(512 + 512 + 512 + 1024 + 1024);
    const header = tar.subarray(0, 512);
    const stored = parseInt(header.subarray(148, 154).toString(), 8);
    const blank = Buffer.from(header);
    blank.fill(' ', 148, 156);
    expect(stored).toBe(blank.reduce((sum, byte) => sum + byte, 0));
    expect(header.subarray(0, 12).toString()).toBe('c/Chart.yaml');
    expect(parseInt(tar.subarray(1024 + 124, 1024 + 135).toString(), 8)).toBe(513);
  });
});
