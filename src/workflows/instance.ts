/**
 * The operations on a service instance. Each reads like its runbook: record the request, place
 * the instance, create or delete the operator's resources, wait until the operator says done,
 * record the outcome. A failed step fails the operation with its description; a cancelled one
 * (a synchronous request that gave up) removes what it created, so nothing is left orphaned.
 */
import { isCancellation, patched, upsertSearchAttributes } from '@temporalio/workflow';
import { MASTER_CLUSTER_ID } from '../resources/types.js';
import {
  startingStatus,
  type InstanceRef,
  type InstanceRequest,
  type OperationStatus,
  type StatusReport,
  type Target,
} from './messages.js';
import {
  activities,
  failureDescription,
  isStepFailure,
  Operation,
  recordCancelled,
  stoppedDeletion,
  waitForOperator,
} from './operation.js';
import { OsbClusterId } from './search-attributes.js';

// Recording the outcome must happen whatever the deadline; the rest of the work runs by op.steps.
const { recordInstanceStatus } = activities;

/** Records the request, places the instance and makes its record present on its cluster. */
async function placeInstance(
  op: Operation,
  req: InstanceRequest,
  operation: 'provision' | 'update',
): Promise<Target> {
  const { recordInstance, scheduleInstance, replicateInstance } = op.steps;
  const recorded = await recordInstance(req, operation);
  const clusterId = await scheduleInstance(recorded);
  upsertSearchAttributes([{ key: OsbClusterId, value: clusterId }]);
  // The master holds the record already; a sister cluster gets a replica.
  if (clusterId !== MASTER_CLUSTER_ID) await replicateInstance(recorded, clusterId);
  return { instance: { ...recorded, clusterId } };
}

/** Deletes the instance's resources, waits until the operator has let them go, then drops the records. */
async function removeInstance(op: Operation, target: Target): Promise<StatusReport> {
  const { deleteResources, checkStatus, removeInstanceRecord } = op.steps;
  op.update({ description: 'Deleting the operator’s resources' });
  await deleteResources(target);
  const report = await waitForOperator(op, () => checkStatus(target, 'deprovision'));
  if (report.state === 'succeeded') await removeInstanceRecord(target.instance);
  return report;
}

async function outcome(
  op: Operation,
  instance: InstanceRef | undefined,
  report: StatusReport,
  succeeded: string,
  extra: Partial<OperationStatus>,
): Promise<OperationStatus> {
  const status = op.outcome(
    report.state,
    report.description ?? (report.state === 'succeeded' ? succeeded : 'The operation failed'),
    { ...extra, ...(report.dashboardUrl ? { dashboardUrl: report.dashboardUrl } : {}) },
  );
  if (instance) await recordInstanceStatus(instance, status);
  return op.finish(status);
}

/** OSB provision: PUT /v2/service_instances/:instance_id */
export async function provisionWorkflow(req: InstanceRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus('provision', req), req.deadlineSeconds);
  const { applyTemplate, checkStatus } = op.steps;
  let target: Target | undefined;
  let report: StatusReport;
  try {
    target = await placeInstance(op, req, 'provision');
    op.update({ description: 'Creating the operator’s resources' });
    await applyTemplate(target, 'provision');
    report = await waitForOperator(op, () => checkStatus(target!, 'provision'));
  } catch (err) {
    if (isCancellation(err)) {
      const undo = target;
      if (undo) await op.undo(() => removeInstance(op, undo));
      throw err;
    }
    if (!isStepFailure(err)) throw err;
    report = { state: 'failed', description: failureDescription(err) };
  }
  return outcome(op, target?.instance, report, 'The instance is provisioned', {});
}

/**
 * Puts an instance back as it was before an update that failed or was cancelled: its record, then
 * the operator's resources rendered from it (when the update got as far as placing them). Says
 * where the record is, or why putting it back failed.
 */
async function rollBack(
  op: Operation,
  previous: InstanceRequest,
  target: Target | undefined,
): Promise<{ instance?: InstanceRef; failure?: string }> {
  const { recordInstance, applyTemplate } = op.steps;
  try {
    return await op.undo(async () => {
      const instance = await recordInstance(previous, 'update');
      if (target) await applyTemplate(target, 'provision');
      return { instance };
    });
  } catch (err) {
    if (!isStepFailure(err)) throw err;
    return { failure: failureDescription(err) };
  }
}

/** OSB update: PATCH /v2/service_instances/:instance_id */
export async function updateWorkflow(req: InstanceRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus('update', req), req.deadlineSeconds);
  const { recordedInstanceRequest, applyTemplate, checkStatus } = op.steps;
  let previous: InstanceRequest | undefined;
  let target: Target | undefined;
  let report: StatusReport;
  try {
    // An update that ran before updates were rolled back goes on without (its history has no such step).
    if (patched('update-rolls-back')) previous = await recordedInstanceRequest(req);
    target = await placeInstance(op, req, 'update');
    op.update({ description: 'Updating the operator’s resources' });
    await applyTemplate(target, 'provision');
    report = await waitForOperator(op, () => checkStatus(target!, 'update'));
  } catch (err) {
    if (isCancellation(err)) {
      // A synchronous request gave up: the instance goes back to what it was.
      if (previous) {
        const back = await rollBack(op, previous, target);
        const status = op.outcome(
          'failed',
          back.failure
            ? `The update was cancelled; putting the instance back failed: ${back.failure}`
            : 'The update was cancelled and rolled back.',
          { instanceUsable: !back.failure, updateRepeatable: true },
        );
        const instance = back.instance ?? target?.instance;
        await recordCancelled(op, status, instance && ((s) => recordInstanceStatus(instance, s)));
      }
      throw err;
    }
    if (!isStepFailure(err)) throw err;
    report = { state: 'failed', description: failureDescription(err) };
  }
  let instance = target?.instance;
  let instanceUsable = true;
  if (report.state === 'failed' && previous) {
    // A failed update changes nothing: the instance keeps its plan, its parameters and the
    // operator's resources rendered from them. It stays usable, and the update can be repeated.
    const back = await rollBack(op, previous, target);
    const failed = report.description ?? 'The update failed';
    report = {
      state: 'failed',
      description: back.failure
        ? `${failed}; putting the instance back failed: ${back.failure}`
        : `${failed} (rolled back: the instance keeps its previous plan and parameters)`,
    };
    instance = back.instance ?? instance;
    instanceUsable = !back.failure;
  }
  return outcome(op, instance, report, 'The instance is updated', { instanceUsable, updateRepeatable: true });
}

/** OSB deprovision: DELETE /v2/service_instances/:instance_id */
export async function deprovisionWorkflow(req: InstanceRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus('deprovision', req), req.deadlineSeconds);
  let instance: InstanceRef | undefined;
  let report: StatusReport;
  try {
    instance = await op.steps.recordInstance(req, 'deprovision');
    report = await removeInstance(op, { instance });
  } catch (err) {
    if (isCancellation(err)) {
      const recorded = instance;
      await recordCancelled(op, stoppedDeletion(op), recorded && ((s) => recordInstanceStatus(recorded, s)));
      throw err;
    }
    if (!isStepFailure(err)) throw err;
    report = { state: 'failed', description: failureDescription(err) };
  }
  // Once deprovisioned there is no record left to write to. A deprovision that failed after it
  // began deleting the operator's resources leaves an instance that is no longer usable.
  return outcome(
    op,
    report.state === 'succeeded' ? undefined : instance,
    report,
    'The instance is deprovisioned',
    {
      instanceUsable: report.state !== 'succeeded' && instance === undefined,
    },
  );
}
