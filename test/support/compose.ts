/**
 * A compose client for docker-compose.yml (tools/ensure-compose.sh installs one): the docker CLI's
 * plugin, one built into the cache, or docker-compose on the PATH.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The client's command and leading arguments, or undefined when there is none. */
export function composeCommand(): string[] | undefined {
  if (spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' }).status === 0)
    return ['docker', 'compose'];
  const bin = path.join(
    process.env.INTEROP_CACHE_DIR ?? path.join(os.homedir(), '.cache', 'interoperator'),
    'bin',
  );
  const cached = existsSync(bin)
    ? readdirSync(bin)
        .filter((d) => d.startsWith('compose-'))
        .sort()
        .reverse()
        .map((d) => path.join(bin, d, 'docker-compose'))
        .find((f) => existsSync(f))
    : undefined;
  if (cached) return [cached];
  if (spawnSync('docker-compose', ['version'], { encoding: 'utf8' }).status === 0) return ['docker-compose'];
  return undefined;
}
