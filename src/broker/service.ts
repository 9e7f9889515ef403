/**
 * The service layer over Temporal and Kubernetes: the ServiceBroker the OSB API calls. Each
 * state-changing call starts (or finds) the operation's workflow; reads answer from the records in
 * the master cluster and from workflow state.
 *
 * - instances.ts, bindings.ts: the operations, one method per OSB endpoint;
 * - workflow-runs.ts: starting, describing and waiting for operation workflows;
 * - records.ts: reading the records;
 * - last-operation.ts, request-digest.ts: what `last_operation` answers, and what tells a repeated
 *   request from a conflicting one (pure);
 * - temporal-errors.ts: a Temporal that cannot be reached is 503 with `Retry-After`, never 500.
 */
import type {
  BindOutcome,
  BindRequest,
  BindingView,
  DeprovisionRequest,
  InstanceView,
  LastOperation,
  OperationOutcome,
  ProvisionRequest,
  RequestMeta,
  ServiceBroker,
  UnbindRequest,
  UpdateRequest,
} from '../osb/service-broker.js';
import { bindingOperations } from './bindings.js';
import type { BrokerDeps, BrokerParts } from './deps.js';
import { instanceOperations } from './instances.js';
import { Records } from './records.js';
import { requestDigests } from './request-digest.js';
import { asPlatformError } from './temporal-errors.js';
import { WorkflowRuns } from './workflow-runs.js';

export type { BrokerDeps } from './deps.js';

/** The operation's promise, with a Temporal that cannot be reached answered as 503 (temporal-errors.ts). */
const platformErrors = <T>(operation: Promise<T>): Promise<T> =>
  operation.catch((err: unknown) => {
    throw asPlatformError(err);
  });

/** What the operations work with, built from the broker's dependencies. */
export function brokerParts(deps: BrokerDeps): BrokerParts {
  return {
    deps,
    runs: new WorkflowRuns(deps),
    records: new Records(deps),
    digests: requestDigests(deps.hashKeys),
  };
}

export class TemporalServiceBroker implements ServiceBroker {
  private readonly instances: ReturnType<typeof instanceOperations>;
  private readonly bindings: ReturnType<typeof bindingOperations>;

  constructor(deps: BrokerDeps) {
    const parts = brokerParts(deps);
    this.instances = instanceOperations(parts);
    this.bindings = bindingOperations(parts);
  }

  provision(req: ProvisionRequest, meta: RequestMeta): Promise<OperationOutcome> {
    return platformErrors(this.instances.provision(req, meta));
  }

  update(req: UpdateRequest, meta: RequestMeta): Promise<OperationOutcome> {
    return platformErrors(this.instances.update(req, meta));
  }

  deprovision(req: DeprovisionRequest, meta: RequestMeta): Promise<OperationOutcome> {
    return platformErrors(this.instances.deprovision(req, meta));
  }

  getInstance(instanceId: string): Promise<InstanceView | undefined> {
    return platformErrors(this.instances.getInstance(instanceId));
  }

  instanceLastOperation(instanceId: string, operation?: string): Promise<LastOperation> {
    return platformErrors(this.instances.instanceLastOperation(instanceId, operation));
  }

  bind(req: BindRequest, meta: RequestMeta): Promise<BindOutcome> {
    return platformErrors(this.bindings.bind(req, meta));
  }

  unbind(req: UnbindRequest, meta: RequestMeta): Promise<OperationOutcome> {
    return platformErrors(this.bindings.unbind(req, meta));
  }

  getBinding(instanceId: string, bindingId: string): Promise<BindingView | undefined> {
    return platformErrors(this.bindings.getBinding(instanceId, bindingId));
  }

  bindingLastOperation(instanceId: string, bindingId: string, operation?: string): Promise<LastOperation> {
    return platformErrors(this.bindings.bindingLastOperation(instanceId, bindingId, operation));
  }
}
