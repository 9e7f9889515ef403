/**
 * The rotation of a generated secret of an instance (an SFSecret of its plan's provision template),
 * run by an admin or when the plan's `rotateAfter` says so. It runs under the instance's workflow
 * id, as the built-in action `x-rotate-secret`, so no OSB operation or custom action
 * runs beside it. Its runbook: mark the action on the record; make version N+1 of the secret, the
 * current one from now on; render and apply the instance's objects, which now name N+1; wait until
 * the status template says the operator took them up; remove the versions nothing uses any more
 * (version N stays while a binding made with it exists, and goes when the last such is unbound);
 * record how it ended.
 *
 * Only names and versions pass through here: the value is generated in the step that writes it.
 * A rotation that fails keeps version N (nothing is removed) and leaves N+1 current: the instance's
 * objects name it, and a rotation or update run again takes it from there.
 */
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import {
  startingStatus,
  type InstanceRef,
  type OperationStatus,
  type SecretRotationRequest,
  type Target,
} from './messages.js';
import { Operation, waitForOperator } from './operation.js';
import { OsbClusterId } from './search-attributes.js';

/** Rotation of a generated secret: POST /admin/instances/:instance_id/secrets/:name/rotate */
export async function secretRotationWorkflow(req: SecretRotationRequest): Promise<OperationStatus> {
  const op = new Operation(startingStatus(req.action, req), req.deadlineSeconds);
  const {
    startAction,
    rotateGeneratedSecret,
    applyTemplate,
    checkStatus,
    removeUnusedSecretVersions,
    recordActionStatus,
  } = op.steps;
  const runId = workflowInfo().runId;
  const { secret } = req.parameters;
  let instance: InstanceRef | undefined;
  const report = await op.run(async () => {
    const placed = await startAction(req, runId);
    instance = placed;
    if (placed.clusterId) upsertSearchAttributes([{ key: OsbClusterId, value: placed.clusterId }]);
    const target: Target = { instance: placed };
    op.update({ description: `Making a new version of ${secret}` });
    const made = await rotateGeneratedSecret(target, secret, runId);
    op.update({ description: `Applying the instance’s objects with ${made.secret}` });
    await applyTemplate(target, 'provision');
    const settled = await waitForOperator(op, () => checkStatus(target, 'update'));
    if (settled.state !== 'succeeded') return settled;
    const removed = await removeUnusedSecretVersions(placed);
    const kept = removed.length > 0 ? `; removed ${removed.join(', ')}` : '';
    return {
      state: 'succeeded',
      description: `${secret} is at version ${made.version} (Secret ${made.secret})${kept}`,
    };
  });
  const recorded = instance;
  return op.end(report, {
    succeeded: `${secret} is rotated`,
    failed: `The rotation of ${secret} failed`,
    extra: { instanceUsable: true },
    record: recorded && ((status: OperationStatus) => recordActionStatus(recorded, status, runId)),
  });
}
