/**
 * The admin service over the master's records and Temporal: listings by label selector with the
 * apiserver's paging, the update of one instance as an OSB update runs it, the forced removal of a
 * stuck record (audited in the log and as an Event on the record), the plan rollouts and the dry
 * runs of plan changes.
 */
import type {
  ActionStarted,
  ActionState,
  AdminService,
  BindingSummary,
  ForcedRemoval,
  InstanceSummary,
  InstanceUpdateStarted,
  Page,
  PageRequest,
  RecordFilter,
  RecordKind,
} from '../admin/service.js';
import type { AdoptionReport, RolloutControl } from '../admin/contract.js';
import { adoptServiceFabrikRecords } from './adoption.js';
import type { DryRunControl } from '../admin/dry-run.js';
import { releaseCatalogEntries } from '../kube/catalog-entries.js';
import { deleteRecord, getRecord, listRecordPage, patchRecord } from '../kube/custom-objects.js';
import { statusCodeOf } from '../kube/errors.js';
import { recordEvent } from '../kube/events.js';
import { releaseReservations } from '../kube/reservations.js';
import { badRequest, conflict, notFound } from '../osb/errors.js';
import type { RequestMeta } from '../osb/service-broker.js';
import { FINALIZER, LABELS, bindingWorkflowId, instanceWorkflowId, labelValue } from '../resources/names.js';
import {
  MASTER_CLUSTER_ID,
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type KubeObject,
  type ResourceKind,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import { actionOperations } from './actions.js';
import type { BrokerDeps, BrokerParts } from './deps.js';
import { instanceOperations } from './instances.js';
import { TemporalDryRuns } from './dry-runs.js';
import { TemporalRollouts, recordedRevision } from './rollouts.js';

/** Where the admin service writes its audit lines: the broker's logger. */
export interface AuditLog {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

export interface AdminDeps {
  /** The registry's namespace, which the rollout workflow ids carry. */
  readonly namespace: string;
  readonly log: AuditLog;
  /** The master's id in the cluster registry. @default {@link MASTER_CLUSTER_ID} */
  readonly masterClusterId?: string;
}

/** Records read for one page when the request names no limit. */
export const DEFAULT_PAGE_LIMIT = 100;

/** Who reports the admin's Events. */
const EVENT_COMPONENT = 'interoperator-admin';

/** Platform of the originating identity an admin's operation is recorded with. */
export const ADMIN_PLATFORM = 'interoperator-admin';

/** What an operation an admin starts records of who asked. */
const adminMeta = (requestedBy: string): RequestMeta => ({
  apiVersion: 'admin',
  originatingIdentity: { platform: ADMIN_PLATFORM, value: { user: requestedBy } },
});

export class TemporalAdminService implements AdminService {
  readonly rollouts: RolloutControl;
  readonly dryRuns: DryRunControl;
  private readonly deps: BrokerDeps;
  private readonly instances: ReturnType<typeof instanceOperations>;
  private readonly actions: ReturnType<typeof actionOperations>;

  constructor(
    private readonly parts: BrokerParts,
    private readonly admin: AdminDeps,
  ) {
    this.deps = parts.deps;
    this.instances = instanceOperations(parts);
    this.actions = actionOperations(parts);
    this.rollouts = new TemporalRollouts({ ...parts.deps, namespace: admin.namespace });
    this.dryRuns = new TemporalDryRuns({
      ...parts.deps,
      namespace: admin.namespace,
      instances: (planId, page) => this.listInstances({ planId }, page),
    });
  }

  async listInstances(filter: RecordFilter, page: PageRequest): Promise<Page<InstanceSummary>> {
    const selector = labelSelector({
      [LABELS.serviceId]: filter.serviceId,
      [LABELS.planId]: filter.planId,
      [LABELS.clusterId]: filter.clusterId,
      [LABELS.planRevision]: filter.revision,
    });
    const read = await this.page<SFServiceInstance>(SFSERVICEINSTANCE, selector, page);
    const items = read.items
      .filter((r) => filter.state === undefined || r.status?.state === filter.state)
      .map(instanceSummary);
    return { items, ...(read.continue ? { continue: read.continue } : {}) };
  }

  async listBindings(filter: RecordFilter, page: PageRequest): Promise<Page<BindingSummary>> {
    if (filter.revision !== undefined) throw badRequest('Bindings have no plan revision to filter by.');
    const selector = labelSelector({ [LABELS.clusterId]: filter.clusterId });
    const read = await this.page<SFServiceBinding>(SFSERVICEBINDING, selector, page);
    const items = read.items
      .filter(
        (r) =>
          (filter.state === undefined || r.status?.state === filter.state) &&
          (filter.serviceId === undefined || r.spec.serviceId === filter.serviceId) &&
          (filter.planId === undefined || r.spec.planId === filter.planId),
      )
      .map(bindingSummary);
    return { items, ...(read.continue ? { continue: read.continue } : {}) };
  }

  async updateInstance(instanceId: string, requestedBy: string): Promise<InstanceUpdateStarted> {
    const record = await this.parts.records.instance(instanceId);
    if (!record || record.metadata.deletionTimestamp) throw notFound('The service instance does not exist.');
    const plan = this.deps.catalog.plan(record.spec.planId);
    if (!plan) throw conflict(`The plan ${record.spec.planId} of the instance is not in the catalog.`);
    const revision = recordedRevision(plan);
    const outcome = await this.instances.updateAsRecorded(instanceId, adminMeta(requestedBy));
    if (outcome.kind !== 'accepted') throw new Error('An update started by an admin is always asynchronous.');
    this.admin.log.info('instance update requested', {
      instanceId,
      planId: plan.spec.id,
      ...(revision ? { revision } : {}),
      requestedBy,
      operation: outcome.operation,
    });
    return { instanceId, operation: outcome.operation, ...(revision ? { revision } : {}) };
  }

  adoptServiceFabrik(dryRun: boolean, requestedBy: string): Promise<AdoptionReport> {
    const { master, catalog, instanceNamespace } = this.deps;
    return adoptServiceFabrikRecords(
      {
        master,
        catalog,
        records: this.parts.records,
        digests: this.parts.digests,
        namespace: this.admin.namespace,
        masterClusterId: this.admin.masterClusterId ?? MASTER_CLUSTER_ID,
        ...(instanceNamespace ? { instanceNamespace } : {}),
        log: this.admin.log,
      },
      dryRun,
      requestedBy,
    );
  }

  async forceRemove(kind: RecordKind, id: string, requestedBy: string): Promise<ForcedRemoval> {
    const record = kind === 'instance' ? await this.parts.records.instance(id) : await this.bindingRecord(id);
    if (!record) throw notFound(`There is no ${kind} record of ${id}.`);
    const resource = kind === 'instance' ? SFSERVICEINSTANCE : SFSERVICEBINDING;
    const { namespace, name } = { namespace: record.metadata.namespace!, name: record.metadata.name };
    const at = new Date().toISOString();
    // First the Event: once the finalizer is gone the namespace may go too, and the Event with it.
    await this.note(record, {
      reason: 'ForceRemoved',
      message: `${kind} ${id} force-removed by ${requestedBy}: an operation still running on it is terminated and the finalizer ${FINALIZER} dropped${kind === 'instance' ? '; its reservation and its hold on its plan and service are released' : ''}; its resources on cluster ${clusterOf(record) ?? '(none)'} are left as they are`,
    });
    const workflowId =
      kind === 'instance'
        ? instanceWorkflowId(id)
        : bindingWorkflowId((record as SFServiceBinding).spec.instanceId, id);
    const operationStopped = await this.stopOperation(workflowId, requestedBy);
    const deletionRequested = !record.metadata.deletionTimestamp;
    if (deletionRequested) await deleteRecord(this.deps.master, resource, namespace, name);
    const finalizerRemoved = await this.dropFinalizer(resource, namespace, name);
    const reservationsReleased =
      kind === 'instance' ? await this.releaseHolds(id, record as SFServiceInstance) : undefined;
    const removal: ForcedRemoval = {
      kind,
      id,
      namespace,
      name,
      deletionRequested,
      finalizerRemoved,
      operationStopped,
      ...(reservationsReleased ? { reservationsReleased } : {}),
      requestedBy,
      at,
    };
    this.admin.log.warn('record force-removed', { audit: true, ...removal, clusterId: clusterOf(record) });
    return removal;
  }

  async runAction(
    instanceId: string,
    action: string,
    parameters: Readonly<Record<string, unknown>> | undefined,
    requestedBy: string,
  ): Promise<ActionStarted> {
    const started = await this.actions.start(instanceId, action, parameters, adminMeta(requestedBy));
    // The parameters stay out of the log: they may name what only the instance's users should see.
    this.admin.log.info('instance action requested', {
      instanceId,
      action: started.action,
      requestedBy,
      runId: started.runId,
    });
    return started;
  }

  async rotateSecret(instanceId: string, secret: string, requestedBy: string): Promise<ActionStarted> {
    const started = await this.actions.rotate(instanceId, secret, adminMeta(requestedBy));
    this.admin.log.info('generated secret rotation requested', {
      instanceId,
      secret,
      requestedBy,
      runId: started.runId,
    });
    return started;
  }

  async moveInstance(
    instanceId: string,
    toClusterId: string | undefined,
    requestedBy: string,
    reason?: string,
  ): Promise<ActionStarted> {
    const started = await this.actions.move(
      instanceId,
      toClusterId,
      reason ?? `moved by ${requestedBy}`,
      adminMeta(requestedBy),
    );
    this.admin.log.info('instance move requested', {
      audit: true,
      instanceId,
      toClusterId: toClusterId ?? null,
      requestedBy,
      runId: started.runId,
    });
    return started;
  }

  actionState(instanceId: string, action: string, runId: string): Promise<ActionState> {
    return this.actions.state(instanceId, action, runId);
  }

  /** A page of the records of `kind`, in the shared instance namespace or in all namespaces. */
  private async page<T extends KubeObject>(kind: ResourceKind, labelSelector: string, page: PageRequest) {
    try {
      return await listRecordPage<T>(this.deps.master, kind, this.deps.instanceNamespace, {
        labelSelector,
        limit: page.limit ?? DEFAULT_PAGE_LIMIT,
        ...(page.continue ? { continue: page.continue } : {}),
      });
    } catch (err) {
      const status = statusCodeOf(err);
      if (page.continue && status === 410)
        throw badRequest('The continue token has expired: list again from the first page.');
      if (page.continue && status === 400) throw badRequest('The continue token is not valid.');
      throw err;
    }
  }

  /** The binding's record, found by its id's label in whatever namespace holds it. */
  private async bindingRecord(bindingId: string): Promise<SFServiceBinding | undefined> {
    const { items } = await listRecordPage<SFServiceBinding>(
      this.deps.master,
      SFSERVICEBINDING,
      this.deps.instanceNamespace,
      { labelSelector: `${LABELS.bindingId}=${labelValue(bindingId)}` },
    );
    return items.find((r) => r.spec.id === bindingId);
  }

  /** Terminates the record's operation workflow, if one runs; whether it did. */
  private async stopOperation(workflowId: string, requestedBy: string): Promise<boolean> {
    const running = await this.parts.runs.running(workflowId);
    if (!running) return false;
    await this.parts.runs.handle(workflowId, running.runId).terminate(`force-removed by ${requestedBy}`);
    return true;
  }

  /**
   * Releases what a removed instance held, as its deprovision would: its reservation on every
   * cluster, and its plan's and service's finalizer once no other record holds them (a record being
   * deleted holds none). The clusters whose reservation went.
   */
  private async releaseHolds(instanceId: string, record: SFServiceInstance): Promise<string[]> {
    const { master, instanceNamespace } = this.deps;
    const released = await releaseReservations(master, this.admin.namespace, instanceId);
    await releaseCatalogEntries(
      { master, namespace: this.admin.namespace, ...(instanceNamespace ? { instanceNamespace } : {}) },
      { serviceIds: [record.spec.serviceId], planIds: [record.spec.planId] },
    );
    return released;
  }

  /** Takes our finalizer off the record, if it is still there; whether it did. */
  private async dropFinalizer(kind: ResourceKind, namespace: string, name: string): Promise<boolean> {
    for (let attempt = 1; ; attempt += 1) {
      const record = await getRecord(this.deps.master, kind, namespace, name);
      const finalizers = record?.metadata.finalizers ?? [];
      if (!record || !finalizers.includes(FINALIZER)) return false;
      try {
        // The resourceVersion makes the patch fail on a record changed since read, rather than drop
        // a finalizer someone else added meanwhile.
        await patchRecord(this.deps.master, kind, namespace, name, {
          metadata: {
            finalizers: finalizers.filter((f) => f !== FINALIZER),
            resourceVersion: record.metadata.resourceVersion,
          },
        });
        return true;
      } catch (err) {
        if (statusCodeOf(err) === 404) return false;
        if (statusCodeOf(err) !== 409 || attempt >= 5) throw err;
      }
    }
  }

  /** An Event on the record; one that cannot be written (its namespace is going) is logged instead. */
  private async note(record: KubeObject, note: { reason: string; message: string }): Promise<void> {
    try {
      await recordEvent(this.deps.master, record, { ...note, type: 'Warning', component: EVENT_COMPONENT });
    } catch (err) {
      this.admin.log.warn('could not record the event', {
        namespace: record.metadata.namespace,
        name: record.metadata.name,
        reason: note.reason,
        status: statusCodeOf(err),
      });
    }
  }
}

/** A label selector of the values given (each as labelValue makes it), `a=b,c=d`. */
export function labelSelector(labels: Record<string, string | undefined>): string {
  return Object.entries(labels)
    .filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== '')
    .map(([key, value]) => `${key}=${labelValue(value)}`)
    .join(',');
}

const clusterOf = (record: KubeObject): string | undefined => record.metadata.labels?.[LABELS.clusterId];

function instanceSummary(record: SFServiceInstance): InstanceSummary {
  const { metadata, spec, status } = record;
  const clusterId = spec.clusterId ?? clusterOf(record);
  const revision = metadata.labels?.[LABELS.planRevision];
  return {
    instanceId: spec.instanceId ?? metadata.name,
    serviceId: spec.serviceId,
    planId: spec.planId,
    ...(clusterId ? { clusterId } : {}),
    ...(status?.state ? { state: status.state } : {}),
    ...(status?.operation ? { operation: status.operation } : {}),
    ...(status?.description ? { description: status.description } : {}),
    ...(revision ? { revision } : {}),
    namespace: metadata.namespace!,
    name: metadata.name,
    ...(metadata.creationTimestamp ? { createdAt: metadata.creationTimestamp } : {}),
    ...(metadata.deletionTimestamp ? { deletionRequestedAt: metadata.deletionTimestamp } : {}),
    ...(status?.lastAction
      ? {
          lastAction: {
            action: status.lastAction.operation,
            state: status.lastAction.state,
            ...(status.lastAction.description ? { description: status.lastAction.description } : {}),
            ...(status.lastAction.runId ? { runId: status.lastAction.runId } : {}),
          },
        }
      : {}),
  };
}

function bindingSummary(record: SFServiceBinding): BindingSummary {
  const { metadata, spec, status } = record;
  const clusterId = clusterOf(record);
  return {
    bindingId: spec.id,
    instanceId: spec.instanceId,
    serviceId: spec.serviceId,
    planId: spec.planId,
    ...(clusterId ? { clusterId } : {}),
    ...(status?.state ? { state: status.state } : {}),
    ...(status?.operation ? { operation: status.operation } : {}),
    ...(status?.description ? { description: status.description } : {}),
    namespace: metadata.namespace!,
    name: metadata.name,
    ...(metadata.creationTimestamp ? { createdAt: metadata.creationTimestamp } : {}),
    ...(metadata.deletionTimestamp ? { deletionRequestedAt: metadata.deletionTimestamp } : {}),
  };
}
