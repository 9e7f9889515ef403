/**
 * The records users see: each request is an SFServiceInstance or SFServiceBinding in the master,
 * named after its OSB id, with a finalizer so nothing vanishes while its resources still exist.
 * Every step reads what is there and converges on it, so running one twice changes nothing.
 */
import type { ClusterClient } from '../kube/clients.js';
import {
  createRecord,
  deleteRecord,
  getRecord,
  jsonPatchRecord,
  type JsonPatchOperation,
  pointerKey,
  patchRecord,
  patchRecordStatus,
} from '../kube/custom-objects.js';
import { isAlreadyExists, isConflict, isNotFound } from '../kube/errors.js';
import type { PlatformRoute } from '../osb/platforms.js';
import {
  ANNOTATIONS,
  FINALIZER,
  LABELS,
  bindingSecretName,
  instanceNamespace,
  labelValue,
  resourceName,
} from '../resources/names.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type ResourceKind,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import type {
  ActionRequest,
  BindingOperationType,
  BindingRef,
  BindingRequest,
  InstanceOperationType,
  InstanceRef,
  InstanceRequest,
  OperationStatus,
  RequestedBy,
} from '../workflows/messages.js';
import { actionRefusal } from '../resources/actions.js';
import {
  SF_LABELS,
  bindingRecordLabels,
  instanceRecordLabels,
  ownerLabel,
  requestState,
} from '../resources/record-labels.js';
import { migrationOf } from '../resources/migration.js';
import {
  recordStatusConditions,
  type ObservedRecord,
  type RecordOperationStatus,
} from '../resources/conditions.js';
import { holdCatalogEntries, releaseCatalogEntries } from '../kube/catalog-entries.js';
import type { ActivityDeps } from './deps.js';
import { ownerReferenceTo } from './desired-objects.js';
import { deleteNamespace, namespaceReady } from './namespaces.js';
import { expectedRetry, FAILURE_TYPES, retryable, terminal } from './failures.js';
import { releaseReservations } from '../kube/reservations.js';
import { bookPlacement, bookingOf, clusterFailure, deleteCopy } from './placement.js';
import { recordsOnMaster } from './master-records.js';
import { keepForRun, keepingWrites, keptOrRead } from './run-records.js';

const PROGRESS: Record<InstanceOperationType | BindingOperationType, string> = {
  provision: 'Provisioning the instance',
  update: 'Updating the instance',
  deprovision: 'Deprovisioning the instance',
  bind: 'Creating the binding',
  unbind: 'Deleting the binding',
};

/** Creates the namespace, or checks the one that is there (a new instance costs one call). */
const withoutNulls = (fields: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== null));

/** The spec an instance's record holds for a request: what it says; fields it leaves out are absent. */
export const recordedInstanceSpec = (req: InstanceRequest): Record<string, unknown> =>
  withoutNulls({
    instanceId: req.instanceId,
    serviceId: req.serviceId,
    planId: req.planId,
    organizationGuid: req.organizationGuid ?? null,
    spaceGuid: req.spaceGuid ?? null,
    context: req.context ?? null,
    parameters: req.parameters ?? null,
    previousValues: req.previousValues ?? null,
    maintenanceInfo: req.maintenanceInfo ?? null,
  });

/**
 * The status fields every record shows of its operation, with the kstatus conditions they make
 * (conditions.ts) and the generation they describe: the record's as read, whose spec only the
 * instance's operations write, one at a time, so it is the spec this operation recorded.
 */
const operationFields = (
  record: ObservedRecord,
  status: RecordOperationStatus & Pick<OperationStatus, 'operation'>,
) => ({
  state: status.state,
  operation: status.operation,
  description: status.description ?? null,
  error: status.state === 'failed' ? (status.description ?? 'failed') : null,
  ...recordStatusConditions(record, status, new Date()),
});

const audit = (hash: string, requestedBy?: RequestedBy) => ({
  [ANNOTATIONS.requestHash]: hash,
  ...(requestedBy ? { [ANNOTATIONS.requestedBy]: JSON.stringify(requestedBy) } : {}),
});

/** The fields of `from` named by `keys` that are set: empty ones are left out. */
function setFieldsOf<T extends object, K extends keyof T>(from: T, keys: readonly K[]): Partial<Pick<T, K>> {
  return Object.fromEntries(keys.filter((key) => from[key]).map((key) => [key, from[key]])) as Partial<
    Pick<T, K>
  >;
}

