/** Where the repository and the binary cache are, wherever the code runs from (src/ or dist/src/). */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest folder above this file that has package.json. */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir)
      throw new Error('cannot find the repository root (no package.json above this module)');
    dir = parent;
  }
  return dir;
}

/** Cache of built server binaries, outside the repo. @default ~/.cache/interoperator */
export function cacheDir(): string {
  return process.env.INTEROP_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'interoperator');
}
