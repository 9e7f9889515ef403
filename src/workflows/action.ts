/**
 * A custom action of a plan (its `x-<name>` template, a backup or a restart), run on an instance by
 * an admin. It runs under the instance's own workflow id, like the OSB operations, so no provision,
 * update or deprovision runs beside it and it never runs beside one. Its runbook: mark the action
 * on the record, render and apply the action's template on the instance's cluster, wait until the
 * `status` template's section of the action says it succeeded or failed, record how it ended.
 *
 * What it records goes to the record's `status.lastAction`, apart from the state of the last OSB
 * operation, which `last_operation` and the OSB rules read. An action that fails leaves the
 * instance as it is: nothing is undone (what it applied stays for the operator to act on or not).
 */
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import {
  startingStatus,
  type ActionRequest,
  type ActionRun,
  type InstanceRef,
  type OperationStatus,
  type Target,
} from './messages.js';
import { Operation, waitForOperator } from './operation.js';
import { OsbClusterId } from './search-attributes.js';

/** Custom action: POST /admin/instances/:instance_id/actions/:action */
export async function actionWorkflow(req: ActionRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus(req.action, req), req.deadlineSeconds, req.firstPollMs);
  const { startAction, applyTemplate, checkStatus, recordActionStatus } = op.steps;
  const runId = workflowInfo().runId;
  const run: ActionRun = { name: req.action, id: runId, parameters: req.parameters ?? {} };
  let instance: InstanceRef | undefined;
  const report = await op.run(async () => {
    const placed = await startAction(req, runId);
    instance = placed;
    if (placed.clusterId) upsertSearchAttributes([{ key: OsbClusterId, value: placed.clusterId }]);
    const target: Target = { instance: placed };
    op.update({ description: `Running ${req.action}` });
    await applyTemplate(target, req.action, run);
    return waitForOperator(op, () => checkStatus(target, req.action, run));
  });
  const recorded = instance;
  return op.end(report, {
    succeeded: `${req.action} succeeded`,
    failed: `${req.action} failed`,
    extra: { instanceUsable: true },
    record: recorded && ((status: OperationStatus) => recordActionStatus(recorded, status, runId)),
  });
}