/** The fields of an instance request its record's spec keeps when they are set. */
const OPTIONAL_INSTANCE_FIELDS = [
  'organizationGuid',
  'spaceGuid',
  'context',
  'parameters',
  'previousValues',
  'maintenanceInfo',
] as const;

/** JSON Patch operations that set `labels` on `record`, one by one, or all at once when it has none. */
const labelPatch = (record: KubeObject, labels: Record<string, string>): JsonPatchOperation[] =>
  record.metadata.labels
    ? Object.entries(labels).map(([key, value]) => ({
        op: 'add' as const,
        path: `/metadata/labels/${pointerKey(key)}`,
        value,
      }))
    : [{ op: 'add', path: '/metadata/labels', value: labels }];

/** The labels of the platform and region a provision or bind came on (none for `/v2`). */
const platformLabels = (route: PlatformRoute | undefined): Record<string, string> => ({
  ...(route ? { [LABELS.platform]: route.platform } : {}),
  ...(route?.region ? { [LABELS.region]: labelValue(route.region) } : {}),
});

/** A new record of a request: labelled, with its audit annotations and our finalizer. */
function newRecord(
  kind: ResourceKind,
  at: { readonly name: string; readonly namespace: string },
  request: { readonly requestHash: string; readonly requestedBy?: RequestedBy },
  labels: Record<string, string>,
  spec: Record<string, unknown>,
  owner?: KubeObject,
): KubeObject {
  return {
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    metadata: {
      name: at.name,
      namespace: at.namespace,
      labels,
      annotations: audit(request.requestHash, request.requestedBy),
      finalizers: [FINALIZER],
      ...(owner ? { ownerReferences: [ownerReferenceTo(owner)] } : {}),
    },
    spec,
  };
}

