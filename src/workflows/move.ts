/**
 * The move of an instance from the cluster it is on (its source) to another (its target), as its
 * plan says it moves (resources/migration.ts). It runs under the instance's own workflow id, like
 * the OSB operations and the custom actions, so none of them runs beside it. Its runbook:
 *
 * 1. Check that the instance and its plan can move; choose and book the target.
 * 2. Back the instance up on the source (the plan's backup action), when its plan has one.
 * 3. Provision it on the target with the generated Secrets it has (carried over), apply its
 *    bindings' bind templates there, and restore the backup there (the plan's restore action).
 * 4. Switch: the instance's record names the target from now on.
 * 5. Its bindings' credentials are read on the target and written to their responses.
 * 6. Take the instance off the source.
 *
 * A move that fails, or is cancelled, before the switch takes off the target what it made there
 * and leaves the source as it was: the instance never stopped answering there. After the switch
 * it only goes forward.
 *
 * An instance whose cluster is lost (`sourceLost`) is rebuilt instead: nothing is read from or
 * done on its cluster, the target restores its last backup (or is provisioned anew when its plan
 * restores nothing), its generated secrets get new values there, and what is left on the lost
 * cluster is removed when it answers again (the cluster health round).
 */
import { patched, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { CustomAction } from '../resources/actions.js';
import { MOVE_OPERATION } from '../resources/migration.js';
import { failureDescription, isStepFailure } from './local-then-queued.js';
import {
  startingStatus,
  type ActionRun,
  type BindingRef,
  type InstanceRef,
  type MoveRequest,
  type OperationStatus,
  type StatusReport,
  type Target,
} from './messages.js';
import { Operation, waitForOperator } from './operation.js';
import { OsbClusterId } from './search-attributes.js';

/** The instance on one cluster, for the steps that work there whatever its record names. */
const on = (instance: InstanceRef): Target => ({ instance, cluster: instance.clusterId! });

/** A binding of the instance, on the cluster `instance` names. */
const bindingOn = (instance: InstanceRef, binding: BindingRef): Target => ({
  instance,
  binding: { ...binding, instance },
  cluster: instance.clusterId!,
});

/** Runs steps until one fails; a step that fails for good becomes a failed report. */
async function attempt(work: () => Promise<StatusReport>): Promise<StatusReport> {
  try {
    return await work();
  } catch (err) {
    if (!isStepFailure(err)) throw err;
    return { state: 'failed', description: failureDescription(err) };
  }
}

/** Runs one of the plan's custom actions on one cluster and waits for the status template's word on it. */
async function runAction(op: Operation, where: Target, run: ActionRun): Promise<StatusReport> {
  op.update({ description: `Running ${run.name} on cluster ${where.cluster}` });
  await op.steps.applyTemplate(where, run.name, run);
  return waitForOperator(op, () => op.steps.checkStatus(where, run.name, run));
}

/** Marks the moves that carry generated Secrets through a drop box when a cluster has a worker of its own. */
const SECRETS_THROUGH_DROP_BOX = 'generated-secrets-through-drop-box';

/** Whether the generated Secrets go through a drop box: the landscape's workers do not reach both clusters. */
const throughDropBox = (source: InstanceRef, target: InstanceRef): boolean =>
  (source.taskQueue !== undefined || target.taskQueue !== undefined) && patched(SECRETS_THROUGH_DROP_BOX);

/**
 * Carries the instance's generated Secrets from the source to the target, so that the target's
 * objects are rendered with the same values: copied straight when the landscape's workers reach
 * both clusters; else (`dropBox`) handed over through a drop box on the master (the target's when
 * it has a worker of its own, else the source's), the Secrets' names alone in the history.
 */
async function carryGeneratedSecrets(
  op: Operation,
  source: InstanceRef,
  target: InstanceRef,
  dropBox: boolean,
): Promise<void> {
  if (!dropBox) {
    await op.steps.copyGeneratedSecrets(on(source), on(target));
    return;
  }
  const dropBoxOf = target.taskQueue !== undefined ? target.clusterId! : source.clusterId!;
  const handed = await op.steps.handOverGeneratedSecrets({ ...on(source), dropBoxOf });
  if (handed.length > 0) await op.steps.takeOverGeneratedSecrets(on(target), dropBoxOf, handed);
}

/** Takes the instance off one cluster and waits until nothing of it is left there. */
async function leave(
  op: Operation,
  instance: InstanceRef,
  bindings: readonly BindingRef[],
): Promise<StatusReport> {
  op.update({ description: `Removing the instance from cluster ${instance.clusterId}` });
  return waitForOperator(op, () => op.steps.leaveCluster(on(instance), bindings));
}

/** Admin: POST /admin/instances/:instance_id/move, and a cluster's drain. */
export async function moveWorkflow(req: MoveRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus(MOVE_OPERATION, req), req.deadlineSeconds, req.firstPollMs);
  const { startMove, placeMove, replicateInstance, applyTemplate, checkStatus } = op.steps;
  const { switchCluster, recordActionStatus, recordBackup, clearHandedOverSecrets } = op.steps;
  const lost = req.sourceLost === true;
  const runId = workflowInfo().runId;
  const reason = req.reason ?? 'moved by an admin';
  let instance: InstanceRef | undefined;
  let switched = false;
  const report = await op.run(async (compensations) => {
    const move = await startMove(req, runId);
    const source = move.instance;
    instance = source;
    upsertSearchAttributes([{ key: OsbClusterId, value: source.clusterId! }]);
    const placed = await placeMove(source, req.toClusterId);
    const { taskQueue: _sourceQueue, ...ids } = source;
    const target: InstanceRef = {
      ...ids,
      clusterId: placed.clusterId,
      ...(placed.taskQueue ? { taskQueue: placed.taskQueue } : {}),
    };
    const dropBox = !lost && throughDropBox(source, target);
    const undo = async () => {
      if (dropBox) await clearHandedOverSecrets(source, [source.clusterId!, target.clusterId!]);
      return leave(op, target, move.bindings);
    };
    // The backup the target restores: taken now on the source, or its last one when the source is lost.
    let restoring = move.lastBackup;
    compensations.push(() => (switched ? undefined : undo()));

    const prepared = await attempt(async () => {
      const { backup, restore } = move.migration;
      if (backup && !lost) {
        const backedUp = await runAction(op, on(source), { name: backup, id: runId, parameters: {} });
        if (backedUp.state !== 'succeeded') return backedUp;
        await recordBackup(source, backup, runId);
        restoring = { id: runId, clusterId: source.clusterId! };
      }
      op.update({ description: `Provisioning the instance on cluster ${target.clusterId}` });
      await replicateInstance(target, placed.clusterId);
      if (!lost) await carryGeneratedSecrets(op, source, target, dropBox);
      await applyTemplate(on(target), 'provision');
      const provisioned = await waitForOperator(op, () => checkStatus(on(target), 'provision'));
      if (provisioned.state !== 'succeeded') return provisioned;
      for (const binding of move.bindings) await applyTemplate(bindingOn(target, binding), 'bind');
      if (!restore || !restoring) return provisioned;
      const parameters = { backup: restoring.id, fromClusterId: restoring.clusterId };
      return runAction(op, on(target), { name: restore as CustomAction, id: runId, parameters });
    });
    if (prepared.state !== 'succeeded') {
      // Nothing switched yet: the source is as it was; what the target got is taken off it again.
      const undone = await op.undo(() => attempt(undo));
      const left =
        undone.state === 'succeeded'
          ? `the instance stays on cluster ${source.clusterId}`
          : `the instance stays on cluster ${source.clusterId}; taking it off cluster ${target.clusterId} failed: ${undone.description ?? 'no reason given'}`;
      return {
        state: 'failed',
        description: `The move to cluster ${target.clusterId} failed: ${prepared.description ?? 'no reason given'}; ${left}`,
      };
    }

    op.update({ description: `Switching the instance to cluster ${target.clusterId}` });
    instance = await switchCluster(source, placed, reason, !lost);
    switched = true;
    upsertSearchAttributes([{ key: OsbClusterId, value: placed.clusterId }]);
    for (const binding of move.bindings) {
      op.update({
        description: `Reading the credentials of binding ${binding.bindingId} on cluster ${target.clusterId}`,
      });
      const bound = await waitForOperator(op, () => checkStatus(bindingOn(instance!, binding), 'bind'));
      if (bound.state !== 'succeeded')
        return {
          state: 'failed',
          description: `The instance moved to cluster ${target.clusterId}, but binding ${binding.bindingId} did not follow: ${bound.description ?? 'no reason given'}`,
        };
    }
    const done = `Moved from cluster ${source.clusterId} to cluster ${target.clusterId}`;
    if (lost)
      return {
        state: 'succeeded',
        description: `${done}, rebuilt ${restoring ? `from backup ${restoring.id}` : 'anew'}; what is left on cluster ${source.clusterId} goes when it answers again`,
      };
    const left = await leave(op, source, move.bindings);
    if (left.state !== 'succeeded')
      return {
        state: 'failed',
        description: `The instance moved to cluster ${target.clusterId}, but removing it from cluster ${source.clusterId} failed: ${left.description ?? 'no reason given'}`,
      };
    return {
      state: 'succeeded',
      description: done,
    };
  });
  const recorded = instance;
  return op.end(report, {
    succeeded: 'The instance moved',
    failed: 'The move failed',
    extra: { instanceUsable: true },
    record: recorded && ((status: OperationStatus) => recordActionStatus(recorded, status, runId)),
  });
}
