/**
 * The operations on a binding: record the request, render and apply the bind (or unbind)
 * template, wait until the status template says done. Credentials never pass through here: the
 * status check writes them into a Secret owned by the binding and returns only its name.
 */
import { isCancellation, upsertSearchAttributes } from '@temporalio/workflow';
import {
  startingStatus,
  type BindingRequest,
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
const { recordBindingStatus } = activities;

/** Renders the unbind template, deletes what only the binding owns, waits, then drops the records. */
async function removeBinding(op: Operation, target: Target): Promise<StatusReport> {
  const { applyTemplate, deleteResources, checkStatus, removeBindingRecord } = op.steps;
  op.update({ description: 'Removing the binding from the operator’s resources' });
  await applyTemplate(target, 'unbind');
  await deleteResources(target);
  const report = await waitForOperator(op, () => checkStatus(target, 'unbind'));
  if (report.state === 'succeeded' && target.binding) await removeBindingRecord(target.binding);
  return report;
}

/** OSB bind: PUT /v2/service_instances/:instance_id/service_bindings/:binding_id */
export async function bindWorkflow(req: BindingRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus('bind', req), req.deadlineSeconds);
  const { recordBinding, applyTemplate, checkStatus } = op.steps;
  let target: Target | undefined;
  let report: StatusReport;
  try {
    const binding = await recordBinding(req, 'bind');
    target = { instance: binding.instance, binding };
    if (binding.instance.clusterId)
      upsertSearchAttributes([{ key: OsbClusterId, value: binding.instance.clusterId }]);
    op.update({ description: 'Adding the binding to the operator’s resources' });
    await applyTemplate(target, 'bind');
    report = await waitForOperator(op, () => checkStatus(target!, 'bind'));
  } catch (err) {
    if (isCancellation(err)) {
      if (target) {
        const undo = target;
        await op.undo(() => removeBinding(op, undo));
      }
      throw err;
    }
    if (!isStepFailure(err)) throw err;
    report = { state: 'failed', description: failureDescription(err) };
  }
  const status = op.outcome(
    report.state,
    report.description ?? (report.state === 'succeeded' ? 'The binding is created' : 'The binding failed'),
    report.responseSecret ? { responseSecret: report.responseSecret } : {},
  );
  if (target?.binding) await recordBindingStatus(target.binding, status);
  return op.finish(status);
}

/** OSB unbind: DELETE /v2/service_instances/:instance_id/service_bindings/:binding_id */
export async function unbindWorkflow(req: BindingRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus('unbind', req), req.deadlineSeconds);
  let target: Target | undefined;
  let report: StatusReport;
  try {
    const binding = await op.steps.recordBinding(req, 'unbind');
    target = { instance: binding.instance, binding };
    report = await removeBinding(op, target);
  } catch (err) {
    if (isCancellation(err)) {
      const recorded = target?.binding;
      await recordCancelled(op, stoppedDeletion(op), recorded && ((s) => recordBindingStatus(recorded, s)));
      throw err;
    }
    if (!isStepFailure(err)) throw err;
    report = { state: 'failed', description: failureDescription(err) };
  }
  const status = op.outcome(
    report.state,
    report.description ?? (report.state === 'succeeded' ? 'The binding is deleted' : 'The unbind failed'),
  );
  if (report.state !== 'succeeded' && target?.binding) await recordBindingStatus(target.binding, status);
  return op.finish(status);
}
