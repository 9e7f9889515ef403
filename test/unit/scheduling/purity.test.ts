/**
 * Scheduling and cluster logic run inside workflows: they import nothing but each other and the
 * resource types, conditions and migration rules (no Node builtins, no Koa, Temporal or Kubernetes client).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = process.cwd();

function sources(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(path.join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [path.join(dir, entry.name)]
        : [],
  );
}

const ALLOWED = [
  /^src\/scheduling\//,
  /^src\/clusters\//,
  /^src\/resources\/types\.js$/,
  /^src\/resources\/conditions\.js$/,
  /^src\/resources\/migration\.js$/,
];

describe.each(['src/scheduling', 'src/clusters'])('%s', (dir) => {
  test.each(sources(dir))('%s imports only pure modules', (file) => {
    const text = readFileSync(path.join(root, file), 'utf8');
    const specifiers = [...text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/g)].map(
      (m) => m[1]!,
    );
    const outside = specifiers.filter((specifier) => {
      if (!specifier.startsWith('.')) return true;
      const target = path.relative(root, path.resolve(path.dirname(path.join(root, file)), specifier));
      return !ALLOWED.some((allowed) => allowed.test(target.split(path.sep).join('/')));
    });
    expect(outside).toEqual([]);
  });
});
