/**
 * The broker's reads of the records in the master cluster (SFServiceInstance, SFServiceBinding and
 * the Secret with a binding's response), and the instance as the OSB API shows it.
 */
import type { ClusterClient } from '../kube/clients.js';
import { countRecords, getRecord, listRecordsAnywhere } from '../kube/custom-objects.js';
import { isNotFound } from '../kube/errors.js';
import type { BindingResponse, InstanceView } from '../osb/service-broker.js';
import {
  LABELS,
  bindingSecretName,
  instanceNamespace,
  labelValue,
  resourceName,
} from '../resources/names.js';
import { isOwnedBy } from '../resources/record-labels.js';
import {
  SFSERVICEBINDING,
  SFSERVICEINSTANCE,
  type SFServiceBinding,
  type SFServiceInstance,
} from '../resources/types.js';
import type { Found } from './found.js';
import type { RunState } from './workflow-runs.js';

export type { Found } from './found.js';

/** What a read by name found, told apart by the owner the master's client works for. */
function found<T extends SFServiceInstance | SFServiceBinding>(
  master: ClusterClient,
  record: T | undefined,
): Found<T> {
  if (!record) return { elsewhere: false };
  return isOwnedBy(record.metadata.labels, master.owner) ? { record, elsewhere: false } : { elsewhere: true };
}

/**
 * The record read by name, and the latest run of its operation workflow unless the record is
 * another installation's: that run, under the same workflow id, is the other's (whose payloads
 * this installation may not even be able to read), so it is not awaited, and its failure is not
 * this answer's.
 */
export async function withOwnRun<T>(
  found: Promise<Found<T>>,
  run: Promise<RunState | undefined>,
): Promise<[Found<T>, RunState | undefined]> {
  run.catch(() => undefined);
  const read = await found;
  return [read, read.elsewhere ? undefined : await run];
}

/**
 * For a request that decides on both, the record and the run of its operation workflow read in
 * that workflow's order: the run is described first, the record read once that answered, so a
 * record found beside no running run is as the last run left it (an operation writes its record
 * before its run ends). Read the other way round, an operation ending between the two reads
 * leaves a record still telling of it beside no run: the request would start that operation
 * again, or update from the spec the last update replaced. As with {@link withOwnRun}, another
 * installation's run is not this answer's, nor is its failure.
 */
export async function recordAsLeftByRun<T>(
  find: () => Promise<Found<T>>,
  run: () => Promise<RunState | undefined>,
): Promise<[Found<T>, RunState | undefined]> {
  const described = await run().then(
    (state) => ({ state }),
    (error: unknown) => ({ error }),
  );
  const read = await find();
  if (read.elsewhere) return [read, undefined];
  if ('error' in described) throw described.error;
  return [read, described.state];
}

/**
 * For a create (provision, bind): the record, and the run of its operation workflow only when
 * there is a record (an id without one has no operation but one just starting, which the start
 * finds). A record found beside no running run is read again, so that it is as the last run left
 * it ({@link recordAsLeftByRun}).
 */
export async function recordOfCreate<T>(
  find: () => Promise<Found<T>>,
  run: () => Promise<RunState | undefined>,
): Promise<[Found<T>, RunState | undefined]> {
  const first = await find();
  if (!first.record) return [first, undefined];
  const running = await run();
  return running ? [first, running] : [await find(), undefined];
}

export class Records {
  constructor(
    private readonly deps: { readonly master: ClusterClient; readonly instanceNamespace?: string },
  ) {}

  /**
   * The instance's record, told apart from another installation's ({@link Found}); `cached`, as
   * the apiserver's watch cache holds it (a moment behind, at most, the latest write: getRecord).
   */
  async findInstance(
    instanceId: string,
    read: 'latest' | 'cached' = 'latest',
  ): Promise<Found<SFServiceInstance>> {
    const record = await getRecord<SFServiceInstance>(
      this.deps.master,
      SFSERVICEINSTANCE,
      instanceNamespace(instanceId, this.deps.instanceNamespace),
      resourceName(instanceId),
      read,
    );
    return found(this.deps.master, record);
  }

  /** The instance's record; undefined when there is none, or it is another installation's. */
  async instance(instanceId: string): Promise<SFServiceInstance | undefined> {
    return (await this.findInstance(instanceId)).record;
  }

  /**
   * How many instance records of these plans (by their plan-id label), wherever they are, pass
   * `counts`: read a page at a time, never all at once.
   */
  countInstancesOfPlans(
    planIds: readonly string[],
    counts: (record: SFServiceInstance) => boolean,
  ): Promise<number> {
    if (planIds.length === 0) return Promise.resolve(0);
    const values = [...new Set(planIds.map(labelValue))].sort();
    return countRecords<SFServiceInstance>(
      this.deps.master,
      SFSERVICEINSTANCE,
      this.deps.instanceNamespace,
      `${LABELS.planId} in (${values.join(',')})`,
      counts,
    );
  }

