/**
 * What a rollout reads: its settings, the instances of the plan not yet on the revision (for the
 * rollout of a referenced object's change, those that read another version of the object), and
 * the update request that brings one of them there (the request its record holds, on the plan's
 * current spec), or why it must wait. The update itself is the ordinary update workflow.
 */
import { DEFAULT_ROLLOUT_SETTINGS, type RolloutReference, type RolloutSettings } from '../admin/contract.js';
import { forEachRecord, getRecord, listRecords } from '../kube/custom-objects.js';
import { InstanceClaims, type ClaimDeps } from '../kube/operation-claims.js';
import { readObject } from '../kube/objects.js';
import { OsbError } from '../osb/errors.js';
import type { ClaimSide } from '../resources/operation-claims.js';
import {
  LABELS,
  instanceNamespace,
  instanceWorkflowId,
  labelValue,
  planRevision,
  resourceName,
} from '../resources/names.js';
import {
  SFPLAN,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFPlan,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import {
  rolloutRequestHash,
  type InstanceRequest,
  type RequestedBy,
  type RolloutTarget,
} from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';

/** States of a record whose operation has not ended. */
export const BUSY_STATES = new Set(['in_queue', 'in progress', 'delete']);

/**
 * What a rollout may do with one instance now: start its update (the instance claimed for it at
 * `claimedAt`, when it was), wait, or nothing.
 */
export type RolloutUpdate =
  | { readonly request: InstanceRequest; readonly workflowId: string; readonly claimedAt?: string }
  | { readonly busy: string }
  | { readonly gone: true };

/** The side of the instance/binding rule a rollout's update is on. */
const UPDATE: ClaimSide = { kind: 'instance', operation: 'update' };

/** The settings of a rollout: the rollout's own, over the plan's, over the defaults. */
export function rolloutSettingsOf(
  plan: Partial<RolloutSettings> | undefined,
  overrides: Partial<RolloutSettings> | undefined,
): RolloutSettings {
  const pick = (key: keyof RolloutSettings, min: number): number => {
    for (const source of [overrides, plan]) {
      const value = source?.[key];
      if (typeof value === 'number' && Number.isSafeInteger(value) && value >= min) return value;
    }
    return DEFAULT_ROLLOUT_SETTINGS[key];
  };
  return {
    canary: pick('canary', 0),
    maxConcurrency: pick('maxConcurrency', 1),
    soakSeconds: pick('soakSeconds', 0),
    maxFailures: pick('maxFailures', 0),
  };
}

/**
 * The update request that brings an instance to `plan`'s spec, from what its record holds (the
 * plan, parameters and context it has), as a rollout sends it; a dry run of a plan change renders
 * the instance as recorded from it.
 */
export function rolloutRequest(
  record: SFServiceInstance,
  plan: SFPlan | undefined,
  revision: string,
  operationTimeoutSeconds: number | undefined,
): InstanceRequest {
  const { spec } = record;
  const instanceId = spec.instanceId ?? record.metadata.name;
  return {
    instanceId,
    serviceId: spec.serviceId,
    planId: spec.planId,
    ...(spec.organizationGuid ? { organizationGuid: spec.organizationGuid } : {}),
    ...(spec.spaceGuid ? { spaceGuid: spec.spaceGuid } : {}),
    ...(spec.context ? { context: spec.context } : {}),
    ...(spec.parameters ? { parameters: spec.parameters } : {}),
    ...(plan?.spec.maintenance_info
      ? { maintenanceInfo: plan.spec.maintenance_info }
      : spec.maintenanceInfo
        ? { maintenanceInfo: spec.maintenanceInfo }
        : {}),
    previousValues: { serviceId: spec.serviceId, planId: spec.planId },
    requestHash: rolloutRequestHash(revision),
    deadlineSeconds: plan?.spec.maximum_polling_duration ?? operationTimeoutSeconds ?? 3600,
    requestedBy: { platform: 'interoperator', identity: { rollout: revision } },
  };
}

/** Whether a rollout updates the instance: not one being deleted, nor one whose provision failed. */
/** The first of a rollout's instances behind a revision, and how many there are. */
export interface InstancesBehind {
  readonly first: string[];
  readonly total: number;
}

const behindSelector = (planId: string, revision: string) =>
  `${LABELS.planId}=${labelValue(planId)},${LABELS.planRevision}!=${revision}`;

/** The order a rollout takes instances in: oldest first, then by id. */
const olderFirst = (a: SFServiceInstance, b: SFServiceInstance) =>
  (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
  a.spec.instanceId!.localeCompare(b.spec.instanceId!);

/** Puts `record` into `oldest` (kept in {@link olderFirst} order) when it is among the `limit` oldest. */
export function keepOldest(oldest: SFServiceInstance[], record: SFServiceInstance, limit: number): void {
  if (limit <= 0) return;
  if (oldest.length >= limit && olderFirst(record, oldest[oldest.length - 1]!) >= 0) return;
  let at = oldest.length;
  while (at > 0 && olderFirst(record, oldest[at - 1]!) < 0) at -= 1;
  oldest.splice(at, 0, record);
  if (oldest.length > limit) oldest.pop();
}

export const rolledOut = (record: SFServiceInstance): boolean =>
  !record.metadata.deletionTimestamp &&
  !(record.status?.operation === 'provision' && record.status.state === 'failed') &&
  !!record.spec.instanceId;

/**
 * Whether the record's references read `reference` (on its cluster; `masterId` for a record
 * without one) at a version other than `version`: the instance is behind a reference rollout.
 */
export function readsOtherVersion(
  record: SFServiceInstance,
  reference: RolloutReference,
  version: string,
  masterId: string,
): boolean {
  if ((record.spec.clusterId ?? masterId) !== reference.clusterId) return false;
  return (record.status?.references ?? []).some(
    (r) =>
      r.apiVersion === reference.apiVersion &&
      r.kind === reference.kind &&
      r.namespace === reference.namespace &&
      r.name === reference.name &&
      r.resourceVersion !== version,
  );
}

/** Who asks for the updates of a reference rollout: the interoperator, naming the change (never a value). */
export const referenceRequester = (reference: RolloutReference): RequestedBy => ({
  platform: 'interoperator',
  identity: { referenceChanged: `${reference.kind} ${reference.namespace}/${reference.name}` },
});

/**
 * The updates of instances as their records hold them, which a rollout starts (and the worker, when
 * an object an instance's references read changes). `runs` tells of an operation's latest run, for
 * the claim each update makes on its instance against the operations of its bindings, as a
 * platform's update does.
 */
export function recordedUpdates(
  { clusters, catalog, instanceNamespace: shared, operationTimeoutSeconds }: ActivityDeps,
  runs: Pick<ClaimDeps, 'latest'>,
) {
  const master = clusters.master;
  const claims = new InstanceClaims({
    master,
    latest: runs.latest,
    ...(shared ? { instanceNamespace: shared } : {}),
  });

  /**
   * The update that brings the instance to its plan's current spec, as its record holds it, or what
   * it waits for (an operation of its own or of one of its bindings), or that it is gone; with
   * `claim`, the instance is claimed for the update against its bindings' operations. `requestedBy`
   * says who asks: the rollout of `revision` unless given.
   */
  async function updateOf(
    instanceId: string,
    revision: string,
    claim: boolean,
    requestedBy?: RequestedBy,
  ): Promise<RolloutUpdate> {
    const namespace = instanceNamespace(instanceId, shared);
    const record = await getRecord<SFServiceInstance>(
      master,
      SFSERVICEINSTANCE,
      namespace,
      resourceName(instanceId),
    );
    if (!record || record.metadata.deletionTimestamp) return { gone: true };
    const state = record.status?.state;
    if (state && BUSY_STATES.has(state))
      return { busy: `waiting for its ${record.status?.operation ?? 'operation'} to end` };
    const bindings = await listRecords<SFServiceBinding>(
      master,
      SFSERVICEBINDING,
      namespace,
      `${LABELS.instanceId}=${labelValue(instanceId)}`,
    );
    const binding = bindings.find((b) => b.status?.state && BUSY_STATES.has(b.status.state));
    if (binding)
      return {
        busy: `waiting for the ${binding.status?.operation ?? 'operation'} of binding ${binding.spec.id} to end`,
      };
    const request = rolloutRequest(
      record,
      catalog.plan(record.spec.planId),
      revision,
      operationTimeoutSeconds,
    );
    const workflowId = instanceWorkflowId(instanceId);
    const asked = requestedBy ? { ...request, requestedBy } : request;
    if (!claim) return { request: asked, workflowId };
    try {
      const claimedAt = await claims.claimAt(instanceId, UPDATE, record);
      return { request: asked, workflowId, ...(claimedAt ? { claimedAt } : {}) };
    } catch (err) {
      if (err instanceof OsbError && err.status === 422) return { busy: err.description };
      throw err;
    }
  }

  return {
    updateOf,
    /** Takes back the claims of updates read ahead but not started. */
    async release(claimed: readonly { instanceId: string; claimedAt: string }[]): Promise<void> {
      await Promise.all(
        claimed.map(({ instanceId, claimedAt }) => claims.release(instanceId, UPDATE, claimedAt)),
      );
    },
  };
}

export type RecordedUpdates = ReturnType<typeof recordedUpdates>;

/**
 * The rollout's steps. `runs` tells of an operation's latest run, for the claim each update makes
 * on its instance against the operations of its bindings, as a platform's update does.
 */
export function rolloutActivities(deps: ActivityDeps, runs: Pick<ClaimDeps, 'latest'>) {
  const { clusters, catalog, instanceNamespace: shared } = deps;
  const master = clusters.master;
  const { updateOf, release } = recordedUpdates(deps, runs);

  return {
    /**
     * Where the plan's rollout is to go: the revision of the plan's spec as the apiserver holds it
     * now (`hint`, the revision asked for, when the plan is gone), and the settings: `overrides`,
     * over the plan's `spec.rollout`, over the defaults. Read afresh each time, so revisions that
     * arrive out of order, or twice, still end the rollout on the newest.
     */
    async rolloutTarget(
      planId: string,
      hint: string,
      overrides?: Partial<RolloutSettings>,
      reference?: RolloutReference,
    ): Promise<RolloutTarget> {
      const cached = catalog.plan(planId);
      const plan = cached
        ? await getRecord<SFPlan>(master, SFPLAN, cached.metadata.namespace!, cached.metadata.name)
        : undefined;
      const settings = rolloutSettingsOf((plan ?? cached)?.spec.rollout, overrides);
      if (reference) {
        // A reference rollout goes to the object's version now (the hint when it is gone).
        const { apiVersion, kind, namespace, name } = reference;
        const object = await readObject(await clusters.get(reference.clusterId), {
          apiVersion,
          kind,
          namespace,
          name,
        });
        return { revision: object?.metadata.resourceVersion ?? hint, settings };
      }
      return {
        revision: plan && plan.spec.id === planId ? planRevision(plan.spec) : hint,
        settings,
      };
    },

    /**
     * The oldest `limit` of the plan's instances whose resources were not rendered with
     * `revision`, leaving out `skip`, and how many there are (instances being deleted and those
     * whose provision failed are not rolled out): read a page at a time, holding no more than `limit` records whatever the
     * number of instances, and answering no more than `limit` ids.
     */
    async firstInstancesBehind(
      planId: string,
      revision: string,
      limit: number,
      skip: readonly string[],
      reference?: RolloutReference,
    ): Promise<InstancesBehind> {
      const skipped = new Set(skip);
      const oldest: SFServiceInstance[] = [];
      let total = 0;
      await forEachRecord<SFServiceInstance>(
        master,
        SFSERVICEINSTANCE,
        shared,
        reference ? `${LABELS.planId}=${labelValue(planId)}` : behindSelector(planId, revision),
        (record) => {
          if (!rolledOut(record) || record.spec.planId !== planId || skipped.has(record.spec.instanceId!))
            return;
          if (reference && !readsOtherVersion(record, reference, revision, clusters.masterId)) return;
          total += 1;
          keepOldest(oldest, record, limit);
        },
      );
      return { first: oldest.map((r) => r.spec.instanceId!), total };
    },

    /**
     * The updates of the instances, as {@link updateOf} finds each, read side by side: what a
     * rollout reads ahead of the updates it starts. Each instance it may update now is claimed for
     * the update, so a bind or unbind of it waits until the update has run.
     */
    async rolloutUpdates(
      instanceIds: readonly string[],
      revision: string,
      reference?: RolloutReference,
    ): Promise<[string, RolloutUpdate][]> {
      // A reference rollout's updates are rollout updates too (their request hash tells them from
      // a platform's), so the update keeps the digest the record holds.
      const requestedBy = reference ? referenceRequester(reference) : undefined;
      return Promise.all(
        instanceIds.map(async (id): Promise<[string, RolloutUpdate]> => [
          id,
          await updateOf(id, reference ? `${reference.kind}/${revision}` : revision, true, requestedBy),
        ]),
      );
    },

    /** Takes back the claims of updates a rollout read ahead but did not start (it paused, stopped or went elsewhere). */
    async releaseRolloutClaims(claimed: readonly { instanceId: string; claimedAt: string }[]): Promise<void> {
      await release(claimed);
    },
  };
}

export type RolloutActivities = ReturnType<typeof rolloutActivities>;
