/**
 * The steps of a rotation of a generated secret, and the removal of versions no binding uses: each
 * reads the instance's record and its plan's provision template, writes Secrets on the instance's
 * cluster and the record's `status.generatedSecrets`, and returns names and versions only.
 */
import { getRecord, listRecords, patchRecordStatus } from '../kube/custom-objects.js';
import { rotated, unusedVersions, type GeneratedSecretStatus } from '../resources/generated-secrets.js';
import { LABELS, labelValue } from '../resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import type { InstanceRef, SecretVersion, Target } from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';
import { FAILURE_TYPES, terminal } from './failures.js';
import { createVersion, deleteVersions, splitGenerated } from './generated-secrets.js';
import { resourceRendering } from './resources.js';

export function secretRotationActivities(deps: ActivityDeps) {
  const { clusters } = deps;
  const rendering = resourceRendering(deps);

  /** Writes the record's list of generated secrets. */
  const record = (instance: SFServiceInstance, generatedSecrets: readonly GeneratedSecretStatus[]) =>
    patchRecordStatus(
      clusters.master,
      SFSERVICEINSTANCE,
      instance.metadata.namespace!,
      instance.metadata.name,
      { generatedSecrets },
    );

  return {
    /**
     * Makes the next version of the instance's generated secret `name` (as its SFSecret in the
     * provision template asks now) and makes it the current one in the record; the previous one is
     * kept. Run again by the same rotation (`runId`), it makes no other.
     */
    async rotateGeneratedSecret(target: Target, name: string, runId: string): Promise<SecretVersion> {
      const loaded = await rendering.load(target);
      const recorded = loaded.instance.status?.generatedSecrets ?? [];
      const entry = recorded.find((r) => r.name === name);
      const known = recorded.map((r) => r.name);
      if (!entry)
        throw terminal(
          `the instance has no generated secret ${name}; ${known.length > 0 ? `it has ${known.join(', ')}` : 'it has none'}`,
          FAILURE_TYPES.instance,
        );
      const rendered =
        (await rendering.desiredObjects(loaded, target, 'provision', () =>
          rendering.copyOnCluster(loaded),
        )) ?? [];
      const declared = splitGenerated(rendered, 'provision').secrets.find((d) => d.spec.name === name);
      if (!declared)
        throw terminal(
          `the provision template of plan ${loaded.plan.spec.name} no longer renders SFSecret ${name}`,
          FAILURE_TYPES.template,
        );
      const next = rotated(entry, new Date().toISOString(), runId);
      const current = recorded.map((r) => (r.name === name ? next : r));
      await createVersion(rendering.secretPlace(loaded), declared, next.version, current);
      if (next !== entry) await record(loaded.instance, current);
      return { name, version: next.version, secret: next.secret };
    },

    /**
     * Deletes the versions of the instance's generated secrets that are not current and that no
     * binding of the instance was made with; returns the names of the Secrets deleted.
     */
    async removeUnusedSecretVersions(ref: InstanceRef): Promise<string[]> {
      const instance = await getRecord<SFServiceInstance>(
        clusters.master,
        SFSERVICEINSTANCE,
        ref.namespace,
        ref.name,
      );
      const recorded = instance?.status?.generatedSecrets ?? [];
      if (!instance || instance.metadata.deletionTimestamp || recorded.length === 0) return [];
      const bindings = await listRecords<SFServiceBinding>(
        clusters.master,
        SFSERVICEBINDING,
        ref.namespace,
        `${LABELS.instanceId}=${labelValue(ref.instanceId)}`,
      );
      const kept = bindings.map((b) => b.status?.generatedSecrets);
      const unused = recorded.map((entry) => ({ entry, versions: unusedVersions(entry, kept) }));
      if (unused.every((u) => u.versions.length === 0)) return [];
      const loaded = await rendering.load({ instance: ref });
      const place = rendering.secretPlace(loaded);
      const deleted: string[] = [];
      for (const { entry, versions } of unused)
        deleted.push(...(await deleteVersions(place, entry, versions)));
      await record(
        instance,
        unused.map(({ entry, versions }) => ({
          ...entry,
          versions: entry.versions.filter((v) => !versions.includes(v)),
        })),
      );
      return deleted;
    },
  };
}

export type SecretRotationActivities = ReturnType<typeof secretRotationActivities>;
