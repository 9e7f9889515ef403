/**
 * A folder laid out as the kubelet mounts a Secret: each `<key>` links to `..data/<key>`, and
 * `..data` links to a folder of the current version. A new version is written beside, and `..data`
 * replaced by one rename, so a reader sees every key of one version or every key of the other.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export class SecretVolume {
  readonly dir: string;
  private version = 0;

  /** Mounts `data` (key to value) under a new folder in `parent`. */
  constructor(data: Record<string, string>, parent = tmpdir()) {
    this.dir = mkdtempSync(join(parent, 'secret-volume-'));
    this.write(data);
    for (const key of Object.keys(data)) symlinkSync(join('..data', key), join(this.dir, key));
  }

  /** The file of `key`, as a process is told to read it. */
  path(key: string): string {
    return join(this.dir, key);
  }

  /** Replaces the Secret's data at once, as the kubelet does when the Secret changed. */
  write(data: Record<string, string>): void {
    const folder = `..v${++this.version}`;
    mkdirSync(join(this.dir, folder));
    for (const [key, value] of Object.entries(data)) writeFileSync(join(this.dir, folder, key), value);
    symlinkSync(folder, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
