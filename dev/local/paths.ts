/** Where the repository is, wherever the code runs from (dev/ or dist/dev/). */
import { existsSync } from 'node:fs';
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
