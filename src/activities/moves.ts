/**
 * The steps of a move of an instance from one cluster (its source) to another (its target) that
 * are a move's own: checking that the instance and its plan can move, choosing and booking the
 * target, carrying the generated Secrets over, switching the records to the target, and taking
 * the instance off a cluster it leaves (the source once switched, the target when the move is
 * undone). Provisioning, binding and the plan's backup and restore on either cluster are the
 * operations' own steps, run with the cluster named in their target (`Target.cluster`).
 *
 * Every step is safe to run again: what is there already is kept, what is gone counts as done.
 */
import { listClusters } from '../kube/cluster-registry.js';
import { getRecord, listRecords, patchRecord, patchRecordStatus } from '../kube/custom-objects.js';
import { isAlreadyExists, isNotFound } from '../kube/errors.js';
import { readObject, deleteObject } from '../kube/objects.js';
import { actionRefusal } from '../resources/actions.js';
import { MOVE_OPERATION, migrationOf, type Migration } from '../resources/migration.js';
import {
  ANNOTATIONS,
  LABELS,
  dropBoxNamespace,
  handedOverPrefix,
  handedOverSecretName,
  instanceNamespace,
  labelValue,
  resourceName,
} from '../resources/names.js';
import { versionedSecretName } from '../resources/sfsecret.js';
import {
  SFCLUSTER,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type AppliedResource,
  type KubeObject,
  type SFCluster,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import { decideMove, schedulerForPlan } from '../scheduling/index.js';
import type {
  BindingRef,
  InstanceRef,
  MoveRequest,
  Placement,
  StatusReport,
  Target,
} from '../workflows/messages.js';
import type { ActivityDeps } from './deps.js';
import { ownResourcesOf, ownerReferenceTo } from './desired-objects.js';
import { FAILURE_TYPES, retryable, terminal } from './failures.js';
import {
  releaseReservationOn as releaseReservation,
  unlabelLeaving as unlabelLeavingOnMaster,
} from './leaving.js';
import { deleteSecret, readSecret, recordsOnMaster, secretCopy } from './master-records.js';
import { deleteNamespace } from './namespaces.js';
import { deleteVersions, type SecretPlace } from './secret-versions.js';
import {
  NO_ELIGIBLE_CLUSTER,
  bookPlacement,
  bookingOf,
  clusterFailure,
  deleteCopy,
  planRequests,
  snapshotsOf,
  trimSummary,
} from './placement.js';
import { describe, kubeCall, resourceRendering } from './resources.js';

/** What a move works with, once started: the instance on its source, its bindings, and how its plan moves it. */
export interface MoveStart {
  /** The instance, placed on its source cluster. */
  readonly instance: InstanceRef;
  /** The bindings that follow it. */
  readonly bindings: readonly BindingRef[];
  readonly migration: Migration;
  /** The instance's last backup, which a rebuild from a lost cluster restores. */
  readonly lastBackup?: { readonly id: string; readonly clusterId: string };
}

/** Whether a binding's credentials are in use: its bind succeeded, or its unbind failed. */
const bindingInUse = (binding: SFServiceBinding): boolean =>
  !binding.metadata.deletionTimestamp &&
  ((binding.status?.operation === 'bind' && binding.status.state === 'succeeded') ||
    (binding.status?.operation === 'unbind' && binding.status.state === 'failed'));

export function moveActivities(deps: ActivityDeps) {
  const { clusters, catalog, scheduling, instanceNamespace: shared } = deps;
  const master = clusters.master;
  const registry = clusters.namespace;
  const { load, copyOnCluster, secretPlace } = resourceRendering(deps);
  const records = deps.records ?? recordsOnMaster(master);

  /** The instance's reference on `clusterId`, with the task queue of that cluster's own worker. */
  async function refOn(instanceId: string, clusterId: string): Promise<InstanceRef> {
    const taskQueue = await clusters.taskQueueOf(clusterId);
    return {
      instanceId,
      name: resourceName(instanceId),
      namespace: instanceNamespace(instanceId, shared),
      clusterId,
      ...(taskQueue ? { taskQueue } : {}),
    };
  }

  /** The instance's bindings in use, as references to them from the instance on `instance`'s cluster. */
  async function bindingsOf(instance: InstanceRef): Promise<BindingRef[]> {
    const bindings = await listRecords<SFServiceBinding>(
      master,
      SFSERVICEBINDING,
      instance.namespace,
      `${LABELS.instanceId}=${labelValue(instance.instanceId)}`,
    );
    return bindings.filter(bindingInUse).map((binding) => ({
      bindingId: binding.spec.id,
      name: binding.metadata.name,
      namespace: binding.metadata.namespace!,
      instance,
    }));
  }

  const releaseReservationOn = (clusterId: string, instanceId: string) =>
    releaseReservation(master, registry, clusterId, instanceId);
  const unlabelLeaving = (instance: InstanceRef, clusterId: string) =>
    unlabelLeavingOnMaster(master, instance, clusterId);

  /** Copies one Secret from one cluster to another, unless it is there already; the value never leaves this step. */
  async function copySecret(
    from: SecretPlace,
    to: SecretPlace,
    name: string,
    ownerReferences: unknown[] | undefined,
  ): Promise<boolean> {
    if (await secretOn(to, name)) return false;
    const secret = await secretOn(from, name);
    if (!secret) return false;
    return placeSecret(to, secretCopy(secret, name, {}, ownerReferences));
  }

  /** A Secret where the instance's generated Secrets are, undefined when it is not there. */
  const secretOn = (place: SecretPlace, name: string) =>
    place.call(`reading Secret ${place.namespace}/${name} on cluster ${place.cluster.id}`, () =>
      readSecret(place.cluster, place.namespace, name),
    );

  /** Creates a Secret where the instance's generated Secrets are; false when it is there already. */
  const placeSecret = (place: SecretPlace, body: KubeObject) =>
    place.call(
      `copying Secret ${place.namespace}/${body.metadata.name} to cluster ${place.cluster.id}`,
      async () => {
        try {
          await place.cluster.core.createNamespacedSecret({
            namespace: place.namespace,
            body: body as never,
          });
          return true;
        } catch (err) {
          if (isAlreadyExists(err)) return false;
          throw err;
        }
      },
    );

  /** The versioned names of the instance's generated Secrets (every kept version). */
  const generatedVersions = (instance: SFServiceInstance): string[] =>
    (instance.status?.generatedSecrets ?? []).flatMap((entry) =>
      entry.versions.map((version) => versionedSecretName(entry.secretName, version)),
    );

  /** The drop box namespace on the master of the cluster `clusterId`. */
  const dropBoxOf = (clusterId: string) => dropBoxNamespace(registry, clusterId);

  /**
   * Why the instance cannot be rebuilt elsewhere from its last backup, its cluster `from` lost:
   * its plan must allow it (`migrate.evacuate`), its cluster must be offline (never one that is
   * merely slow), and a plan that restores needs a backup to restore.
   */
  async function rebuildRefusal(
    planName: string,
    migration: Migration,
    from: string,
    lastBackup: { id: string } | undefined,
  ): Promise<string | undefined> {
    if (!migration.evacuate)
      return `plan ${planName} does not let its instances be rebuilt elsewhere (its migrate.evacuate)`;
    const cluster = await getRecord<SFCluster>(master, SFCLUSTER, registry, from);
    if (cluster && cluster.status?.phase !== 'offline') return `cluster ${from} is not offline`;
    if (migration.restore && !lastBackup) return 'it has no backup to restore';
    return undefined;
  }

  return {
    /** Records a backup the move took on the source as the instance's last backup. */
    async recordBackup(instance: InstanceRef, action: string, id: string): Promise<void> {
      try {
        await patchRecordStatus(master, SFSERVICEINSTANCE, instance.namespace, instance.name, {
          lastBackup: {
            action,
            id,
            clusterId: instance.clusterId ?? clusters.masterId,
            takenAt: new Date().toISOString(),
          },
        });
      } catch (err) {
        if (isNotFound(err))
          throw terminal(`instance ${instance.instanceId} has no record`, FAILURE_TYPES.instance);
        throw err;
      }
    },

    /**
     * Starts a move: the instance must be usable and not being deleted, its plan must say how its
     * instances move (resources/migration.ts), and it must be placed somewhere other than where it
     * is asked to go. Marks the move on the record's `status.lastAction` and says what follows it.
     */
    async startMove(req: MoveRequest, runId: string): Promise<MoveStart> {
      const name = resourceName(req.instanceId);
      const namespace = instanceNamespace(req.instanceId, shared);
      const record = await getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, namespace, name);
      const refusal = actionRefusal(record);
      if (refusal) throw terminal(`The instance cannot move: ${refusal}`, FAILURE_TYPES.instance);
      const plan = catalog.plan(record!.spec.planId);
      if (!plan)
        throw terminal(
          `The instance cannot move: its plan ${record!.spec.planId} is not in the catalog`,
          FAILURE_TYPES.plan,
        );
      const how = migrationOf(plan);
      if ('refusal' in how) throw terminal(`The instance cannot move: ${how.refusal}`, FAILURE_TYPES.plan);
      const from = record!.spec.clusterId ?? clusters.masterId;
      if (req.toClusterId === from)
        throw terminal(`The instance is on cluster ${from} already`, FAILURE_TYPES.instance);
      const lastBackup = record!.status?.lastBackup;
      if (req.sourceLost) {
        const refusal = await rebuildRefusal(plan.spec.name, how.migration, from, lastBackup);
        if (refusal)
          throw terminal(`The instance cannot be rebuilt elsewhere: ${refusal}`, FAILURE_TYPES.plan);
      }
      const who = (req.requestedBy?.identity as { user?: unknown } | undefined)?.user;
      await patchRecordStatus(master, SFSERVICEINSTANCE, namespace, name, {
        lastAction: {
          operation: MOVE_OPERATION,
          state: 'in progress',
          description: `Moving from cluster ${from}`,
          runId,
          requestedBy: typeof who === 'string' ? who : null,
          startedAt: new Date().toISOString(),
          finishedAt: null,
        },
      });
      const instance = await refOn(req.instanceId, from);
      return {
        instance,
        bindings: await bindingsOf(instance),
        migration: how.migration,
        ...(lastBackup ? { lastBackup: { id: lastBackup.id, clusterId: lastBackup.clusterId } } : {}),
      };
    },

    /**
     * Chooses the cluster the instance moves to (moveDestination) and books the instance there as
     * a placement would; a cluster booked already for it by an earlier run of this step is kept.
     * No eligible cluster fails the move with the scheduler's reasons.
     */
    async placeMove(instance: InstanceRef, toClusterId?: string): Promise<Placement> {
      const record = await getRecord<SFServiceInstance>(
        master,
        SFSERVICEINSTANCE,
        instance.namespace,
        instance.name,
      );
      if (!record) throw retryable(`instance ${instance.instanceId} has no record`);
      const from = instance.clusterId ?? clusters.masterId;
      const registered = await listClusters(master, registry);
      const booked = registered.find(
        (c) =>
          c.metadata.name !== from &&
          (toClusterId === undefined || c.metadata.name === toClusterId) &&
          Object.hasOwn(c.status?.reserved ?? {}, instance.instanceId),
      );
      const plan = catalog.plan(record.spec.planId);
      let clusterId: string;
      let summary: string;
      if (booked) {
        clusterId = booked.metadata.name;
        summary = `kept ${clusterId}: reserved before`;
      } else {
        const requests = planRequests(plan);
        const decision = decideMove({
          scheduler: schedulerForPlan(scheduling ?? {}, record.spec.planId),
          clusters: snapshotsOf(registered, instance.instanceId),
          request: {
            instanceId: instance.instanceId,
            planId: record.spec.planId,
            ...(requests ? { requests } : {}),
          },
          from,
          ...(toClusterId !== undefined ? { to: toClusterId } : {}),
          options: { masterClusterId: clusters.masterId },
        });
        summary = trimSummary(`${decision.scheduler}: ${decision.summary}`);
        if (!decision.clusterId) throw terminal(`No cluster to move to: ${summary}`, NO_ELIGIBLE_CLUSTER);
        clusterId = decision.clusterId;
      }
      const booking = bookingOf(scheduling, plan, instance.instanceId, clusterId);
      if (booking) await bookPlacement(master, registry, booking);
      const taskQueue = await clusters.taskQueueOf(clusterId);
      return { clusterId, reasons: summary, ...(taskQueue ? { taskQueue } : {}) };
    },

    /**
     * Copies the instance's generated Secrets (every kept version) from the source's cluster to
     * the target's, where they are owned by the instance's copy: the target's objects are
     * rendered with the same values, so the credentials stay what they were. Returns how many it
     * copied; values never leave the step.
     */
    async copyGeneratedSecrets(source: Target, target: Target): Promise<number> {
      const from = await load(source);
      const to = await load(target);
      const generated = to.instance.status?.generatedSecrets ?? [];
      if (generated.length === 0) return 0;
      // Owned by the instance's copy on a sister, by its record on the master.
      const copy = await copyOnCluster(to);
      const ownerReferences = [ownerReferenceTo(copy ?? to.instance)];
      let copied = 0;
      for (const name of generatedVersions(to.instance))
        if (await copySecret(secretPlace(from), secretPlace(to), name, ownerReferences)) copied += 1;
      return copied;
    },

    /**
     * The source's side of carrying the instance's generated Secrets over when the landscape's
     * workers do not reach both clusters: leaves each kept version on the source in the drop box on
     * the master of the cluster `source.dropBoxOf` (through the source's own drop box when the
     * source has a worker of its own: resources/master-writes.ts `handedOver`). Returns the names
     * of the versions handed over; values never leave the step but into the drop box.
     */
    async handOverGeneratedSecrets(source: Target & { readonly dropBoxOf: string }): Promise<string[]> {
      const from = await load(source);
      const place = secretPlace(from);
      const handed: string[] = [];
      for (const name of generatedVersions(from.instance)) {
        const secret = await secretOn(place, name);
        if (!secret) continue;
        const inDropBox = secretCopy(secret, handedOverSecretName(from.instance.metadata.name, name), {
          [LABELS.handedOverFor]: labelValue(source.instance.instanceId),
        });
        await kubeCall(`leaving Secret ${name} in a drop box on the master`, () =>
          records.handOver(inDropBox, dropBoxOf(source.dropBoxOf)),
        );
        handed.push(name);
      }
      return handed;
    },

    /**
     * The target's side of carrying the instance's generated Secrets over when the landscape's
     * workers do not reach both clusters: takes the versions `names` handed over from the drop box
     * on the master of the cluster `dropBox`, creates them on the target, owned there as
     * {@link copyGeneratedSecrets} owns them, and empties the drop box of them. Returns how many it
     * created. A name that is not one of the instance's generated Secrets fails it for good.
     */
    async takeOverGeneratedSecrets(
      target: Target,
      dropBox: string,
      names: readonly string[],
    ): Promise<number> {
      const to = await load(target);
      const kept = generatedVersions(to.instance);
      const foreign = names.find((name) => !kept.includes(name));
      if (foreign !== undefined)
        throw terminal(
          `Secret ${foreign} is not one of the instance's generated Secrets: it is not carried over`,
          FAILURE_TYPES.instance,
        );
      const copy = await copyOnCluster(to);
      const ownerReferences = [ownerReferenceTo(copy ?? to.instance)];
      const place = secretPlace(to);
      const namespace = dropBoxOf(dropBox);
      let taken = 0;
      for (const name of names) {
        const inDropBox = handedOverSecretName(to.instance.metadata.name, name);
        if (!(await secretOn(place, name))) {
          const left = await kubeCall(`reading Secret ${name} in drop box ${namespace}`, () =>
            records.inDropBox(namespace, inDropBox),
          );
          if (!left) throw retryable(`Secret ${name} of the instance is not in drop box ${namespace}`);
          if (
            await placeSecret(
              place,
              secretCopy(left, name, { [LABELS.handedOverFor]: null }, ownerReferences),
            )
          )
            taken += 1;
        }
        await kubeCall(`taking Secret ${name} out of drop box ${namespace}`, () =>
          records.clearDropBox(namespace, inDropBox),
        );
      }
      return taken;
    },

    /**
     * Takes out of the drop boxes on the master of the clusters `clusterIds` what a move of the
     * instance handed over and nobody took, when the move is undone; safe to repeat.
     */
    async clearHandedOverSecrets(instance: InstanceRef, clusterIds: readonly string[]): Promise<void> {
      for (const clusterId of new Set(clusterIds)) {
        const namespace = dropBoxOf(clusterId);
        const left = await kubeCall(`listing drop box ${namespace}`, () =>
          master.core
            .listNamespacedSecret({
              namespace,
              labelSelector: `${LABELS.handedOverFor}=${labelValue(instance.instanceId)}`,
            })
            .catch((err: unknown) => {
              if (isNotFound(err)) return { items: [] };
              throw err;
            }),
        );
        for (const secret of left.items) {
          const name = secret.metadata?.name ?? '';
          if (!name.startsWith(handedOverPrefix(instance.name))) continue;
          await kubeCall(`taking Secret ${name} out of drop box ${namespace}`, () =>
            deleteSecret(master, namespace, name),
          );
        }
      }
    },

    /**
     * Switches the instance to `to`: its record's cluster, label and placement annotation. From now
     * on every operation of the instance and its bindings works there. With `leavesSource` (the
     * move takes it off its source next) the record is also labelled as leaving the source, which
     * keeps counting it until `leaveCluster` is done there, and the source's reservation is
     * released by that step; otherwise (a lost source) it is released now.
     */
    async switchCluster(
      instance: InstanceRef,
      to: Placement,
      reason: string,
      leavesSource = false,
    ): Promise<InstanceRef> {
      const from = instance.clusterId ?? clusters.masterId;
      const moving = from !== to.clusterId;
      const placement = trimSummary(`moved from ${from} to ${to.clusterId} (${reason}): ${to.reasons}`);
      try {
        await patchRecord(master, SFSERVICEINSTANCE, instance.namespace, instance.name, {
          metadata: {
            labels: {
              [LABELS.clusterId]: labelValue(to.clusterId),
              ...(moving && leavesSource ? { [LABELS.leavingCluster]: labelValue(from) } : {}),
            },
            annotations: { [ANNOTATIONS.placement]: placement },
          },
          spec: { clusterId: to.clusterId },
        });
      } catch (err) {
        if (isNotFound(err))
          throw terminal(`instance ${instance.instanceId} has no record`, FAILURE_TYPES.instance);
        throw err;
      }
      if (moving && !leavesSource) await releaseReservationOn(from, instance.instanceId);
      return refOn(instance.instanceId, to.clusterId);
    },

    /**
     * Takes the instance off the cluster its target names (`target.cluster`), the master's records
     * aside: deletes what its bindings and it applied there, its generated Secrets, and on a
     * sister the copies of its records (whose garbage collector removes what they own), then
     * releases its reservation there and takes the record's leaving label off when it names that
     * cluster. In progress until nothing it applied is left there; safe to run again.
     */
    async leaveCluster(target: Target, bindings: readonly BindingRef[]): Promise<StatusReport> {
      const loaded = await load(target);
      const { cluster, instance } = loaded;
      const onSister = cluster !== master;
      const call = <T>(what: string, run: () => Promise<T>) =>
        kubeCall(what, run, onSister ? cluster.id : undefined);
      const instanceResources = instance.status?.resources ?? [];
      const listed: AppliedResource[] = [...instanceResources];
      for (const ref of bindings) {
        const binding = await records.binding(ref.namespace, ref.name);
        if (binding) listed.push(...ownResourcesOf(binding.status?.resources ?? [], instanceResources));
      }
      const present: AppliedResource[] = [];
      for (const ref of listed) {
        const obj = await call(`reading ${describe(ref, cluster.id)}`, () => readObject(cluster, ref));
        if (!obj) continue;
        present.push(ref);
        if (!obj.metadata?.deletionTimestamp)
          await call(`deleting ${describe(ref, cluster.id)}`, () => deleteObject(cluster, ref));
      }
      const place = secretPlace(loaded);
      for (const entry of instance.status?.generatedSecrets ?? [])
        await deleteVersions(place, entry, entry.versions);
      if (present.length > 0)
        return {
          state: 'in progress',
          description: `waiting for ${present.length} object(s) to go from cluster ${cluster.id}`,
        };
      if (onSister) {
        try {
          for (const ref of bindings)
            await deleteCopy(cluster, {
              apiVersion: SFSERVICEBINDING.apiVersion,
              kind: SFSERVICEBINDING.kind,
              metadata: { name: ref.name, namespace: ref.namespace },
            });
          await deleteCopy(cluster, {
            apiVersion: SFSERVICEINSTANCE.apiVersion,
            kind: SFSERVICEINSTANCE.kind,
            metadata: { name: instance.metadata.name, namespace: instance.metadata.namespace! },
          });
          if (!shared) await deleteNamespace(cluster, instance.metadata.namespace!);
        } catch (err) {
          throw clusterFailure(cluster.id, err);
        }
      }
      await records.leftCluster(async () => {
        await releaseReservationOn(cluster.id, target.instance.instanceId);
        await unlabelLeaving(target.instance, cluster.id);
      });
      return { state: 'succeeded', description: `Nothing of the instance is left on cluster ${cluster.id}` };
    },
  };
}
