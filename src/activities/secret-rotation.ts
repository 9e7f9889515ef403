/**
 * The steps of a rotation of a generated secret, and the removal of versions no binding uses: each
 * reads the instance's record and its plan's provision template, writes Secrets on the instance's
 * cluster and the record's `status.generatedSecrets`, and returns names and versions only.
 */
import { forEachRecord } from '../kube/custom-objects.js';
import { InstanceClaims, type ClaimDeps } from '../kube/operation-claims.js';
import { OsbError } from '../osb/errors.js';
import { actionRefusal } from '../resources/actions.js';
import type { ClaimSide } from '../resources/operation-claims.js';
import {
  dueForRotation,
  parseDuration,
  rotated,
  unusedVersions,
  type GeneratedSecretStatus,
} from '../resources/sfsecret.js';
import { LABELS, instanceWorkflowId, labelValue } from '../resources/names.js';
import { SFSERVICEINSTANCE, type SFServiceInstance } from '../resources/types.js';
import {
  ROTATE_SECRET_ACTION,
  type InstanceRef,
  type ScheduledRotation,
  type SecretVersion,
  type Target,
} from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';
import { FAILURE_TYPES, terminal } from './failures.js';
import { createVersion, deleteVersions, splitGenerated } from './secret-versions.js';
import { kubeCall, resourceRendering } from './resources.js';

export function secretRotationActivities(deps: ActivityDeps) {
  const rendering = resourceRendering(deps);

  /**
   * Writes the record's list of generated secrets, on the condition that the record is still as
   * read (a rotation and an unbind may write it at once): a 409 is retried, from a fresh read.
   */
  const record = (instance: SFServiceInstance, generatedSecrets: readonly GeneratedSecretStatus[]) =>
    kubeCall(`recording the generated secrets of instance ${instance.metadata.name}`, () =>
      rendering.records.write({
        kind: 'status',
        record: 'instance',
        namespace: instance.metadata.namespace!,
        name: instance.metadata.name,
        status: { generatedSecrets },
        ...(instance.metadata.resourceVersion ? { resourceVersion: instance.metadata.resourceVersion } : {}),
      }),
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
      const instance = await rendering.records.instance(ref.namespace, ref.name);
      const recorded = instance?.status?.generatedSecrets ?? [];
      if (!instance || instance.metadata.deletionTimestamp || recorded.length === 0) return [];
      const bindings = await rendering.records.bindingsOf(ref);
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

/** Rotations one check of the schedule starts at most; the rest are due at the next check. */
const MAX_DUE_A_CHECK = 100;

/** Who the record says asked for a rotation the plan's `rotateAfter` started. */
const SCHEDULE_IDENTITY = { platform: 'interoperator', identity: { user: 'rotateAfter' } } as const;

/** The side of the instance's claim a scheduled rotation takes. */
const ROTATION: ClaimSide = { kind: 'instance', operation: ROTATE_SECRET_ACTION };

/**
 * The steps of the rotation schedule: which rotations the plans' `rotateAfter` asks for now. `runs`
 * tells of an operation's latest run, for the claim each rotation makes on its instance against the
 * operations of its bindings, as an admin's rotation does.
 */
export function rotationScheduleActivities(deps: ActivityDeps, runs: Pick<ClaimDeps, 'latest'>) {
  const { clusters, catalog } = deps;
  const claims = new InstanceClaims({
    master: clusters.master,
    latest: runs.latest,
    ...(deps.instanceNamespace ? { instanceNamespace: deps.instanceNamespace } : {}),
  });
  return {
    /**
     * For each instance whose plan has a `rotateAfter`, that can run an action and that could be
     * claimed against its bindings' operations: the rotation of its generated secret whose current
     * version is the oldest of those older than `rotateAfter`, if any.
     */
    async dueSecretRotations(): Promise<ScheduledRotation[]> {
      const now = Date.now();
      // Only the instances of plans with a rotateAfter, a page at a time: a landscape of many
      // thousands of instances is never read whole, nor read at all when no plan rotates.
      const planIds = catalog
        .plans()
        .filter((plan) => parseDuration(plan.spec.rotateAfter))
        .map((plan) => labelValue(plan.spec.id));
      if (planIds.length === 0) return [];
      const candidates: SFServiceInstance[] = [];
      await forEachRecord<SFServiceInstance>(
        clusters.master,
        SFSERVICEINSTANCE,
        deps.instanceNamespace,
        `${LABELS.planId} in (${[...new Set(planIds)].sort().join(',')})`,
        (instance) => {
          if (candidates.length >= MAX_DUE_A_CHECK) return;
          const plan = catalog.plan(instance.spec.planId);
          const rotateAfter = parseDuration(plan?.spec.rotateAfter);
          if (!rotateAfter || actionRefusal(instance)) return;
          if (dueForRotation(instance.status?.generatedSecrets, rotateAfter, now).length > 0)
            candidates.push(instance);
        },
      );
      const due: ScheduledRotation[] = [];
      for (const instance of candidates) {
        const plan = catalog.plan(instance.spec.planId);
        const rotateAfter = parseDuration(plan?.spec.rotateAfter);
        if (!plan || !rotateAfter || actionRefusal(instance)) continue;
        const [oldest] = dueForRotation(instance.status?.generatedSecrets, rotateAfter, now).sort(
          (a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt),
        );
        if (!oldest) continue;
        const instanceId = instance.spec.instanceId ?? instance.metadata.name;
        const claimedAt = await claimed(instanceId, instance);
        if (claimedAt === null) continue;
        due.push({
          workflowId: instanceWorkflowId(instanceId),
          ...(claimedAt ? { claimedAt } : {}),
          request: {
            instanceId,
            serviceId: instance.spec.serviceId,
            planId: instance.spec.planId,
            action: ROTATE_SECRET_ACTION,
            parameters: { secret: oldest.name },
            requestHash: `rotate-after/${oldest.name}/${oldest.version}`,
            deadlineSeconds: plan.spec.maximum_polling_duration ?? deps.operationTimeoutSeconds ?? 3600,
            requestedBy: SCHEDULE_IDENTITY,
          },
        });
      }
      return due;
    },

    /** Takes back the claim of a rotation that could not be started. */
    async releaseRotationClaim(instanceId: string, claimedAt: string): Promise<void> {
      await claims.release(instanceId, ROTATION, claimedAt);
    },
  };

  /** When the instance was claimed for its rotation; null while an operation of a binding of it holds its claim. */
  async function claimed(
    instanceId: string,
    instance: SFServiceInstance,
  ): Promise<string | undefined | null> {
    try {
      return await claims.claimAt(instanceId, ROTATION, instance);
    } catch (err) {
      if (err instanceof OsbError && err.status === 422) return null;
      throw err;
    }
  }
}

export type RotationScheduleActivities = ReturnType<typeof rotationScheduleActivities>;
