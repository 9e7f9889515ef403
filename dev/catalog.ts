/**
 * Installs example catalogs: the SFService and SFPlan documents of each folder's YAML files, applied
 * into the broker's namespace of the master cluster. The dev stack and the end-to-end tests use it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { ClusterClient } from '../src/kube/clients.js';
import { applyObject } from '../src/kube/objects.js';
import type { KubeObject } from '../src/resources/types.js';
import { repoRoot } from './local/paths.js';

/** Applies every document of the YAML files in `folders` (relative to the repository); returns them as applied. */
export async function installCatalog(
  master: ClusterClient,
  namespace: string,
  folders: readonly string[],
): Promise<KubeObject[]> {
  const installed: KubeObject[] = [];
  for (const folder of folders) {
    const dir = path.join(repoRoot(), folder);
    for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
      for (const doc of parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))) {
        const obj = doc.toJS() as KubeObject | null;
        if (!obj?.kind) continue;
        installed.push(await applyObject(master, { ...obj, metadata: { ...obj.metadata, namespace } }));
      }
    }
  }
  return installed;
}
