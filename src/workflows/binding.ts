/**
 * The operations on a binding: record the request, render and apply the bind (or unbind)
 * template, wait until the status template says done. Credentials never pass through here: the
 * status check writes them into a Secret owned by the binding and returns only its name.
 */
import { isCancellation, patched, upsertSearchAttributes } from '@temporalio/workflow';
import {
  startingStatus,
  type BindingRef,
  type BindingRequest,
  type OperationStatus,
  type StatusReport,
} from './messages.js';
import { applyAndWaitForOperator, Operation, runDeletion, waitForOperator } from './operation.js';
import { OsbClusterId } from './search-attributes.js';

/** Marks the binds that apply with applyTemplateWatched and may wait before their first check. */
const BIND_WAITS_FOR_THE_OPERATOR = 'bind-waits-for-the-operator';

/** Marks the binds whose apply step itself waits for the operator's word (applyTemplateAwaited). */
const BIND_AWAITS_THE_OPERATOR_IN_ITS_STEP = 'bind-awaits-the-operator-in-its-step';

/** Writes a final status to the binding's record; undefined when the operation has no record. */
const recordOn = (op: Operation, binding: BindingRef | undefined) =>
  binding && ((status: OperationStatus) => op.steps.recordBindingStatus(binding, status));

/** Marks the unbinds that, once failed, take away the objects they applied of their own. */
const FAILED_UNBIND_STARTS_AFRESH = 'failed-unbind-starts-afresh';

/**
 * Renders the unbind template, deletes what only the binding owns, waits, then drops the records
 * and the versions of the instance's generated secrets that only this binding still used. An
 * unbind that failed takes away what it applied of its own, so that the next one starts afresh.
 */
async function removeBinding(op: Operation, binding: BindingRef): Promise<StatusReport> {
  const { applyTemplate, deleteResources, checkStatus, removeBindingRecord } = op.steps;
  const target = { instance: binding.instance, binding };
  op.update({ description: 'Removing the binding from the operator’s resources' });
  await applyTemplate(target, 'unbind');
  await deleteResources(target);
  const report = await waitForOperator(op, () => checkStatus(target, 'unbind'));
  if (report.state === 'succeeded') {
    await removeBindingRecord(binding);
    await op.steps.removeUnusedSecretVersions(binding.instance);
  } else if (report.state === 'failed' && patched(FAILED_UNBIND_STARTS_AFRESH)) {
    // Taking them away is for the next unbind's sake: when it cannot, the failure stands as it is.
    await deleteResources(target, { unbindObjects: true }).catch((err: unknown) => {
      if (isCancellation(err)) throw err;
    });
  }
  return report;
}

/** Ends an unbind that found no record: as the deprovision's (see instance.ts). */
async function finishRemoval(op: Operation, binding: BindingRef): Promise<StatusReport> {
  await op.steps.removeBindingRecord(binding);
  return { state: 'succeeded' };
}

/** OSB bind: PUT /v2/service_instances/:instance_id/service_bindings/:binding_id */
export async function bindWorkflow(req: BindingRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus('bind', req), req.deadlineSeconds, req.firstPollMs);
  const { recordBinding, applyTemplate, checkStatus } = op.steps;
  let binding: BindingRef | undefined;
  const report = await op.run(async (compensations) => {
    const recorded = await recordBinding(req, 'bind');
    binding = recorded;
    compensations.push(() => removeBinding(op, recorded));
    const { clusterId } = recorded.instance;
    if (clusterId) upsertSearchAttributes([{ key: OsbClusterId, value: clusterId }]);
    op.update({ description: 'Adding the binding to the operator’s resources' });
    const target = { instance: recorded.instance, binding: recorded };
    if (patched(BIND_AWAITS_THE_OPERATOR_IN_ITS_STEP)) {
      // A check before the operator observed what the bind applied cannot pass: the apply step
      // waits a while for the operator's word, when there is one to wait for, then the workflow.
      return applyAndWaitForOperator(
        op,
        (waitMs) => op.steps.applyTemplateAwaited(target, 'bind', waitMs),
        () => checkStatus(target, 'bind'),
      );
    }
    if (patched(BIND_WAITS_FOR_THE_OPERATOR)) {
      // A check before the operator observed what the bind applied cannot pass: the first one
      // waits for the operator's word when there is one to wait for.
      const changes = op.operatorChanges;
      const { operatorBehind } = await op.steps.applyTemplateWatched(target, 'bind');
      const start = operatorBehind ? { operatorBehindSince: changes } : {};
      return waitForOperator(op, () => checkStatus(target, 'bind'), start);
    }
    await applyTemplate(target, 'bind');
    return waitForOperator(op, () => checkStatus(target, 'bind'));
  });
  return op.end(report, {
    succeeded: 'The binding is created',
    failed: 'The binding failed',
    extra: report.responseSecret ? { responseSecret: report.responseSecret } : {},
    record: recordOn(op, binding),
  });
}

/** OSB unbind: DELETE /v2/service_instances/:instance_id/service_bindings/:binding_id */
export async function unbindWorkflow(req: BindingRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus('unbind', req), req.deadlineSeconds, req.firstPollMs);
  return runDeletion(op, {
    record: () => op.steps.recordBinding(req, 'unbind'),
    remove: (binding) => (binding.removed ? finishRemoval(op, binding) : removeBinding(op, binding)),
    writeStatus: op.steps.recordBindingStatus,
    ending: () => ({ succeeded: 'The binding is deleted', failed: 'The unbind failed' }),
  });
}
