/**
 * The operations on a service instance. Each reads like its runbook: record the request, place
 * the instance, create or delete the operator's resources, wait until the operator says done,
 * record how it ended. A step that fails for good fails the operation with its description; a
 * cancelled one (a synchronous request that gave up) runs the compensations pushed as its steps
 * succeeded, so nothing is left orphaned.
 */
import { patched, upsertSearchAttributes } from '@temporalio/workflow';
import { failureDescription, isStepFailure } from './local-then-queued.js';
import {
  asRecorded,
  isRolloutUpdate,
  startingStatus,
  type InstanceRef,
  type InstanceRequest,
  type OperationStatus,
  type StatusReport,
  type Target,
} from './messages.js';
import { applyAndWaitForOperator, Operation, runDeletion, waitForOperator } from './operation.js';
import { OsbClusterId } from './search-attributes.js';

/** The description of an instance operation that failed when the operator gave none. */
const FAILED = 'The operation failed';

/** Writes a final status to the instance's record; undefined when the operation has no record. */
const recordOn = (op: Operation, instance: InstanceRef | undefined) =>
  instance && ((status: OperationStatus) => op.steps.recordInstanceStatus(instance, status));

/** Marks the updates that apply with applyTemplateWatched and may wait before their first check. */
const UPDATE_WAITS_FOR_THE_OPERATOR = 'update-waits-for-the-operator';

/** Marks the updates whose apply step itself waits for the operator's word (applyTemplateAwaited). */
const UPDATE_AWAITS_THE_OPERATOR_IN_ITS_STEP = 'update-awaits-the-operator-in-its-step';

/** The dashboard URL the operator reported, for the final status. */
const dashboardOf = (report: StatusReport): Partial<OperationStatus> =>
  report.dashboardUrl ? { dashboardUrl: report.dashboardUrl } : {};

