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
 * The rotation schedule below starts rotations when a plan's `rotateAfter` says so.
 *
 * Only names and versions pass through here: the value is generated in the step that writes it.
 * A rotation that fails keeps version N (nothing is removed) and leaves N+1 current: the instance's
 * objects name it, and a rotation or update run again takes it from there.
 */
import {
  ParentClosePolicy,
  condition,
  continueAsNew,
  defineSignal,
  log,
  proxyActivities,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RotationScheduleActivities } from '../activities/index.js';
import {
  ROTATION_SCHEDULE_SETTINGS_SIGNAL,
  startingStatus,
  type InstanceRef,
  type OperationStatus,
  type RotationScheduleSettings,
  type ScheduledRotation,
  type SecretRotationRequest,
  type Target,
} from './messages.js';
import { Operation, waitForOperator } from './operation.js';
import { operationStartOptions } from './operation-start.js';
import { OsbClusterId } from './search-attributes.js';
import { movesToCurrentVersion } from './versioning.js';

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

/** New settings for the running rotation schedule. */
export const rotationScheduleSettingsSignal = defineSignal<[RotationScheduleSettings]>(
  ROTATION_SCHEDULE_SETTINGS_SIGNAL,
);

/** Checks in one run before it continues as new. */
const CHECKS_PER_RUN = 100;

const scheduleSteps = proxyActivities<RotationScheduleActivities>({
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1 s', backoffCoefficient: 2, maximumInterval: '10 s', maximumAttempts: 3 },
});

/**
 * Starts one rotation the schedule found due, under the instance's workflow id, as the admin API
 * starts one (memo and search attributes alike). An instance busy with another operation is left
 * for the next check; the rotation runs on whatever happens to this workflow.
 */
async function startRotation({ workflowId, request, claimedAt }: ScheduledRotation): Promise<void> {
  try {
    await startChild(secretRotationWorkflow, {
      workflowId,
      args: [request],
      parentClosePolicy: ParentClosePolicy.ABANDON,
      ...operationStartOptions(request.action, request),
    });
  } catch (err) {
    // Another operation runs on the instance: the next check finds the rotation due again.
    if ((err as Error).name !== 'WorkflowExecutionAlreadyStartedError')
      log.warn('starting a scheduled rotation failed', { workflowId, error: String(err) });
    if (claimedAt) await scheduleSteps.releaseRotationClaim(request.instanceId, claimedAt);
  }
}

/**
 * The rotation schedule: one per landscape (its id from the registry's namespace), started by the
 * worker when absent. Every `checkSeconds` it asks which generated secrets are older than their
 * plan's `rotateAfter` and starts their rotations. Level-based: a check that fails, or a rotation
 * that could not start, is simply found due again at the next check.
 */
export async function secretRotationScheduleWorkflow(settings: RotationScheduleSettings): Promise<void> {
  let current = settings;
  let changed = false;
  setHandler(rotationScheduleSettingsSignal, (next) => {
    current = next;
    changed = true;
  });
  for (let check = 0; check < CHECKS_PER_RUN && !workflowInfo().continueAsNewSuggested; check++) {
    try {
      for (const rotation of await scheduleSteps.dueSecretRotations()) await startRotation(rotation);
    } catch (err) {
      log.warn('looking for secrets due for rotation failed', { error: String(err) });
    }
    changed = false;
    await condition(() => changed, current.checkSeconds * 1000);
  }
  await continueAsNew<typeof secretRotationScheduleWorkflow>(current);
}

// Long-lived, continuing as new: it moves to the workers' current version (versioning.ts).
movesToCurrentVersion(secretRotationScheduleWorkflow);