export function recordActivities(deps: ActivityDeps) {
  const { clusters, catalog: plans, scheduling, instanceNamespace: shared } = deps;
  const master = clusters.master;
  const kept = deps.runRecords;
  const records = deps.records ?? keepingWrites(recordsOnMaster(master), kept);
  const registry = clusters.namespace;
  // The catalog lives in the registry's namespace.
  const catalog = { master, namespace: registry, ...(shared ? { instanceNamespace: shared } : {}) };

  /** Runs `work` with the clients of a sister cluster; a cluster that does not answer is waited for. */
  async function onSister(clusterId: string | undefined, work: (sister: ClusterClient) => Promise<void>) {
    if (!clusterId || clusterId === clusters.masterId) return;
    try {
      await work(await clusters.get(clusterId));
    } catch (err) {
      throw clusterFailure(clusterId, err);
    }
  }

  /** A copy on a sister of a record of the master, by kind, name and namespace. */
  const copyOf = (kind: ResourceKind, namespace: string, name: string): KubeObject => ({
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    metadata: { name, namespace },
  });

  const instanceRefOf = (instanceId: string): InstanceRef => ({
    instanceId,
    name: resourceName(instanceId),
    namespace: instanceNamespace(instanceId, shared),
  });

  /** The reference to a recorded instance: where it is placed, and the task queue of its cluster's own worker. */
  async function placedRefOf(instanceId: string, record: SFServiceInstance): Promise<InstanceRef> {
    const clusterId = record.spec.clusterId;
    const taskQueue = clusterId ? await clusters.taskQueueOf(clusterId) : undefined;
    return {
      ...instanceRefOf(instanceId),
      ...(clusterId ? { clusterId } : {}),
      ...(taskQueue ? { taskQueue } : {}),
    };
  }

  /** Creates the instance's record; undefined when it exists already. */
  async function createInstanceRecord(
    req: InstanceRequest,
    ref: InstanceRef,
    spec: Record<string, unknown>,
  ): Promise<SFServiceInstance | undefined> {
    try {
      const labels = {
        ...instanceRecordLabels(req, 'provision', registry),
        [LABELS.instanceId]: labelValue(req.instanceId),
        [LABELS.serviceId]: labelValue(req.serviceId),
        [LABELS.planId]: labelValue(req.planId),
        ...platformLabels(req.platformRoute),
      };
      return await createRecord<SFServiceInstance>(
        master,
        SFSERVICEINSTANCE,
        newRecord(SFSERVICEINSTANCE, ref, req, labels, spec) as SFServiceInstance,
      );
    } catch (err) {
      if (isAlreadyExists(err)) return undefined;
      throw err;
    }
  }

  /**
   * The record the operation works on: a provision creates it, other operations (and a provision
   * run again) find it, and all but a deprovision give it the request's spec. Undefined when a
   * deprovision finds none. With it, the plans the instance leaves (on a plan change).
   */
  async function instanceRecordFor(
    req: InstanceRequest,
    operation: InstanceOperationType,
    ref: InstanceRef,
  ): Promise<{ record: SFServiceInstance; plansLeft: string[] } | undefined> {
    const spec = recordedInstanceSpec(req);
    const plansLeft: string[] = [];
    const previous = req.previousValues?.plan_id;
    if (typeof previous === 'string' && previous !== req.planId) plansLeft.push(previous);
    const created = operation === 'provision' ? await createInstanceRecord(req, ref, spec) : undefined;
    if (created) return { record: created, plansLeft };
    const found = await getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, ref.namespace, ref.name);
    if (!found) {
      if (operation === 'deprovision') return undefined;
      const record = await createInstanceRecord(req, ref, spec);
      if (!record) throw retryable(`instance ${req.instanceId} was recorded concurrently`);
      return { record, plansLeft };
    }
    if (operation === 'deprovision') {
      const labelled = await jsonPatchRecord<SFServiceInstance>(
        master,
        SFSERVICEINSTANCE,
        ref.namespace,
        ref.name,
        labelPatch(found, { ...ownerLabel(registry), [SF_LABELS.state]: requestState(operation) }),
      );
      return { record: labelled, plansLeft };
    }
    if (found.spec.planId !== req.planId) plansLeft.push(found.spec.planId);
    return { record: await replaceInstanceSpec(req, ref, spec, found), plansLeft };
  }

  /**
   * Gives the instance's record the request's spec, plan label and audit annotations in one atomic
   * patch: the spec is replaced (parameters a request left out are gone), the placement kept.
   */
  async function replaceInstanceSpec(
    req: InstanceRequest,
    ref: InstanceRef,
    spec: Record<string, unknown>,
    record: SFServiceInstance,
  ): Promise<SFServiceInstance> {
    const annotations = audit(req.requestHash, req.requestedBy);
    return jsonPatchRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, ref.namespace, ref.name, [
      { op: 'add', path: '/spec', value: { ...spec, clusterId: record.spec.clusterId } },
      ...labelPatch(record, {
        ...instanceRecordLabels(req, 'update', registry),
        [LABELS.planId]: labelValue(req.planId),
      }),
      ...Object.entries(annotations).map(([key, value]) => ({
        op: 'add' as const,
        path: `/metadata/annotations/${pointerKey(key)}`,
        value,
      })),
    ]);
  }

  /** Marks the operation as running in the instance record's status. */
  async function markInstanceRunning(
    req: InstanceRequest,
    operation: InstanceOperationType,
    ref: InstanceRef,
    record: SFServiceInstance,
  ): Promise<void> {
    await patchRecordStatus(master, SFSERVICEINSTANCE, ref.namespace, ref.name, {
      ...operationFields(record, {
        state: operation === 'deprovision' ? 'delete' : 'in progress',
        operation,
        description: PROGRESS[operation],
      }),
      namespace: ref.namespace,
      ...(req.dashboardUrl ? { dashboardUrl: req.dashboardUrl } : {}),
    });
  }

  /** Holds the service and plan the instance uses, and releases the plans it left (once nothing else holds them). */
  async function holdCatalogOf(req: InstanceRequest, plansLeft: readonly string[]): Promise<void> {
    try {
      await holdCatalogEntries(catalog, { serviceId: req.serviceId, planId: req.planId });
      if (plansLeft.length > 0)
        await releaseCatalogEntries(catalog, { serviceIds: [], planIds: [...plansLeft] });
    } catch (err) {
      // The plan's or service's finalizers changed meanwhile (the first instances of a plan, at once).
      if (isConflict(err)) throw expectedRetry((err as Error).message);
      throw err;
    }
  }

  return {
    /** Records the instance request (creating the record and its namespace) and marks the operation as running. */
    async recordInstance(req: InstanceRequest, operation: InstanceOperationType): Promise<InstanceRef> {
      const ref = instanceRefOf(req.instanceId);
      // A deprovision makes nothing, not even its namespace.
      if (operation !== 'deprovision') await namespaceReady(master, ref.namespace);
      const recorded = await instanceRecordFor(req, operation, ref);
      // Without a record, what is left of the deprovision is to finish its removal.
      if (!recorded) return { ...ref, removed: true };
      await markInstanceRunning(req, operation, ref, recorded.record);
      if (operation !== 'deprovision') await holdCatalogOf(req, recorded.plansLeft);
      return placedRefOf(req.instanceId, recorded.record);
    },

    /**
     * The request the instance's record holds, as `req` would become if it were recorded again:
     * what a failed or cancelled update puts back. Undefined when there is no record.
     */
    async recordedInstanceRequest(req: InstanceRequest): Promise<InstanceRequest | undefined> {
      const ref = instanceRefOf(req.instanceId);
      const record = await getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, ref.namespace, ref.name);
      if (!record) return undefined;
      return {
        instanceId: req.instanceId,
        serviceId: record.spec.serviceId,
        planId: record.spec.planId,
        ...setFieldsOf(record.spec, OPTIONAL_INSTANCE_FIELDS),
        requestHash: record.metadata.annotations?.[ANNOTATIONS.requestHash] ?? '',
        deadlineSeconds: req.deadlineSeconds,
      };
    },

    /**
     * Writes an operation's progress or final status to the instance record's status. A provision
     * that failed releases the instance's reservation; an update that ended books the plan the
     * record holds now (a failed update was put back to its previous plan).
     */
    async recordInstanceStatus(ref: InstanceRef, status: OperationStatus): Promise<void> {
      // A provision that failed holds no capacity: its reservation goes (deprovisioning it again is harmless).
      if (status.operation === 'provision' && status.state === 'failed')
        await releaseReservations(master, registry, ref.instanceId);
      // Read for its generation and conditions so far, whose transition times a status kept keeps.
      const record = await getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, ref.namespace, ref.name);
      if (!record) return;
      if (status.operation === 'update' && status.state !== 'in progress')
        await bookRecordedPlan(ref, record);
      try {
        await patchRecordStatus(master, SFSERVICEINSTANCE, ref.namespace, ref.name, {
          ...operationFields(record, status),
          instanceUsable: status.instanceUsable ?? null,
          updateRepeatable: status.updateRepeatable ?? null,
          ...(status.dashboardUrl ? { dashboardUrl: status.dashboardUrl } : {}),
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },

    /**
     * Marks a custom action as running in the instance record's `status.lastAction` (apart from
     * the fields of the last OSB operation) and returns where the instance is. An instance being
     * deleted, or whose provision never succeeded, has nothing to run an action on: that fails the
     * action at once.
     */
    async startAction(req: ActionRequest, runId: string): Promise<InstanceRef> {
      const ref = instanceRefOf(req.instanceId);
      const record = await getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, ref.namespace, ref.name);
      const refusal = actionRefusal(record);
      if (refusal) throw terminal(`${req.action} cannot run: ${refusal}`, FAILURE_TYPES.instance);
      const who = (req.requestedBy?.identity as { user?: unknown } | undefined)?.user;
      await patchRecordStatus(master, SFSERVICEINSTANCE, ref.namespace, ref.name, {
        lastAction: {
          operation: req.action,
          state: 'in progress',
          description: `Running ${req.action}`,
          runId,
          requestedBy: typeof who === 'string' ? who : null,
          startedAt: new Date().toISOString(),
          finishedAt: null,
        },
      });
      return placedRefOf(req.instanceId, record!);
    },

    /**
     * Writes how a custom action's run ended to the instance record's `status.lastAction`; a run
     * of the plan's backup action (`migrate.backup`) that succeeded is the instance's last backup
     * too (`status.lastBackup`).
     */
    async recordActionStatus(ref: InstanceRef, status: OperationStatus, runId: string): Promise<void> {
      const record = await getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, ref.namespace, ref.name);
      // Only this run's entry: a record that tells of another run (or none) is left as it is.
      if (record?.status?.lastAction?.runId !== runId) return;
      const action = record.status.lastAction.operation;
      const plan = plans.plan(record.spec.planId);
      const how = plan && migrationOf(plan);
      const backup =
        status.state === 'succeeded' && how && 'migration' in how && how.migration.backup === action;
      const now = new Date().toISOString();
      try {
        await patchRecordStatus(master, SFSERVICEINSTANCE, ref.namespace, ref.name, {
          lastAction: {
            state: status.state,
            description: status.description ?? null,
            finishedAt: status.state === 'in progress' ? null : now,
          },
          ...(backup
            ? {
                lastBackup: {
                  action,
                  id: runId,
                  clusterId: record.spec.clusterId ?? clusters.masterId,
                  takenAt: now,
                },
              }
            : {}),
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },

    /**
     * Removes an instance's records once its resources are gone: bindings, the instance, its
     * namespace; their copies on its sister first, whose garbage collector removes what they own.
     */
    async removeInstanceRecord(ref: InstanceRef): Promise<void> {
      const bindings = await records.bindingsOf(ref);
      await onSister(ref.clusterId, async (sister) => {
        for (const binding of bindings)
          await deleteCopy(
            sister,
            copyOf(SFSERVICEBINDING, binding.metadata.namespace!, binding.metadata.name),
          );
        await deleteCopy(sister, copyOf(SFSERVICEINSTANCE, ref.namespace, ref.name));
        if (!shared) await deleteNamespace(sister, ref.namespace);
      });
      await records.remove('removeInstanceRecord', () => removeInstanceRecordsOnMaster(deps, ref));
    },

    /** Records the binding request, owned by its instance record, and marks the operation as running. */
    async recordBinding(req: BindingRequest, operation: BindingOperationType): Promise<BindingRef> {
      const instance = await getInstanceRecord(req.instanceId);
      if (!instance) {
        if (operation !== 'unbind') throw retryable(`instance ${req.instanceId} has no record`);
        // The instance is gone, and its bindings with it.
        const instance = instanceRefOf(req.instanceId);
        const { name, namespace } = { name: resourceName(req.bindingId), namespace: instance.namespace };
        return { bindingId: req.bindingId, name, namespace, instance, removed: true };
      }
      const instanceRef = await placedRefOf(req.instanceId, instance);
      const ref: BindingRef = {
        bindingId: req.bindingId,
        name: resourceName(req.bindingId),
        namespace: instanceRef.namespace,
        instance: instanceRef,
      };
      const labels = {
        ...bindingRecordLabels(req, operation, registry),
        [LABELS.instanceId]: labelValue(req.instanceId),
        [LABELS.bindingId]: labelValue(req.bindingId),
        ...(instanceRef.clusterId ? { [LABELS.clusterId]: labelValue(instanceRef.clusterId) } : {}),
        ...(req.predecessorBindingId
          ? { [LABELS.predecessorBindingId]: labelValue(req.predecessorBindingId) }
          : {}),
        ...platformLabels(req.platformRoute),
      };
      // The times are kept from the creation on: a bind run again, or a GET, never moves them.
      const spec = {
        id: req.bindingId,
        instanceId: req.instanceId,
        serviceId: req.serviceId,
        planId: req.planId,
        ...setFieldsOf(req, [
          'bindResource',
          'context',
          'parameters',
          'predecessorBindingId',
          'expiresAt',
          'renewBefore',
        ]),
      };
      const create = () =>
        createRecord<SFServiceBinding>(
          master,
          SFSERVICEBINDING,
          newRecord(SFSERVICEBINDING, ref, req, labels, spec, instance) as SFServiceBinding,
        );
      // A bind's record is nearly always new: it is created at once, and read only when it is there.
      let existing = operation === 'bind' ? await create().catch(unlessAlreadyThere) : undefined;
      if (!existing) {
        const found = await getRecord<SFServiceBinding>(master, SFSERVICEBINDING, ref.namespace, ref.name);
        if (!found && operation === 'unbind') return { ...ref, removed: true };
        existing = found
          ? await jsonPatchRecord<SFServiceBinding>(
              master,
              SFSERVICEBINDING,
              ref.namespace,
              ref.name,
              labelPatch(found, bindingRecordLabels(req, operation, registry)),
            )
          : // (gone again between the create and the read)
            await create();
      }
      const running = await patchRecordStatus<SFServiceBinding>(
        master,
        SFSERVICEBINDING,
        ref.namespace,
        ref.name,
        operationFields(existing, {
          state: operation === 'unbind' ? 'delete' : 'in progress',
          operation,
          description: PROGRESS[operation],
        }),
      );
      // The steps that follow read both records as this step left them.
      keepForRun(kept, SFSERVICEINSTANCE, instance);
      keepForRun(kept, SFSERVICEBINDING, running);
      return ref;
    },

    /** Writes an operation's progress or final status to the binding record's status. */
    async recordBindingStatus(ref: BindingRef, status: OperationStatus): Promise<void> {
      // Read for its generation and conditions so far, whose transition times a status kept keeps.
      const record = await keptOrRead(kept, SFSERVICEBINDING, ref.namespace, ref.name, () =>
        getRecord<SFServiceBinding>(master, SFSERVICEBINDING, ref.namespace, ref.name),
      );
      if (!record) return;
      try {
        await patchRecordStatus(master, SFSERVICEBINDING, ref.namespace, ref.name, {
          ...operationFields(record, status),
          ...(status.responseSecret ? { response: { secretRef: status.responseSecret } } : {}),
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },

    /** Removes a binding's record and its response Secret once its resources are gone. */
    async removeBindingRecord(ref: BindingRef): Promise<void> {
      await onSister(ref.instance.clusterId, (sister) =>
        deleteCopy(sister, copyOf(SFSERVICEBINDING, ref.namespace, ref.name)),
      );
      await records.remove('removeBindingRecord', () => removeBindingRecordOnMaster(master, ref));
    },
  };

  /**
   * Books the plan the instance's record holds on its cluster, whatever the cluster has free: it is
   * what the instance held before an update that was put back, or what the update booked already.
   */
  async function bookRecordedPlan(ref: InstanceRef, record: SFServiceInstance): Promise<void> {
    const clusterId = record.spec.clusterId;
    if (!clusterId || record.metadata.deletionTimestamp) return;
    const booking = bookingOf(scheduling, plans.plan(record.spec.planId), ref.instanceId, clusterId);
    if (!booking) return;
    const { mustFit: _checked, ...whateverIsFree } = booking;
    await bookPlacement(master, registry, whateverIsFree);
  }

  async function getInstanceRecord(instanceId: string): Promise<SFServiceInstance | undefined> {
    const ref = instanceRefOf(instanceId);
    return getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, ref.namespace, ref.name);
  }
}

/** A create's answer when the object was there already: undefined, to be read; any other failure stands. */
function unlessAlreadyThere(err: unknown): undefined {
  if (isAlreadyExists(err)) return undefined;
  throw err;
}

/**
 * Removes an instance's records on the master (its copies on its sister are gone): its bindings'
 * and their responses, the instance's, its namespace, and its reservation.
 */
export async function removeInstanceRecordsOnMaster(
  { clusters, instanceNamespace: shared }: Pick<ActivityDeps, 'clusters' | 'instanceNamespace'>,
  ref: InstanceRef,
): Promise<void> {
  const master = clusters.master;
  const registry = clusters.namespace;
  const catalog = { master, namespace: registry, ...(shared ? { instanceNamespace: shared } : {}) };
  const bindings = await recordsOnMaster(master).bindingsOf(ref);
  for (const binding of bindings) {
    await removeRecord(master, SFSERVICEBINDING, binding.metadata.namespace!, binding.metadata.name);
    await deleteSecret(master, binding.metadata.namespace!, bindingSecretName(binding.metadata.name));
  }
  // Deleted first (our finalizer keeps it readable), so that a retry still knows its plan and
  // service, whose own finalizers go once no other record holds them.
  const record = await getRecord<SFServiceInstance>(master, SFSERVICEINSTANCE, ref.namespace, ref.name);
  if (record) {
    await deleteRecord(master, SFSERVICEINSTANCE, ref.namespace, ref.name);
    await releaseCatalogEntries(catalog, {
      serviceIds: [record.spec.serviceId],
      planIds: [record.spec.planId],
    });
  }
  await removeRecord(master, SFSERVICEINSTANCE, ref.namespace, ref.name);
  if (!shared) await deleteNamespace(master, ref.namespace);
  await releaseReservations(master, registry, ref.instanceId);
}

/** Removes a binding's record and its response on the master (its copy on the sister is gone). */
export async function removeBindingRecordOnMaster(master: ClusterClient, ref: BindingRef): Promise<void> {
  await deleteSecret(master, ref.namespace, bindingSecretName(ref.name));
  await removeRecord(master, SFSERVICEBINDING, ref.namespace, ref.name);
}

/** Drops our finalizer and deletes the record. */
async function removeRecord(
  cluster: ClusterClient,
  kind: typeof SFSERVICEINSTANCE,
  namespace: string,
  name: string,
): Promise<void> {
  const record = await getRecord(cluster, kind, namespace, name);
  if (!record) return;
  const finalizers = (record.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
  if (finalizers.length !== (record.metadata.finalizers ?? []).length) {
    await patchRecord(cluster, kind, namespace, name, {
      metadata: { finalizers, resourceVersion: record.metadata.resourceVersion },
    });
  }
  await deleteRecord(cluster, kind, namespace, name);
}

async function deleteSecret(cluster: ClusterClient, namespace: string, name: string): Promise<void> {
  try {
    await cluster.core.deleteNamespacedSecret({ name, namespace });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