/** Records the request, places the instance and makes its record present on its cluster. */
async function placeInstance(
  op: Operation,
  req: InstanceRequest,
  operation: 'provision' | 'update',
): Promise<Target> {
  const { recordInstance, scheduleInstance, replicateInstance } = op.steps;
  const recorded = await recordInstance(req, operation);
  const { clusterId, taskQueue } = await scheduleInstance(recorded);
  upsertSearchAttributes([{ key: OsbClusterId, value: clusterId }]);
  const placed: InstanceRef = { ...recorded, clusterId, ...(taskQueue ? { taskQueue } : {}) };
  // A sister cluster gets a replica; the step knows which cluster is the master (its id is configured).
  await replicateInstance(placed, clusterId);
  return { instance: placed };
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

/**
 * Ends a deprovision that found no record: its steps already ran (their workflow task was
 * replayed) and removed it. What follows the record's removal is done again; each step is
 * harmless when repeated.
 */
async function finishRemoval(op: Operation, instance: InstanceRef): Promise<StatusReport> {
  await op.steps.removeInstanceRecord(instance);
  return { state: 'succeeded' };
}

/** OSB provision: PUT /v2/service_instances/:instance_id */
export async function provisionWorkflow(req: InstanceRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus('provision', req), req.deadlineSeconds, req.firstPollMs);
  const { applyTemplate, checkStatus } = op.steps;
  let target: Target | undefined;
  const report = await op.run(async (compensations) => {
    const placed = await placeInstance(op, req, 'provision');
    target = placed;
    compensations.push(() => removeInstance(op, placed));
    op.update({ description: 'Creating the operator’s resources' });
    await applyTemplate(placed, 'provision');
    return waitForOperator(op, () => checkStatus(placed, 'provision'));
  });
  return op.end(report, {
    succeeded: 'The instance is provisioned',
    failed: FAILED,
    extra: dashboardOf(report),
    record: recordOn(op, target?.instance),
  });
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

/** Puts the instance back when a synchronous update gave up, and ends the update saying so. */
async function cancelUpdate(
  op: Operation,
  previous: InstanceRequest,
  target: Target | undefined,
): Promise<void> {
  const back = await rollBack(op, previous, target);
  const status = op.finalStatus(
    'failed',
    back.failure
      ? `The update was cancelled; putting the instance back failed: ${back.failure}`
      : 'The update was cancelled and rolled back.',
    { instanceUsable: !back.failure, updateRepeatable: true },
  );
  await op.endWith(status, recordOn(op, back.instance ?? target?.instance));
}

/** OSB update: PATCH /v2/service_instances/:instance_id */
export async function updateWorkflow(request: InstanceRequest): Promise<OperationStatus> {
  let req = request;
  const op = new Operation(startingStatus('update', req), req.deadlineSeconds, req.firstPollMs);
  const { recordedInstanceRequest, applyTemplate, checkStatus, pruneResources } = op.steps;
  let previous: InstanceRequest | undefined;
  let target: Target | undefined;
  let report = await op.run(async (compensations) => {
    previous = await recordedInstanceRequest(req);
    // A rollout brings the instance to its plan's revision with what the record holds now.
    if (previous && isRolloutUpdate(req)) req = asRecorded(req, previous);
    const before = previous;
    if (before) compensations.push(() => cancelUpdate(op, before, target));
    const placed = await placeInstance(op, req, 'update');
    target = placed;
    op.update({ description: 'Updating the operator’s resources' });
    let settled: StatusReport;
    if (patched(UPDATE_AWAITS_THE_OPERATOR_IN_ITS_STEP)) {
      // A check before the operator observed the change cannot pass (see checkStatus): the apply
      // step waits a while for the operator's word, when there is one to wait for, then the workflow.
      settled = await applyAndWaitForOperator(
        op,
        (waitMs) => op.steps.applyTemplateAwaited(placed, 'provision', waitMs),
        () => checkStatus(placed, 'update'),
      );
    } else if (patched(UPDATE_WAITS_FOR_THE_OPERATOR)) {
      // A check before the operator observed the change cannot pass (see checkStatus): the first
      // one waits for the operator's word when there is one to wait for.
      const changes = op.operatorChanges;
      const { operatorBehind } = await op.steps.applyTemplateWatched(placed, 'provision');
      const start = operatorBehind ? { operatorBehindSince: changes } : {};
      settled = await waitForOperator(op, () => checkStatus(placed, 'update'), start);
    } else {
      await applyTemplate(placed, 'provision');
      settled = await waitForOperator(op, () => checkStatus(placed, 'update'));
    }
    // Only an update the operator reported done deletes the objects its plan no longer renders:
    // one that fails rolls back onto them, as they were.
    if (settled.state !== 'succeeded') return settled;
    op.update({ description: 'Deleting the objects the plan no longer renders' });
    await pruneResources(placed);
    return settled;
  });
  let instance = target?.instance;
  // What the status template says of a failure stands; unsaid, the instance stays usable and the
  // update can be repeated.
  let instanceUsable = report.instanceUsable ?? true;
  const updateRepeatable = report.updateRepeatable ?? true;
  if (report.state === 'failed' && previous) {
    // A failed update changes nothing: the instance keeps its plan, its parameters and the
    // operator's resources rendered from them.
    const back = await rollBack(op, previous, target);
    const failed = report.description ?? 'The update failed';
    report = {
      state: 'failed',
      description: back.failure
        ? `${failed}; putting the instance back failed: ${back.failure}`
        : `${failed} (rolled back: the instance keeps its previous plan and parameters)`,
    };
    instance = back.instance ?? instance;
    instanceUsable = instanceUsable && !back.failure;
  }
  return op.end(report, {
    succeeded: 'The instance is updated',
    failed: FAILED,
    extra: { instanceUsable, updateRepeatable, ...dashboardOf(report) },
    record: recordOn(op, instance),
  });
}

/** OSB deprovision: DELETE /v2/service_instances/:instance_id */
export async function deprovisionWorkflow(req: InstanceRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus('deprovision', req), req.deadlineSeconds, req.firstPollMs);
  return runDeletion(op, {
    record: () => op.steps.recordInstance(req, 'deprovision'),
    remove: (instance) => (instance.removed ? finishRemoval(op, instance) : removeInstance(op, { instance })),
    writeStatus: op.steps.recordInstanceStatus,
    // A deprovision that failed after it began deleting the operator's resources leaves an
    // instance that is no longer usable, unless the status template says it is.
    ending: (report, instance) => ({
      succeeded: 'The instance is deprovisioned',
      failed: FAILED,
      extra: {
        instanceUsable: report.instanceUsable ?? (report.state !== 'succeeded' && instance === undefined),
        ...dashboardOf(report),
      },
    }),
  });
}