  /** The binding's record, told apart from another installation's ({@link Found}); `cached` as {@link findInstance}. */
  async findBinding(
    instanceId: string,
    bindingId: string,
    read: 'latest' | 'cached' = 'latest',
  ): Promise<Found<SFServiceBinding>> {
    const record = await getRecord<SFServiceBinding>(
      this.deps.master,
      SFSERVICEBINDING,
      instanceNamespace(instanceId, this.deps.instanceNamespace),
      resourceName(bindingId),
      read,
    );
    return found(this.deps.master, record);
  }

  /** The binding's record; undefined when there is none, or it is another installation's. */
  async binding(instanceId: string, bindingId: string): Promise<SFServiceBinding | undefined> {
    return (await this.findBinding(instanceId, bindingId)).record;
  }

  /**
   * The binding a rotation names as its predecessor: the instance's binding of that id, else one of
   * another instance with that id (which the rotation rules refuse by name); undefined when there
   * is none.
   */
  async bindingForRotation(instanceId: string, bindingId: string): Promise<SFServiceBinding | undefined> {
    const own = await this.binding(instanceId, bindingId);
    if (own) return own;
    const found = await listRecordsAnywhere<SFServiceBinding>(
      this.deps.master,
      SFSERVICEBINDING,
      this.deps.instanceNamespace,
      `${LABELS.bindingId}=${labelValue(bindingId)}`,
    );
    return found.find((binding) => binding.spec.id === bindingId);
  }

  /**
   * The binding's response, from the Secret its bind wrote (`{}` when there is none), with the
   * times its record keeps (see {@link withRecordedTimes}).
   */
  async bindingResponse(record: SFServiceBinding, secretName?: string): Promise<BindingResponse> {
    const name = secretName ?? record.status?.response?.secretRef ?? bindingSecretName(record.metadata.name);
    return this.responseIn(record.metadata.namespace!, name, record.spec);
  }

  /**
   * The response in the Secret `namespace/secretName`, with the times of `recorded` (the binding
   * record's spec, or the request it was recorded from) as {@link withRecordedTimes} sets them.
   */
  async responseIn(namespace: string, secretName: string, recorded: RecordedTimes): Promise<BindingResponse> {
    let response: BindingResponse = {};
    try {
      const secret = await this.deps.master.core.readNamespacedSecret({ name: secretName, namespace });
      const raw = secret.data?.response;
      if (raw) response = JSON.parse(Buffer.from(raw, 'base64').toString('utf8')) as BindingResponse;
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    return withRecordedTimes(response, recorded);
  }
}

/** The times of a binding its record keeps (from its plan's `bindingLifetime`). */
export type RecordedTimes = Pick<SFServiceBinding['spec'], 'expiresAt' | 'renewBefore'>;

/**
 * A binding's response with the times its record keeps from its plan's `bindingLifetime`: when the
 * record has them, `metadata.expires_at` and `metadata.renew_before` are the record's (both, the
 * latter only when the plan gives one), over what the status template rendered, because the record
 * is what the broker checks expiry against; other metadata of the template stays. Without them the
 * template's metadata is passed on as it is.
 */
export function withRecordedTimes(response: BindingResponse, recorded: RecordedTimes): BindingResponse {
  const { expiresAt, renewBefore } = recorded;
  if (!expiresAt) return response;
  const { expires_at: _expires, renew_before: _renew, ...others } = response.metadata ?? {};
  return {
    ...response,
    metadata: { ...others, expires_at: expiresAt, ...(renewBefore ? { renew_before: renewBefore } : {}) },
  };
}

/**
 * The instance from its record and the operation running on it, if any. Without a record, a
 * provision that runs but has not recorded the instance yet: its workflow's search attributes know
 * the ids. Undefined when neither tells of an instance.
 */
export function instanceView(
  instanceId: string,
  record: SFServiceInstance | undefined,
  running: RunState | undefined,
): InstanceView | undefined {
  if (!record) {
    if (!running?.memo || !running.serviceId || !running.planId) return undefined;
    return {
      instanceId,
      serviceId: running.serviceId,
      planId: running.planId,
      operation: { type: 'provision', state: 'in progress' },
    };
  }
  const type = running?.memo?.operation ?? record.status?.operation;
  const state = running ? 'in progress' : (record.status?.state ?? 'in progress');
  return {
    instanceId,
    serviceId: record.spec.serviceId,
    planId: record.spec.planId,
    ...(record.spec.parameters ? { parameters: record.spec.parameters } : {}),
    ...(record.spec.context ? { context: record.spec.context } : {}),
    ...(record.spec.maintenanceInfo ? { maintenanceInfo: record.spec.maintenanceInfo } : {}),
    ...(record.status?.dashboardUrl ? { dashboardUrl: record.status.dashboardUrl } : {}),
    ...(type === 'provision' || type === 'update' || type === 'deprovision'
      ? { operation: { type, state: state === 'succeeded' || state === 'failed' ? state : 'in progress' } }
      : {}),
  };
}
